// Acknowledged writes that are gone (a deleted segment, a segment cut far before its end) refuse
// the start with the files and indexes lost; -accept-state-loss starts from what is left.
import { readdir, stat, truncate, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../../src/core/log.js';
import { openEmbeddedStore } from '../../../../src/state/embedded/embedded-store.js';
import type { EmbeddedStore } from '../../../../src/state/embedded/embedded-store.js';
import { segmentPath } from '../../../../src/state/state-files.js';
import { recordingLogger, tempDirs } from '../support.js';

const dirs = tempDirs();
afterEach(dirs.cleanupDirs);

const value = (i: number): string => `value-${i}-${'x'.repeat(200)}`;

async function commitRange(store: EmbeddedStore, from: number, to: number): Promise<void> {
  for (let i = from; i <= to; i++) await store.commit([{ op: 'set', table: 'kv', key: `k${i}`, value: value(i) }]);
}

async function openError(dataDir: string): Promise<Error & { code?: string }> {
  return openEmbeddedStore({ dataDir, log: silentLogger }).then(
    async (store) => {
      await store.close();
      throw new Error(`opened at index ${store.index}`);
    },
    (err: Error & { code?: string }) => err,
  );
}

/** 40 commits, a snapshot at 40, then 20 more in the segment that continues it. */
async function snapshotThenMore(): Promise<{ dataDir: string; next: string }> {
  const dataDir = await dirs.make();
  const store = await openEmbeddedStore({ dataDir, log: silentLogger });
  await commitRange(store, 1, 40);
  await store.compact();
  await commitRange(store, 41, 60);
  await store.close();
  return { dataDir, next: segmentPath(join(dataDir, 'state'), 41) };
}

describe('a segment deleted after a snapshot', () => {
  it('refuses to start, naming the snapshot, the missing segment and the indexes lost', async () => {
    const { dataDir, next } = await snapshotThenMore();
    await unlink(next);
    const err = await openError(dataDir);
    expect(err.code).toBe('STATE_LOSS_DETECTED');
    expect(err.message).toContain('snapshot.bin ends at index 40');
    expect(err.message).toContain('wal-00000000000000000041.log, is missing');
    expect(err.message).toContain('indexes 41-60 are lost');
    expect(err.message).toContain('-accept-state-loss');
    // Refusing changed nothing: the snapshot is still there for a restore.
    expect(await readdir(join(dataDir, 'state'))).toContain('snapshot.bin');
  });

  it('is noticed even with no durable mark (a directory from an older version)', async () => {
    const { dataDir, next } = await snapshotThenMore();
    await unlink(next);
    await unlink(join(dataDir, 'state', 'durable-index'));
    expect((await openError(dataDir)).code).toBe('STATE_LOSS_DETECTED');
  });

  it('starts from the snapshot with acceptLoss, warns with the loss, and the next start is clean', async () => {
    const { dataDir, next } = await snapshotThenMore();
    await unlink(next);
    const log = recordingLogger();
    const store = await openEmbeddedStore({ dataDir, log, acceptLoss: true });
    expect(store.index).toBe(40);
    expect(store.get('kv', 'k40')?.value).toBe(value(40));
    expect(store.get('kv', 'k41')).toBeUndefined();
    const warning = log.entries.find((e) => e.level === 'warn' && e.msg?.includes('accepting lost state'));
    expect(warning?.msg).toContain('indexes 41-60 are lost');
    expect((await store.commit([{ op: 'set', table: 'kv', key: 'after', value: 1 }])).index).toBe(41);
    await store.close();

    const again = await openEmbeddedStore({ dataDir, log: silentLogger });
    expect(again.index).toBe(41);
    expect(again.get('kv', 'after')?.value).toBe(1);
    await again.close();
  });
});

describe('a segment cut before its last acknowledged record', () => {
  async function written(n: number): Promise<{ dataDir: string; wal: string }> {
    const dataDir = await dirs.make();
    const store = await openEmbeddedStore({ dataDir, log: silentLogger });
    await commitRange(store, 1, n);
    await store.close();
    return { dataDir, wal: segmentPath(join(dataDir, 'state'), 1) };
  }

  it('refuses a segment truncated to half, which would otherwise pass for a torn tail', async () => {
    const { dataDir, wal } = await written(100);
    const size = (await stat(wal)).size;
    await truncate(wal, Math.floor(size / 2) + 7);
    const err = await openError(dataDir);
    expect(err.code).toBe('STATE_LOSS_DETECTED');
    expect(err.message).toMatch(
      /wal-0+1\.log ends with a damaged record at byte \d+ at index (\d+), but durable-index records index 100 as acknowledged: indexes \d+-100 are lost/,
    );
    // Nothing was cut while refusing.
    expect((await stat(wal)).size).toBe(Math.floor(size / 2) + 7);
  });

  it('refuses a cut that falls exactly between two records', async () => {
    const dataDir = await dirs.make();
    const store = await openEmbeddedStore({ dataDir, log: silentLogger });
    await commitRange(store, 1, 30);
    const wal = segmentPath(join(dataDir, 'state'), 1);
    const at30 = (await stat(wal)).size;
    await commitRange(store, 31, 60);
    await store.close();
    await truncate(wal, at30);
    expect((await openError(dataDir)).message).toContain(
      'ends at index 30, but durable-index records index 60 as acknowledged: indexes 31-60 are lost',
    );
  });

  it('starts from what is left with acceptLoss, cutting the torn record', async () => {
    const { dataDir, wal } = await written(100);
    await truncate(wal, Math.floor((await stat(wal)).size / 2) + 7);
    const store = await openEmbeddedStore({ dataDir, log: silentLogger, acceptLoss: true });
    const left = store.index;
    expect(left).toBeGreaterThan(10);
    expect(left).toBeLessThan(100);
    expect(store.stats.recovery.truncatedBytes).toBeGreaterThan(0);
    expect((await store.commit([{ op: 'set', table: 'kv', key: 'after', value: 1 }])).index).toBe(left + 1);
    await store.close();
    const again = await openEmbeddedStore({ dataDir, log: silentLogger });
    expect(again.index).toBe(left + 1);
    await again.close();
  });

  it('marks durable writes while the store runs, not only at close', async () => {
    const dataDir = await dirs.make();
    const store = await openEmbeddedStore({ dataDir, log: silentLogger });
    await commitRange(store, 1, 25);
    while (store.stats.durableMark !== 25) await new Promise((resolve) => setTimeout(resolve, 20));
    await store.close();
  });

  it('checks nothing, with a warning, when the mark itself is damaged', async () => {
    const { dataDir, wal } = await written(20);
    await writeFile(join(dataDir, 'state', 'durable-index'), Buffer.from('garbage!garbage!'));
    await truncate(wal, (await stat(wal)).size - 5);
    const log = recordingLogger();
    const store = await openEmbeddedStore({ dataDir, log });
    expect(store.index).toBe(19);
    expect(log.entries.some((e) => e.level === 'warn' && e.msg?.includes('durable mark is damaged'))).toBe(true);
    await store.close();
  });
});
