// The StateStore contract: every backend (the embedded store, the etcd store) runs this suite
// unchanged. It pins health and stats, reads, ordering, guards (`check` ops included: a lock is
// taken only while its session's row holds), atomicity, indexes (deletes included), one-shot
// watches with deferred delivery, watchCount and close. The read path
// (`read`, `changedAfter`) has its own suite, read-path.contract.ts.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isAgentError } from '../../src/core/errors.js';
import type { StateStore, StoreSnapshots, WatchTarget, WriteOp } from '../../src/state/types.js';
import { describeStoreSnapshotsContract } from './store-snapshots.contract.js';

export interface OpenedStore {
  store: StateStore;
  /** Closes the store (if still open) and removes whatever it left behind. */
  cleanup: () => Promise<void>;
}

const T = 'kv';
const OTHER = 'other';
const SENTINEL = 'contract-sentinel';

const set = (key: string, value: unknown, ifIndex?: number, table = T): WriteOp =>
  ifIndex === undefined ? { op: 'set', table, key, value } : { op: 'set', table, key, value, ifIndex };
const del = (key: string, ifIndex?: number, table = T): WriteOp =>
  ifIndex === undefined ? { op: 'delete', table, key } : { op: 'delete', table, key, ifIndex };
const delPrefix = (prefix: string, table = T): WriteOp => ({ op: 'delete-prefix', table, prefix });
const check = (key: string, ifIndex: number, table = T): WriteOp => ({ op: 'check', table, key, ifIndex });

export interface ContractOptions {
  /**
   * Whether commits of disjoint rows, called without waiting for each other, take indexes in call
   * order (the embedded store); a cluster store sends them to etcd together and takes etcd's order.
   */
  readonly disjointCommitsInCallOrder?: boolean;
}

export function describeStateStoreContract(
  name: string,
  open: () => Promise<OpenedStore>,
  options: ContractOptions = {},
): void {
  describe(`StateStore contract: ${name}`, () => {
    let opened: OpenedStore;
    let store: StateStore;

    beforeEach(async () => {
      opened = await open();
      store = opened.store;
    });
    afterEach(async () => {
      await opened.cleanup();
    });

    /** Records calls of a watch; `next` resolves on the first call. */
    function watch(target: WatchTarget): { calls: () => number; next: Promise<void>; cancel: () => void } {
      let calls = 0;
      let resolve!: () => void;
      const next = new Promise<void>((r) => (resolve = r));
      const cancel = store.watchOnce(target, () => {
        calls++;
        resolve();
      });
      return { calls: () => calls, next, cancel };
    }

    /**
     * Waits until every delivery due for the commits so far has happened: deliveries follow commit
     * order, so once a watch woken by a later commit has run, the earlier ones have too.
     */
    async function settle(): Promise<void> {
      const sentinel = watch({ table: SENTINEL });
      await store.commit([set('tick', store.index, undefined, SENTINEL)]);
      await sentinel.next;
    }

    describe('health and stats', () => {
      it('is connected once open, and counts the commits it applied, failed guards included', async () => {
        expect(store.health.connected).toBe(true);
        const before = store.stats.commits;
        await store.commit([set('a', 1)]);
        expect((await store.commit([set('a', 2, 0)])).ok).toBe(false);
        expect(store.stats.commits - before).toBe(2);
        expect(['embedded', 'etcd']).toContain(store.stats.backend);
      });
    });

    describe('reads and writes', () => {
      it('starts empty', () => {
        expect(store.index).toBe(0);
        expect(store.get(T, 'a')).toBeUndefined();
        expect(store.list(T, '')).toEqual([]);
        expect(store.keyIndex(T, 'a')).toBe(0);
        expect(store.prefixIndex(T, 'a')).toBe(0);
        expect(store.tableIndex(T)).toBe(0);
        expect(store.watchCount).toBe(0);
      });

      it('sets a row with create and modify index of the commit', async () => {
        const r = await store.commit([set('a', { n: 1 })]);
        expect(r.ok).toBe(true);
        expect(r.index).toBeGreaterThan(0);
        expect(store.index).toBe(r.index);
        expect(store.get(T, 'a')).toEqual({ key: 'a', value: { n: 1 }, createIndex: r.index, modifyIndex: r.index });
      });

      it('keeps createIndex and moves modifyIndex on update', async () => {
        const first = await store.commit([set('a', 'v1')]);
        const second = await store.commit([set('a', 'v2')]);
        expect(second.index).toBeGreaterThan(first.index);
        expect(store.get(T, 'a')).toEqual({
          key: 'a',
          value: 'v2',
          createIndex: first.index,
          modifyIndex: second.index,
        });
      });

      it('stores JSON values of every shape', async () => {
        const values = ['', 'aGVsbG8=', 0, -1.5, true, false, null, [1, 'x', null], { nested: { deep: [1] } }];
        await store.commit(values.map((v, i) => set(`k${i}`, v)));
        values.forEach((v, i) => expect(store.get(T, `k${i}`)?.value).toEqual(v));
      });

      it('keeps tables apart', async () => {
        await store.commit([set('a', 1), set('a', 2, undefined, OTHER)]);
        expect(store.get(T, 'a')?.value).toBe(1);
        expect(store.get(OTHER, 'a')?.value).toBe(2);
        expect(store.list(T, '').map((r) => r.value)).toEqual([1]);
      });

      it('lists by prefix in byte order', async () => {
        // UTF-8 byte order: U+FFFF sorts before U+10000 (UTF-16 code-unit order would not).
        const keys = ['b', 'a/b', 'a', 'ab', 'a/a', '\u{10000}', '\uffff', 'B', 'a/'];
        await store.commit(keys.map((k) => set(k, k)));
        expect(store.list(T, '').map((r) => r.key)).toEqual([
          'B',
          'a',
          'a/',
          'a/a',
          'a/b',
          'ab',
          'b',
          '\uffff',
          '\u{10000}',
        ]);
        expect(store.list(T, 'a/').map((r) => r.key)).toEqual(['a/', 'a/a', 'a/b']);
        expect(store.list(T, 'a').map((r) => r.key)).toEqual(['a', 'a/', 'a/a', 'a/b', 'ab']);
        expect(store.list(T, 'c')).toEqual([]);
        expect(store.list(OTHER, '')).toEqual([]);
      });

      it('keeps list order through inserts and deletes between reads', async () => {
        await store.commit([set('m', 1), set('c', 1)]);
        expect(store.list(T, '').map((r) => r.key)).toEqual(['c', 'm']);
        await store.commit([set('a', 1), set('z', 1), set('d', 1)]);
        expect(store.list(T, '').map((r) => r.key)).toEqual(['a', 'c', 'd', 'm', 'z']);
        await store.commit([del('c'), set('m', 2)]);
        expect(store.list(T, '').map((r) => [r.key, r.value])).toEqual([
          ['a', 1],
          ['d', 1],
          ['m', 2],
          ['z', 1],
        ]);
      });

      it('does not let a caller mutate stored values through its own objects', async () => {
        const value = { n: 1 };
        await store.commit([set('a', value)]);
        value.n = 2;
        expect(store.get(T, 'a')?.value).toEqual({ n: 1 });
      });
    });

    describe('ordering', () => {
      it('gives commits strictly increasing indexes in call order', async () => {
        const results = await Promise.all(Array.from({ length: 20 }, (_, i) => store.commit([set('a', i)])));
        for (let i = 1; i < results.length; i++) expect(results[i]!.index).toBeGreaterThan(results[i - 1]!.index);
        expect(store.get(T, 'a')?.value).toBe(19);
        expect(store.index).toBe(results[19]!.index);
      });

      it('applies commits of different keys at distinct indexes (in call order where the store promises it)', async () => {
        const [a, b] = await Promise.all([store.commit([set('a', 1)]), store.commit([set('b', 1)])]);
        expect(store.get(T, 'a')?.modifyIndex).toBe(a.index);
        expect(store.get(T, 'b')?.modifyIndex).toBe(b.index);
        if (options.disjointCommitsInCallOrder ?? true) expect(b.index).toBeGreaterThan(a.index);
        else expect(b.index).not.toBe(a.index);
      });

      it('applies commits of one key in call order, even when a prefix delete is among them', async () => {
        const results = await Promise.all([
          store.commit([set('p/a', 1)]),
          store.commit([{ op: 'delete-prefix', table: T, prefix: 'p/' }]),
          store.commit([set('p/a', 2)]),
        ]);
        expect(results[1]!.index).toBeGreaterThan(results[0]!.index);
        expect(results[2]!.index).toBeGreaterThan(results[1]!.index);
        expect(store.get(T, 'p/a')?.value).toBe(2);
      });
    });

    describe('guards', () => {
      it('ifIndex 0 sets only an absent key', async () => {
        const created = await store.commit([set('a', 1, 0)]);
        expect(created.ok).toBe(true);
        const again = await store.commit([set('a', 2, 0)]);
        expect(again.ok).toBe(false);
        expect(store.get(T, 'a')?.value).toBe(1);
      });

      it('ifIndex N sets only at that modify index', async () => {
        const first = await store.commit([set('a', 1)]);
        const stale = await store.commit([set('a', 2, first.index + 1000)]);
        expect(stale.ok).toBe(false);
        const match = await store.commit([set('a', 3, first.index)]);
        expect(match.ok).toBe(true);
        expect(store.get(T, 'a')).toMatchObject({ value: 3, createIndex: first.index, modifyIndex: match.index });
        const old = await store.commit([set('a', 4, first.index)]);
        expect(old.ok).toBe(false);
      });

      it('ifIndex N on a missing key fails', async () => {
        expect((await store.commit([set('a', 1, 5)])).ok).toBe(false);
        expect((await store.commit([del('a', 5)])).ok).toBe(false);
        expect(store.get(T, 'a')).toBeUndefined();
      });

      it('guards deletes by modify index', async () => {
        const first = await store.commit([set('a', 1)]);
        expect((await store.commit([del('a', first.index + 1000)])).ok).toBe(false);
        expect(store.get(T, 'a')?.value).toBe(1);
        expect((await store.commit([del('a', first.index)])).ok).toBe(true);
        expect(store.get(T, 'a')).toBeUndefined();
      });

      it('a failed guard still takes an index but changes nothing', async () => {
        const first = await store.commit([set('a', 1)]);
        const failed = await store.commit([set('a', 2, 0)]);
        expect(failed.ok).toBe(false);
        expect(failed.index).toBeGreaterThan(first.index);
        expect(store.index).toBe(failed.index);
        expect(store.keyIndex(T, 'a')).toBe(first.index);
        expect(store.tableIndex(T)).toBe(first.index);
        const next = await store.commit([set('b', 1)]);
        expect(next.index).toBeGreaterThan(failed.index);
      });

      it('applies nothing of a commit when one guard fails', async () => {
        await store.commit([set('a', 1)]);
        const r = await store.commit([set('b', 1), del('a'), set('c', 1, 999_999), delPrefix('')]);
        expect(r.ok).toBe(false);
        expect(store.list(T, '').map((row) => row.key)).toEqual(['a']);
      });

      it('checks every guard against the state before the commit', async () => {
        const first = await store.commit([set('a', 1)]);
        // The second op's guard holds before the commit even though the first op changes 'a'.
        const r = await store.commit([set('a', 2), set('b', 1, 0), del('a', first.index)]);
        expect(r.ok).toBe(true);
        expect(store.get(T, 'a')).toBeUndefined();
        expect(store.get(T, 'b')?.value).toBe(1);
      });
    });

    describe('check ops', () => {
      it('a check that holds lets the commit apply its other ops', async () => {
        const session = await store.commit([set('s', 1, undefined, OTHER)]);
        const r = await store.commit([check('s', session.index, OTHER), set('a', 1), set('b', 1, 0)]);
        expect(r.ok).toBe(true);
        expect(store.get(T, 'a')).toMatchObject({ value: 1, modifyIndex: r.index });
        expect(store.get(T, 'b')).toMatchObject({ value: 1, modifyIndex: r.index });
      });

      it('a check that fails applies nothing of the commit', async () => {
        const session = await store.commit([set('s', 1, undefined, OTHER), set('a', 1)]);
        const moved = await store.commit([set('s', 2, undefined, OTHER)]);
        const r = await store.commit([check('s', session.index, OTHER), set('a', 2), del('a'), set('c', 1)]);
        expect(r).toMatchObject({ ok: false });
        expect(r.index).toBeGreaterThan(moved.index);
        expect(store.list(T, '').map((row) => [row.key, row.value])).toEqual([['a', 1]]);
        // Nor does one whose key is gone, even at the index it last had.
        await store.commit([del('s', undefined, OTHER)]);
        expect((await store.commit([check('s', moved.index, OTHER), set('a', 3)])).ok).toBe(false);
        expect(store.get(T, 'a')?.value).toBe(1);
      });

      it('ifIndex 0 checks that the key is absent', async () => {
        expect((await store.commit([check('lock', 0), set('a', 1)])).ok).toBe(true);
        await store.commit([set('lock', 1)]);
        expect((await store.commit([check('lock', 0), set('a', 2)])).ok).toBe(false);
        expect(store.get(T, 'a')?.value).toBe(1);
      });

      it('is checked against the state before the commit, as every guard', async () => {
        const r = await store.commit([set('k', 1), check('k', 0)]);
        expect(r.ok).toBe(true);
        expect(store.get(T, 'k')?.value).toBe(1);
      });

      it('writes nothing: no row, no index of its key or table, no watch woken', async () => {
        const present = await store.commit([set('present', 1, undefined, OTHER)]);
        const onKey = watch({ table: OTHER, key: 'present' });
        const onAbsent = watch({ table: OTHER, key: 'absent' });
        const onTable = watch({ table: OTHER });
        const alone = await store.commit([check('present', present.index, OTHER), check('absent', 0, OTHER)]);
        expect(alone.ok).toBe(true);
        expect(alone.index).toBeGreaterThan(present.index);
        const withSet = await store.commit([check('present', present.index, OTHER), set('a', 1)]);
        expect(withSet.ok).toBe(true);
        await settle();
        expect([onKey.calls(), onAbsent.calls(), onTable.calls()]).toEqual([0, 0, 0]);
        expect(store.list(OTHER, '')).toEqual([
          { key: 'present', value: 1, createIndex: present.index, modifyIndex: present.index },
        ]);
        expect(store.keyIndex(OTHER, 'absent')).toBe(0);
        expect(store.tableIndex(OTHER)).toBe(present.index);
      });

      it('refuses a check without ifIndex, and a set under a lease that is no lease ID (STATE_INVALID_OP)', async () => {
        const before = await store.commit([set('a', 1)]);
        const refused: unknown[][] = [
          [{ op: 'check', table: T, key: 'a' }],
          ...['', 'abc', '0', '-1', '1.5', '012', '12345678901234567890', 7].map((lease) => [
            { op: 'set', table: T, key: 'a', value: 2, lease },
          ]),
        ];
        for (const ops of refused) {
          const err: unknown = await store.commit(ops as WriteOp[]).then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(isAgentError(err) ? err.code : err, JSON.stringify(ops)).toBe('STATE_INVALID_OP');
        }
        expect(store.index).toBe(before.index);
        expect(store.get(T, 'a')?.value).toBe(1);
      });
    });

    describe('atomic commits', () => {
      it('applies all ops of a commit at one index', async () => {
        await store.commit([set('x', 0)]);
        const r = await store.commit([set('a', 1), set('b', 2, undefined, OTHER), del('x')]);
        expect(r.ok).toBe(true);
        expect(store.get(T, 'a')?.modifyIndex).toBe(r.index);
        expect(store.get(OTHER, 'b')?.modifyIndex).toBe(r.index);
        expect(store.keyIndex(T, 'x')).toBe(r.index);
      });

      it('later ops of a commit see the earlier ones', async () => {
        const r = await store.commit([set('a', 1), set('a', 2), del('b'), set('b', 3), set('c', 1), del('c')]);
        expect(store.get(T, 'a')).toEqual({ key: 'a', value: 2, createIndex: r.index, modifyIndex: r.index });
        expect(store.get(T, 'b')?.value).toBe(3);
        expect(store.get(T, 'c')).toBeUndefined();
      });

      it('a watcher woken by one op of a commit sees all of it', async () => {
        let seen: unknown[] = [];
        const done = new Promise<void>((resolve) => {
          store.watchOnce({ table: T, key: 'a' }, () => {
            seen = [store.get(T, 'a')?.value, store.get(T, 'b')?.value];
            resolve();
          });
        });
        await store.commit([set('a', 1), set('b', 2)]);
        await done;
        expect(seen).toEqual([1, 2]);
      });
    });

    describe('indexes', () => {
      it('keyIndex follows sets and deletes of the key only', async () => {
        const a = await store.commit([set('a', 1)]);
        await store.commit([set('b', 1)]);
        expect(store.keyIndex(T, 'a')).toBe(a.index);
        const d = await store.commit([del('a')]);
        expect(store.keyIndex(T, 'a')).toBe(d.index);
        expect(store.get(T, 'a')).toBeUndefined();
        expect(store.keyIndex(T, 'never')).toBe(0);
      });

      it('prefixIndex moves on sets and deletes under the prefix only', async () => {
        const a = await store.commit([set('app/a', 1)]);
        await store.commit([set('web/a', 1), set('app', 1, undefined, OTHER)]);
        expect(store.prefixIndex(T, 'app/')).toBe(a.index);
        const d = await store.commit([del('app/a')]);
        expect(store.prefixIndex(T, 'app/')).toBe(d.index);
        expect(store.prefixIndex(T, 'ap')).toBe(d.index);
        expect(store.prefixIndex(T, 'zzz')).toBe(0);
        expect(store.prefixIndex(T, '')).toBe(d.index);
      });

      it('tableIndex moves on any change in the table and on nothing else', async () => {
        const a = await store.commit([set('a', 1)]);
        await store.commit([set('a', 1, undefined, OTHER)]);
        expect(store.tableIndex(T)).toBe(a.index);
        const d = await store.commit([del('a')]);
        expect(store.tableIndex(T)).toBe(d.index);
      });

      it('deleting an absent key succeeds and changes no index', async () => {
        const a = await store.commit([set('a', 1)]);
        const r = await store.commit([del('missing'), delPrefix('nothing/')]);
        expect(r.ok).toBe(true);
        expect(store.keyIndex(T, 'missing')).toBe(0);
        expect(store.prefixIndex(T, 'nothing/')).toBe(0);
        expect(store.tableIndex(T)).toBe(a.index);
      });

      it('delete-prefix deletes exactly the keys under the prefix', async () => {
        await store.commit([set('app/a', 1), set('app/b', 1), set('apple', 1), set('web', 1)]);
        const r = await store.commit([delPrefix('app/')]);
        expect(store.list(T, '').map((row) => row.key)).toEqual(['apple', 'web']);
        expect(store.keyIndex(T, 'app/a')).toBe(r.index);
        expect(store.keyIndex(T, 'app/b')).toBe(r.index);
        expect(store.prefixIndex(T, 'app/')).toBe(r.index);
        expect(store.keyIndex(T, 'apple')).toBeLessThan(r.index);
      });

      it('delete-prefix with "" empties the table only', async () => {
        await store.commit([set('a', 1), set('b', 1), set('a', 1, undefined, OTHER)]);
        const r = await store.commit([delPrefix('')]);
        expect(store.list(T, '')).toEqual([]);
        expect(store.tableIndex(T)).toBe(r.index);
        expect(store.get(OTHER, 'a')?.value).toBe(1);
      });

      it('re-creating a deleted key starts a new createIndex', async () => {
        await store.commit([set('a', 1)]);
        await store.commit([del('a')]);
        const again = await store.commit([set('a', 2)]);
        expect(store.get(T, 'a')).toEqual({ key: 'a', value: 2, createIndex: again.index, modifyIndex: again.index });
      });
    });

    describe('watches', () => {
      it('a key watch fires once on a change of its key, deletes included', async () => {
        await store.commit([set('a', 1)]);
        const w = watch({ table: T, key: 'a' });
        await store.commit([set('b', 1), set('a', 1, undefined, OTHER)]);
        await settle();
        expect(w.calls()).toBe(0);
        await store.commit([del('a')]);
        await w.next;
        await store.commit([set('a', 2)]);
        await settle();
        expect(w.calls()).toBe(1);
      });

      it('a prefix watch fires for keys under the prefix only', async () => {
        const w = watch({ table: T, prefix: 'app/' });
        await store.commit([set('apple', 1), set('app/x', 1, undefined, OTHER)]);
        await settle();
        expect(w.calls()).toBe(0);
        await store.commit([set('app/x', 1)]);
        await w.next;
        expect(w.calls()).toBe(1);
      });

      it('a prefix watch fires on a delete under the prefix', async () => {
        await store.commit([set('app/x', 1)]);
        const w = watch({ table: T, prefix: 'app/' });
        await store.commit([delPrefix('app/')]);
        await w.next;
        expect(w.calls()).toBe(1);
      });

      it('a "" prefix watch and a table watch fire for any key of the table', async () => {
        const p = watch({ table: T, prefix: '' });
        const t = watch({ table: T });
        const other = watch({ table: OTHER });
        await store.commit([set('anything', 1)]);
        await Promise.all([p.next, t.next]);
        await settle();
        expect(other.calls()).toBe(0);
      });

      it('does not fire for a failed guard or a delete of an absent key', async () => {
        await store.commit([set('a', 1)]);
        const k = watch({ table: T, key: 'a' });
        const t = watch({ table: T });
        await store.commit([set('a', 2, 0)]);
        await store.commit([del('missing')]);
        await settle();
        expect(k.calls()).toBe(0);
        expect(t.calls()).toBe(0);
      });

      it('fires once per watch however many of its keys a commit changes', async () => {
        const w = watch({ table: T, prefix: '' });
        await store.commit([set('a', 1), set('b', 1), del('a')]);
        await store.commit([set('c', 1)]);
        await settle();
        expect(w.calls()).toBe(1);
      });

      it('wakes every watch on the same target', async () => {
        const ws = Array.from({ length: 50 }, () => watch({ table: T, key: 'a' }));
        expect(store.watchCount).toBe(50);
        await store.commit([set('a', 1)]);
        await Promise.all(ws.map((w) => w.next));
        expect(ws.every((w) => w.calls() === 1)).toBe(true);
        expect(store.watchCount).toBe(0);
      });

      it('delivers later, never inside the commit call', async () => {
        const w = watch({ table: T, key: 'a' });
        const pending = store.commit([set('a', 1)]);
        expect(w.calls()).toBe(0);
        await pending;
        await w.next;
        expect(w.calls()).toBe(1);
      });

      it('does not fire for a commit applied before the watch was registered', async () => {
        await store.commit([set('a', 1)]);
        const w = watch({ table: T, key: 'a' });
        await settle();
        expect(w.calls()).toBe(0);
        w.cancel();
      });

      it('a cancelled watch never fires, and cancel is idempotent', async () => {
        const keep = watch({ table: T, key: 'a' });
        const gone = watch({ table: T, key: 'a' });
        const gonePrefix = watch({ table: T, prefix: 'a' });
        const goneTable = watch({ table: T });
        expect(store.watchCount).toBe(4);
        gone.cancel();
        gone.cancel();
        gonePrefix.cancel();
        goneTable.cancel();
        expect(store.watchCount).toBe(1);
        await store.commit([set('a', 1)]);
        await keep.next;
        await settle();
        expect(gone.calls() + gonePrefix.calls() + goneTable.calls()).toBe(0);
        expect(store.watchCount).toBe(0);
        keep.cancel();
        expect(store.watchCount).toBe(0);
      });

      it('a watch cancelled after its commit was issued is not called', async () => {
        const late = watch({ table: T, key: 'b' });
        const done = store.commit([set('b', 1)]);
        late.cancel();
        await done;
        await settle();
        expect(late.calls()).toBe(0);
        expect(store.watchCount).toBe(0);
      });

      it('counts watches exactly', async () => {
        const a = watch({ table: T, key: 'a' });
        watch({ table: T, prefix: 'b' });
        watch({ table: OTHER });
        expect(store.watchCount).toBe(3);
        a.cancel();
        expect(store.watchCount).toBe(2);
        await store.commit([set('b1', 1)]);
        await settle();
        expect(store.watchCount).toBe(1);
      });

      it('a throwing watch does not stop the others', async () => {
        store.watchOnce({ table: T, key: 'a' }, () => {
          throw new Error('boom');
        });
        const after = watch({ table: T, key: 'a' });
        const prefix = watch({ table: T, prefix: '' });
        await store.commit([set('a', 1)]);
        await Promise.all([after.next, prefix.next]);
        expect(after.calls()).toBe(1);
      });

      it('a watch registered from a callback waits for the next change', async () => {
        let second = 0;
        const first = new Promise<void>((resolve) => {
          store.watchOnce({ table: T, key: 'a' }, () => {
            store.watchOnce({ table: T, key: 'a' }, () => second++);
            resolve();
          });
        });
        await store.commit([set('a', 1)]);
        await first;
        await settle();
        expect(second).toBe(0);
        const w = watch({ table: T, key: 'a' });
        await store.commit([set('a', 2)]);
        await w.next;
        await settle();
        expect(second).toBe(1);
      });
    });

    describe('close', () => {
      it('refuses commits after close with STORE_CLOSED', async () => {
        await store.commit([set('a', 1)]);
        await store.close();
        const err: unknown = await store.commit([set('a', 2)]).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(isAgentError(err) && err.code === 'STORE_CLOSED' && err.kind === 'unavailable').toBe(true);
        await store.close();
      });

      it('acknowledges commits made before close', async () => {
        const pending = Array.from({ length: 10 }, (_, i) => store.commit([set(`k${i}`, i)]));
        await store.close();
        const results = await Promise.all(pending);
        expect(results.every((r) => r.ok)).toBe(true);
        expect(store.list(T, '').length).toBe(10);
      });
    });

    // Export at one point and replace-all (store-snapshots.contract.ts).
    describeStoreSnapshotsContract(() => store as StateStore & StoreSnapshots);
  });
}
