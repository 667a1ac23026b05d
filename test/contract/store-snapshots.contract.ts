// The snapshot side of the StateStore contract (StoreSnapshots: exportImage, replaceWith), run by
// state-store.contract.ts on every store it runs, and by etcd-store.test.ts on a store that reads
// KV through and restores in steps (a tiny --max-txn-ops). docs/decisions.md#snapshots.
import { describe, expect, it } from 'vitest';
import type { StateStore, StoreImage, StoreSnapshots, WriteOp } from '../../src/state/types.js';

type SnapshotStore = StateStore & StoreSnapshots;

const set = (table: string, key: string, value: unknown): WriteOp => ({ op: 'set', table, key, value });
const del = (table: string, key: string): WriteOp => ({ op: 'delete', table, key });

/** Commits the ops a few at a time: a store with a tiny --max-txn-ops takes no more in one. */
async function commitInSmallSteps(store: StateStore, ops: readonly WriteOp[]): Promise<void> {
  for (let i = 0; i < ops.length; i += 3) await store.commit(ops.slice(i, i + 3));
}

/** Every row of a table as [key, value], through `read` (a view table or one read through alike). */
async function rowsOf(store: StateStore, table: string): Promise<[string, unknown][]> {
  const read = await store.read({ table, prefix: '' }, 'consistent');
  return read.rows.map((r) => [r.key, r.value]);
}

function imageRowsOf(image: StoreImage, table: string): [string, unknown][] {
  return image.rows.filter((r) => r.table === table).map((r) => [r.key, r.value]);
}

/** Resolves once `fn` is called (a parked blocking read's wake-up). */
function parked(store: StateStore, table: string, key: string, revision: number): Promise<void> {
  return new Promise((resolve) => store.changedAfter({ table, key }, revision, () => resolve()));
}

/**
 * `getStore` answers the store of the running test; `tables`: the two tables written (the first may
 * be one the store reads through).
 */
export function describeStoreSnapshotsContract(
  getStore: () => SnapshotStore,
  tables: readonly [string, string] = ['kv', 'other'],
  rowCount = 12,
): void {
  const [A, B] = tables;
  describe('snapshots (StoreSnapshots)', () => {
    it('exports every row of every table at the index it was taken at, sorted by table and key', async () => {
      const store = getStore();
      const ops: WriteOp[] = [];
      for (let i = rowCount - 1; i >= 0; i--) ops.push(set(A, `k${String(i).padStart(3, '0')}`, { n: i }));
      await commitInSmallSteps(store, ops);
      await store.commit([set(B, 'b', 'x'), set(B, 'a', [1, 2])]);
      const image = await store.exportImage();
      expect(image.index).toBe(store.index);
      expect(image.privateEntries).toEqual([]);
      expect(imageRowsOf(image, A)).toEqual(await rowsOf(store, A));
      expect(imageRowsOf(image, B)).toEqual([
        ['a', [1, 2]],
        ['b', 'x'],
      ]);
      const order = image.rows.map((r) => `${r.table}\u0000${r.key}`);
      expect(order).toEqual([...order].sort());
      expect(['embedded', 'etcd']).toContain(store.backend);
    });

    it('replaces every table with the image: rows set after it go, rows deleted after it come back', async () => {
      const store = getStore();
      const ops: WriteOp[] = [];
      for (let i = 0; i < rowCount; i++) ops.push(set(A, `k${i}`, i));
      await commitInSmallSteps(store, ops);
      await store.commit([set(B, 'keep', 1), set(B, 'gone', 2)]);
      const image = await store.exportImage();

      await store.commit([set(A, 'k0', 'changed'), del(A, 'k1'), set(A, 'new', true)]);
      await store.commit([del(B, 'gone'), set(B, 'later', 3), set('third', 'x', 1)]);
      const before = store.index;

      const index = await store.replaceWith({ rows: image.rows, privateEntries: image.privateEntries });
      expect(index).toBeGreaterThan(before);
      expect(store.index).toBeGreaterThanOrEqual(index);
      expect(await rowsOf(store, A)).toEqual(imageRowsOf(image, A));
      expect(await rowsOf(store, B)).toEqual(imageRowsOf(image, B));
      // A table the image does not hold is emptied.
      expect(await rowsOf(store, 'third')).toEqual([]);
    });

    it('moves every index forward, so a blocking read parked before the restore wakes', async () => {
      const store = getStore();
      await store.commit([set(A, 'a', 1), set(B, 'b', 1)]);
      const image = await store.exportImage();
      await store.commit([set(A, 'a', 2)]);
      await store.commit([set(B, 'b', 2)]);
      const now = store.index;
      // Parked at the current index: the restored value is older, its index must not be.
      const wokeA = parked(store, A, 'a', now);
      const wokeB = parked(store, B, 'b', now);
      const index = await store.replaceWith({ rows: image.rows, privateEntries: [] });
      await Promise.all([wokeA, wokeB]);
      const readA = await store.read({ table: A, key: 'a' }, 'consistent');
      expect(readA.rows[0]?.value).toBe(1);
      expect(readA.index).toBeGreaterThan(now);
      expect(readA.index).toBeLessThanOrEqual(index);
      expect(store.keyIndex(B, 'b')).toBeGreaterThan(now);
      expect(store.get(B, 'b')?.modifyIndex).toBeGreaterThan(now);
    });

    it('restores an empty image as every table emptied', async () => {
      const store = getStore();
      await store.commit([set(A, 'a', 1), set(B, 'b', 1)]);
      const before = store.index;
      const index = await store.replaceWith({ rows: [], privateEntries: [] });
      expect(index).toBeGreaterThan(before);
      expect(await rowsOf(store, A)).toEqual([]);
      expect(await rowsOf(store, B)).toEqual([]);
    });

    it('leaves the state as it was when the image holds an op the store refuses', async () => {
      const store = getStore();
      await store.commit([set(A, 'a', 1)]);
      const err = await store.replaceWith({ rows: [{ table: '', key: 'k', value: 1 }], privateEntries: [] }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(Error);
      expect(await rowsOf(store, A)).toEqual([['a', 1]]);
    });
  });
}
