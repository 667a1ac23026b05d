import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../../src/core/log.js';
import { openEmbeddedStore } from '../../../../src/state/embedded/embedded-store.js';
import type { WriteOp } from '../../../../src/state/types.js';
import { observe, tempDirs } from '../support.js';

const set = (key: string, value: unknown, table = 'kv'): WriteOp => ({ op: 'set', table, key, value });
const del = (key: string): WriteOp => ({ op: 'delete', table: 'kv', key });
const dirs = tempDirs();
afterEach(dirs.cleanupDirs);

describe('persistence', () => {
  it('reopens with the same rows, indexes and tombstones, and continues the index', async () => {
    const dataDir = await dirs.make();
    const a = await openEmbeddedStore({ dataDir, log: silentLogger });
    await a.commit([set('a1', 'aGVsbG8='), set('b/1', { n: 1 }), set('x', [1, 2], 'other')]);
    await a.commit([set('a2', 2), set('b/2', null)]);
    await a.commit([del('a1'), { op: 'delete-prefix', table: 'kv', prefix: 'b/' }]);
    await a.commit([set('a2', 3, 'kv'), { op: 'set', table: 'kv', key: 'a3', value: 1, ifIndex: 99 }]);
    const before = observe(a, ['a1', 'a2', 'b/1', 'b/2', 'never']);
    await a.close();

    const b = await openEmbeddedStore({ dataDir, log: silentLogger });
    expect(observe(b, ['a1', 'a2', 'b/1', 'b/2', 'never'])).toEqual(before);
    expect(b.stats.recovery).toEqual({ snapshotIndex: 0, replayedRecords: 4, truncatedBytes: 0 });
    expect((await b.commit([set('c', 1)])).index).toBe(5);
    await b.close();
  });

  it('opens an empty directory at index 0 and gives the first write index 1', async () => {
    const store = await openEmbeddedStore({ dataDir: await dirs.make(), log: silentLogger });
    expect(store.index).toBe(0);
    expect((await store.commit([set('a', 1)])).index).toBe(1);
    await store.close();
  });

  it('keeps guard failures in the index sequence across a restart', async () => {
    const dataDir = await dirs.make();
    const a = await openEmbeddedStore({ dataDir, log: silentLogger });
    await a.commit([set('a', 1)]);
    expect((await a.commit([{ op: 'set', table: 'kv', key: 'a', value: 2, ifIndex: 0 }])).ok).toBe(false);
    await a.close();
    const b = await openEmbeddedStore({ dataDir, log: silentLogger });
    expect(b.index).toBe(2);
    expect(b.get('kv', 'a')?.value).toBe(1);
    await b.close();
  });
});
