// The store's one read path (`read`, `changedAfter`): what a handler may rely on whichever way the
// backend serves the table, from its local view (the embedded store, the etcd store's view) or
// read through from etcd (the cluster's KV: docs/decisions.md D15). Every backend runs this suite
// for each way it can serve a table; the catalog's tables and the KV read through it alike.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isAgentError } from '../../src/core/errors.js';
import type { RangeTarget, StateStore, WriteOp } from '../../src/state/types.js';
import type { OpenedStore } from './state-store.contract.js';

const set = (table: string, key: string, value: unknown): WriteOp => ({ op: 'set', table, key, value });
const del = (table: string, key: string): WriteOp => ({ op: 'delete', table, key });

/** `table`: the table the suite reads, served the way the opened store serves it. */
export function describeReadPathContract(name: string, open: () => Promise<OpenedStore>, table: string): void {
  describe(`read path contract: ${name}`, () => {
    let opened: OpenedStore;
    let store: StateStore;
    const T = table;

    beforeEach(async () => {
      opened = await open();
      store = opened.store;
    });
    afterEach(async () => {
      await opened.cleanup();
    });

    /** Records changedAfter's calls; `next` resolves on the first. */
    type Told = { calls: () => number; next: Promise<void>; cancel: () => void };
    function changed(target: RangeTarget, revision: number): Told {
      let calls = 0;
      let resolve!: () => void;
      const next = new Promise<void>((r) => (resolve = r));
      const cancel = store.changedAfter(target, revision, () => {
        calls++;
        resolve();
      });
      return { calls: () => calls, next, cancel };
    }

    it('reads a key with its create and modify index, and reports its ModifyIndex', async () => {
      const first = await store.commit([set(T, 'a', { n: 1 })]);
      const second = await store.commit([set(T, 'a', { n: 2 }), set(T, 'b', 1)]);
      const read = await store.read<{ n: number }>({ table: T, key: 'a' }, 'default');
      expect(read.rows).toEqual([{ key: 'a', value: { n: 2 }, createIndex: first.index, modifyIndex: second.index }]);
      expect(read.index).toBe(second.index);
      expect(read.revision).toBeGreaterThanOrEqual(second.index);
    });

    it('reads a prefix in key order, and reports an index at or past its every change, deletes included', async () => {
      await store.commit([set(T, 'p/b', 2), set(T, 'p/a', 1), set(T, 'q', 3), set(T, 'p', 0)]);
      const deleted = await store.commit([del(T, 'p/b')]);
      const read = await store.read({ table: T, prefix: 'p/' }, 'default');
      expect(read.rows.map((r) => [r.key, r.value])).toEqual([['p/a', 1]]);
      expect(read.index).toBeGreaterThanOrEqual(deleted.index);
      expect(read.revision).toBeGreaterThanOrEqual(read.index);
      expect((await store.read({ table: T, prefix: '' }, 'default')).rows.map((r) => r.key)).toEqual(['p', 'p/a', 'q']);
    });

    it("answers an absent key with no rows and an index past the table's last change, never 0", async () => {
      await store.commit([set(T, 'x', 1)]);
      const last = await store.commit([del(T, 'x')]);
      for (const consistency of ['default', 'stale', 'consistent'] as const) {
        const read = await store.read({ table: T, key: 'none' }, consistency);
        expect(read.rows).toEqual([]);
        expect(read.index).toBeGreaterThanOrEqual(last.index);
        expect(read.revision).toBeGreaterThanOrEqual(read.index);
      }
    });

    it('gives the same rows in every consistency mode', async () => {
      await store.commit([set(T, 'm/1', 'one'), set(T, 'm/2', 'two')]);
      const rows = async (consistency: 'default' | 'stale' | 'consistent'): Promise<unknown[]> =>
        (await store.read({ table: T, prefix: 'm/' }, consistency)).rows;
      expect(await rows('stale')).toEqual(await rows('default'));
      expect(await rows('consistent')).toEqual(await rows('default'));
    });

    it('tells of a change of its own target only, set or delete, once', async () => {
      const start = await store.commit([set(T, 'k', 1)]);
      const onKey = changed({ table: T, key: 'k' }, start.index);
      const onPrefix = changed({ table: T, prefix: 'dir/' }, start.index);
      await store.commit([set(T, 'kk', 1), set(T, 'dir', 1), set('contract-other', 'k', 1)]);
      await store.commit([set(T, 'dir/1', 1)]);
      await onPrefix.next;
      expect(onKey.calls()).toBe(0);
      await store.commit([del(T, 'k')]);
      await onKey.next;
      // One-shot: later changes are not told to it.
      await store.commit([set(T, 'k', 2), set(T, 'dir/2', 2)]);
      await changed({ table: T, key: 'k' }, start.index).next;
      expect(onKey.calls()).toBe(1);
      expect(onPrefix.calls()).toBe(1);
    });

    it('tells at once, never inside the call, of a change already past the revision', async () => {
      const before = await store.commit([set(T, 'c', 1)]);
      await store.commit([set(T, 'c', 2)]);
      const late = changed({ table: T, key: 'c' }, before.index);
      expect(late.calls()).toBe(0);
      await late.next;
      const read = await store.read({ table: T, key: 'c' }, 'default');
      // From the revision a read saw, only a later change is told.
      const fromRead = changed({ table: T, key: 'c' }, read.revision);
      await store.commit([set(T, 'c', 3)]);
      await fromRead.next;
    });

    it('lists keys only: every key in order with its indexes, no values, and the index of the full listing', async () => {
      const first = await store.commit([set(T, 'ko/a', { big: 'v'.repeat(10_000) }), set(T, 'ko/b', 2)]);
      await store.commit([set(T, 'ko/c', 3), set(T, 'kod', 4)]);
      await store.commit([del(T, 'ko/b')]);
      for (const consistency of ['default', 'stale', 'consistent'] as const) {
        const full = await store.read({ table: T, prefix: 'ko/' }, consistency);
        const keys = await store.read<null>({ table: T, prefix: 'ko/', keysOnly: true }, consistency);
        expect(keys.rows).toEqual(full.rows.map((r) => ({ ...r, value: null })));
        expect(keys.rows.map((r) => r.key)).toEqual(['ko/a', 'ko/c']);
        expect(keys.rows[0]?.createIndex).toBe(first.index);
        expect(keys.index).toBe(full.index);
        expect(keys.unreadable).toBeUndefined();
      }
      expect((await store.read({ table: T, prefix: 'none/', keysOnly: true }, 'default')).rows).toEqual([]);
    });

    it('refuses a listing over its byte limit with an error naming it, counting keys and values as stored', async () => {
      // Each row: a 3-byte key and 1,002 bytes of JSON; keys alone, 3 bytes a row.
      const rows = ['L/1', 'L/2', 'L/3', 'L/4'];
      await store.commit(rows.map((key) => set(T, key, 'x'.repeat(1_000))));
      const listing = (maxBytes: number, keysOnly = false): Promise<unknown> =>
        store.read({ table: T, prefix: 'L/', maxBytes, keysOnly }, 'default').then(
          (read) => read.rows.map((r) => r.key),
          (err: unknown) => (isAgentError(err) ? { code: err.code, kind: err.kind, message: err.message } : err),
        );
      expect(await listing(4 * 1_005)).toEqual(rows);
      expect(await listing(4 * 1_005 - 1)).toEqual({
        code: 'STATE_LISTING_TOO_LARGE',
        kind: 'too-large',
        message: expect.stringContaining(`more than ${4 * 1_005 - 1} bytes`),
      });
      expect(await listing(12, true)).toEqual(rows);
      expect(await listing(11, true)).toMatchObject({ code: 'STATE_LISTING_TOO_LARGE', kind: 'too-large' });
    });

    it("reads a listing larger than gRPC's 4 MiB message in total, every value intact", async () => {
      // Twelve rows of 700 KB, each in a commit of its own (etcd takes 1.5 MiB a request by default).
      const value = (i: number): string => String(i % 10).repeat(700_000);
      const keys = Array.from({ length: 12 }, (_, i) => `big/${String(i).padStart(2, '0')}`);
      let last = 0;
      for (const [i, key] of keys.entries()) last = (await store.commit([set(T, key, value(i))])).index;
      const read = await store.read<string>({ table: T, prefix: 'big/' }, 'default');
      expect(read.rows.map((r) => r.key)).toEqual(keys);
      expect(read.rows.every((r, i) => r.value === value(i))).toBe(true);
      expect(read.index).toBeGreaterThanOrEqual(last);
      const keysOnly = await store.read<null>({ table: T, prefix: 'big/', keysOnly: true }, 'stale');
      expect(keysOnly.rows.map((r) => r.key)).toEqual(keys);
    });

    it('tells a cancelled wait nothing, and leaves no watch behind', async () => {
      const start = await store.commit([set(T, 'w', 1)]);
      const cancelled = changed({ table: T, key: 'w' }, start.index);
      cancelled.cancel();
      const past = changed({ table: T, key: 'w' }, 0);
      past.cancel();
      const kept = changed({ table: T, key: 'w' }, start.index);
      await store.commit([set(T, 'w', 2)]);
      await kept.next;
      expect(cancelled.calls()).toBe(0);
      expect(past.calls()).toBe(0);
      expect(store.watchCount).toBe(0);
    });
  });
}
