// The leaf cache kept on disk: written once per interval after leaves change (and on close) with
// mode 0600, read back leaf for leaf (bigint serial included) with expired leaves left out, a
// damaged file read as none; and a manager given the leaves it held answers them without signing,
// and past their renewal time while no new leaf can be signed (an outage), until they expire.
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LEAF_CACHE_FILE, LeafCacheFile } from '../../../../src/connect/ca/leaf-cache-file.js';
import { LeafManager, type CachedLeaf } from '../../../../src/connect/ca/leaf-manager.js';
import { agentError } from '../../../../src/core/errors.js';
import { silentLogger } from '../../../../src/core/log.js';
import { HOUR, caFixture, seededRandom, settle } from './support.js';

let dataDir: string;
beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'svc-leaf-cache-'));
});
afterEach(() => rm(dataDir, { recursive: true, force: true }));

describe('LeafCacheFile', () => {
  it('keeps the leaves held in a 0600 file, written once per interval, and loads the valid ones back', async () => {
    const f = await caFixture();
    f.roots.get();
    const file = new LeafCacheFile(dataDir, f.clock, silentLogger, 1_000);
    const leaves: LeafManager = new LeafManager({
      source: f.manager,
      roots: f.roots,
      clock: f.clock,
      random: seededRandom(),
      log: silentLogger,
      maxEntries: 100,
      idleTtlMs: 72 * HOUR,
      rootChangeSpreadMs: 0,
      leafIssued: () => file.saveSoon(() => leaves.held()),
    });
    const web = (await leaves.get('default', 'web')).leaf;
    const db = (await leaves.get('default', 'db')).leaf;
    await settle();
    const path = join(dataDir, LEAF_CACHE_FILE);
    await expect(stat(path)).rejects.toMatchObject({ code: 'ENOENT' }); // not before the interval
    f.clock.advance(1_000);
    await file.close(leaves.held());
    expect((await stat(path)).mode & 0o777).toBe(0o600);

    const loaded = await new LeafCacheFile(dataDir, f.clock, silentLogger).load();
    expect(loaded.sort((a, b) => a.service.localeCompare(b.service))).toEqual([db, web]);
    // Past every leaf's validBefore: none is kept.
    f.clock.advance(Math.max(web.validBefore, db.validBefore) - f.clock.now() + 1);
    expect(await new LeafCacheFile(dataDir, f.clock, silentLogger).load()).toEqual([]);
  });

  it('reads a damaged file as no leaves', async () => {
    const f = await caFixture();
    await writeFile(join(dataDir, LEAF_CACHE_FILE), '{"version":1,"leaves":[{"serial":');
    expect(await new LeafCacheFile(dataDir, f.clock, silentLogger).load()).toEqual([]);
    await writeFile(join(dataDir, LEAF_CACHE_FILE), JSON.stringify({ version: 1, leaves: [null, { serial: 'x' }] }));
    expect(await new LeafCacheFile(dataDir, f.clock, silentLogger).load()).toEqual([]);
  });

  it('a manager given the leaves it held answers them from its cache, with no signing', async () => {
    const f = await caFixture();
    f.roots.get();
    const options = {
      roots: f.roots,
      clock: f.clock,
      random: seededRandom(),
      log: silentLogger,
      maxEntries: 100,
      idleTtlMs: 72 * HOUR,
      rootChangeSpreadMs: 0,
    };
    const before = new LeafManager({ ...options, source: f.manager });
    const held: CachedLeaf = (await before.get('default', 'web')).leaf;
    const after = new LeafManager({
      ...options,
      source: { signLeaf: () => Promise.reject(agentError('STATE_NO_LEADER')) },
    });
    after.restore(before.held());
    expect(after.get('default', 'web')).toEqual({ leaf: held, hit: true });

    // Past its renewal time, not expired: answered while no new one can be signed; expired: not.
    f.clock.advance(held.renewAt - f.clock.now());
    expect(await after.get('default', 'web')).toEqual({ leaf: held, hit: true });
    f.clock.advance(held.validBefore - f.clock.now());
    await expect(after.get('default', 'web')).rejects.toMatchObject({ code: 'STATE_NO_LEADER' });
  });

  it('a leaf past its renewal time is not answered when signing is refused (not an outage)', async () => {
    const f = await caFixture();
    f.roots.get();
    const options = {
      roots: f.roots,
      clock: f.clock,
      random: seededRandom(),
      log: silentLogger,
      maxEntries: 100,
      idleTtlMs: 72 * HOUR,
      rootChangeSpreadMs: 0,
    };
    const held: CachedLeaf = (await new LeafManager({ ...options, source: f.manager }).get('default', 'web')).leaf;
    const refusing = new LeafManager({
      ...options,
      source: {
        signLeaf: () => Promise.reject(agentError('ACL_PERMISSION_DENIED', { reason: 'service:write on web' })),
      },
    });
    refusing.restore([held]);
    f.clock.advance(held.renewAt - f.clock.now());
    await expect(refusing.get('default', 'web')).rejects.toMatchObject({ code: 'ACL_PERMISSION_DENIED' });
  });
});
