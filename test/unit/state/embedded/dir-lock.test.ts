import { spawnSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../../src/core/log.js';
import { openEmbeddedStore } from '../../../../src/state/embedded/embedded-store.js';
import { tempDirs } from '../support.js';

const dirs = tempDirs();
afterEach(dirs.cleanupDirs);

describe('state directory lock', () => {
  it('refuses a second store on the same directory until the first closes', async () => {
    const dataDir = await dirs.make();
    const first = await openEmbeddedStore({ dataDir, log: silentLogger });
    await expect(openEmbeddedStore({ dataDir, log: silentLogger })).rejects.toMatchObject({
      code: 'STATE_DIR_LOCKED',
      kind: 'unavailable',
    });
    await first.commit([{ op: 'set', table: 'kv', key: 'a', value: 1 }]);
    await first.close();
    const second = await openEmbeddedStore({ dataDir, log: silentLogger });
    expect(second.get('kv', 'a')?.value).toBe(1);
    await second.close();
  });

  it('takes over a lock left by a process that no longer runs', async () => {
    const dataDir = await dirs.make();
    await mkdir(join(dataDir, 'state'));
    const child = spawnSync(process.execPath, ['-e', '']);
    expect(child.status).toBe(0);
    await writeFile(join(dataDir, 'state', 'LOCK'), `${child.pid}\n`);
    const store = await openEmbeddedStore({ dataDir, log: silentLogger });
    await store.close();
  });

  it('takes over a lock file without a pid', async () => {
    const dataDir = await dirs.make();
    await mkdir(join(dataDir, 'state'));
    await writeFile(join(dataDir, 'state', 'LOCK'), '');
    const store = await openEmbeddedStore({ dataDir, log: silentLogger });
    await store.close();
  });

  it('releases the lock when opening fails', async () => {
    const dataDir = await dirs.make();
    await mkdir(join(dataDir, 'state'));
    await writeFile(join(dataDir, 'state', 'snapshot.bin'), 'not a snapshot');
    await expect(openEmbeddedStore({ dataDir, log: silentLogger })).rejects.toMatchObject({
      code: 'STATE_SNAPSHOT_CORRUPT',
    });
    await writeFile(join(dataDir, 'state', 'snapshot.bin'), '');
    // Still corrupt (empty), but the error is the snapshot's, not a lock left behind.
    await expect(openEmbeddedStore({ dataDir, log: silentLogger })).rejects.toMatchObject({
      code: 'STATE_SNAPSHOT_CORRUPT',
    });
  });
});
