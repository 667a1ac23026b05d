// Snapshots and compaction: rotation while commits flow, old segments removed, and recovery from
// every state a crash during compaction can leave behind.
import { copyFile, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../../src/core/clock.js';
import { silentLogger } from '../../../../src/core/log.js';
import { openEmbeddedStore } from '../../../../src/state/embedded/embedded-store.js';
import type { EmbeddedStore } from '../../../../src/state/embedded/embedded-store.js';
import type { WriteOp } from '../../../../src/state/types.js';
import { segmentPath } from '../../../../src/state/state-files.js';
import { observe, tempDirs } from '../support.js';

const set = (key: string, value: unknown): WriteOp => ({ op: 'set', table: 'kv', key, value });
const del = (key: string): WriteOp => ({ op: 'delete', table: 'kv', key });
const dirs = tempDirs();
afterEach(dirs.cleanupDirs);

const KEYS = Array.from({ length: 40 }, (_, i) => `k${i}`);
const walFiles = async (dataDir: string): Promise<string[]> =>
  (await readdir(join(dataDir, 'state'))).filter((f) => f.startsWith('wal-')).sort();

/** A mix of sets, updates and deletes over KEYS, `n` commits long, issued in waves of 8. */
async function churn(store: EmbeddedStore, n: number, tag: string): Promise<void> {
  for (let i = 0; i < n; i += 8) {
    await Promise.all(
      Array.from({ length: Math.min(8, n - i) }, (_, j) => {
        const k = KEYS[(i + j) % KEYS.length] as string;
        return store.commit((i + j) % 5 === 4 ? [del(k)] : [set(k, `${tag}-${i + j}-${'x'.repeat(40)}`)]);
      }),
    );
  }
}

describe('snapshots and compaction', () => {
  it('rotates and snapshots as the WAL grows, deletes old segments, and recovers the same view', async () => {
    const dataDir = await dirs.make();
    const store = await openEmbeddedStore({ dataDir, log: silentLogger, snapshotEveryBytes: 4096 });
    await churn(store, 400, 'a');
    await store.compact(); // also waits for any snapshot still running
    expect(store.stats.compactions).toBeGreaterThan(1);
    expect((await walFiles(dataDir)).length).toBe(1);
    const before = observe(store, KEYS);
    await store.close();

    const reopened = await openEmbeddedStore({ dataDir, log: silentLogger, snapshotEveryBytes: 4096 });
    expect(observe(reopened, KEYS)).toEqual(before);
    expect(reopened.stats.recovery.snapshotIndex).toBe(reopened.index);
    expect(reopened.stats.recovery.replayedRecords).toBe(0);
    await reopened.close();
  });

  it('keeps accepting commits while a snapshot is written, and loses none of them', async () => {
    const dataDir = await dirs.make();
    const store = await openEmbeddedStore({ dataDir, log: silentLogger });
    await churn(store, 100, 'a');
    const compacting = store.compact();
    const during = Array.from({ length: 50 }, (_, i) => store.commit([set(`during${i}`, i)]));
    await compacting;
    const acked = await Promise.all(during);
    expect(acked.every((r) => r.ok)).toBe(true);
    const before = observe(store, KEYS);
    const duringRows = store.list('kv', 'during');
    await store.close();

    const reopened = await openEmbeddedStore({ dataDir, log: silentLogger });
    expect(observe(reopened, KEYS)).toEqual(before);
    expect(reopened.list('kv', 'during')).toEqual(duringRows);
    expect(reopened.stats.recovery.snapshotIndex).toBeGreaterThanOrEqual(100);
    expect(reopened.stats.recovery.replayedRecords).toBe(reopened.index - reopened.stats.recovery.snapshotIndex);
    await reopened.close();
  });

  it('recovers when killed after the snapshot rename but before old segments were deleted', async () => {
    const dataDir = await dirs.make();
    const stateDir = join(dataDir, 'state');
    const store = await openEmbeddedStore({ dataDir, log: silentLogger });
    await churn(store, 60, 'a');
    const oldSegments = await walFiles(dataDir);
    const saved = await dirs.make();
    for (const f of oldSegments) await copyFile(join(stateDir, f), join(saved, f));
    await store.compact();
    await churn(store, 30, 'b');
    const before = observe(store, KEYS);
    await store.close();
    // Put the pre-compaction segments back, as if the unlink had never happened.
    for (const f of oldSegments) await copyFile(join(saved, f), join(stateDir, f));

    const reopened = await openEmbeddedStore({ dataDir, log: silentLogger });
    expect(observe(reopened, KEYS)).toEqual(before);
    expect(reopened.stats.recovery.snapshotIndex).toBe(60);
    expect(reopened.stats.recovery.replayedRecords).toBe(30);
    expect(await walFiles(dataDir)).not.toContain(oldSegments[0]);
    await reopened.close();
  });

  it('replays only the records after the snapshot from a segment that straddles it', async () => {
    // Two stores fed the same commits (same fake time): A never compacts, B snapshots at 40.
    const [dirA, dirB] = [await dirs.make(), await dirs.make()];
    const a = await openEmbeddedStore({ dataDir: dirA, log: silentLogger, clock: new FakeClock(5) });
    const b = await openEmbeddedStore({ dataDir: dirB, log: silentLogger, clock: new FakeClock(5) });
    await churn(a, 40, 'a');
    await churn(b, 40, 'a');
    await b.compact();
    await b.close();
    await churn(a, 20, 'b');
    const before = observe(a, KEYS);
    await a.close();
    // A's one segment holds 1..60; with B's snapshot (40) beside it, 41..60 must be replayed once.
    await copyFile(join(dirB, 'state', 'snapshot.bin'), join(dirA, 'state', 'snapshot.bin'));

    const reopened = await openEmbeddedStore({ dataDir: dirA, log: silentLogger, clock: new FakeClock(5) });
    expect(observe(reopened, KEYS)).toEqual(before);
    expect(reopened.stats.recovery).toEqual({ snapshotIndex: 40, replayedRecords: 20, truncatedBytes: 0 });
    await reopened.close();
  });

  it('recovers when killed after rotation but before the snapshot was renamed', async () => {
    const dataDir = await dirs.make();
    const stateDir = join(dataDir, 'state');
    const store = await openEmbeddedStore({ dataDir, log: silentLogger });
    await churn(store, 60, 'a');
    const before = observe(store, KEYS);
    await store.close();
    // What the crash leaves: a fresh empty segment and a half-written temp snapshot.
    await writeFile(segmentPath(stateDir, 61), Buffer.alloc(0));
    await writeFile(join(stateDir, 'snapshot.tmp'), Buffer.from('half a snapshot'));

    const reopened = await openEmbeddedStore({ dataDir, log: silentLogger });
    expect(observe(reopened, KEYS)).toEqual(before);
    expect(reopened.stats.recovery).toEqual({ snapshotIndex: 0, replayedRecords: 60, truncatedBytes: 0 });
    expect((await readdir(stateDir)).includes('snapshot.tmp')).toBe(false);
    // New writes land in the empty segment and survive the next restart.
    await reopened.commit([set('after', 1)]);
    await reopened.close();
    expect((await stat(segmentPath(stateDir, 61))).size).toBeGreaterThan(0);
    const third = await openEmbeddedStore({ dataDir, log: silentLogger });
    expect(third.get('kv', 'after')?.modifyIndex).toBe(61);
    await third.close();
  });

  it('reaps old tombstones at compaction and keeps the floor across a restart', async () => {
    const dataDir = await dirs.make();
    const clock = new FakeClock(1_700_000_000_000);
    const ttl = 15 * 60_000;
    const store = await openEmbeddedStore({ dataDir, log: silentLogger, clock, tombstoneTtlMs: ttl });
    await store.commit([set('gone', 1), set('young', 1)]);
    const goneAt = (await store.commit([del('gone')])).index;
    clock.advance(ttl);
    const youngAt = (await store.commit([del('young')])).index;
    expect(store.keyIndex('kv', 'never')).toBe(0);
    await store.compact();
    // 'gone' was reaped: absent keys now report the floor; 'young' keeps its exact tombstone.
    expect(store.keyIndex('kv', 'never')).toBe(goneAt);
    expect(store.keyIndex('kv', 'gone')).toBe(goneAt);
    expect(store.keyIndex('kv', 'young')).toBe(youngAt);
    await store.close();

    const reopened = await openEmbeddedStore({ dataDir, log: silentLogger, clock, tombstoneTtlMs: ttl });
    expect(reopened.keyIndex('kv', 'never')).toBe(goneAt);
    expect(reopened.keyIndex('kv', 'young')).toBe(youngAt);
    expect(reopened.prefixIndex('kv', 'g')).toBe(goneAt);
    await reopened.close();
  });

  it('replays tombstones with their commit time, so reaping after a restart matches', async () => {
    const dataDir = await dirs.make();
    const clock = new FakeClock(0);
    const ttl = 60_000;
    const store = await openEmbeddedStore({ dataDir, log: silentLogger, clock, tombstoneTtlMs: ttl });
    await store.commit([set('a', 1)]);
    const deletedAt = (await store.commit([del('a')])).index;
    await store.close();
    // Reopened much later: the tombstone's age counts from its commit, not from the replay.
    clock.advance(ttl);
    const reopened = await openEmbeddedStore({ dataDir, log: silentLogger, clock, tombstoneTtlMs: ttl });
    await reopened.compact();
    expect(reopened.keyIndex('kv', 'never')).toBe(deletedAt);
    await reopened.close();
  });
});
