// Reads through the store's one read path (src/http/store-read.ts), on the embedded store: the same
// code serves a table the etcd store reads through (test/contract/read-path.contract.ts pins what
// both stores promise). A blocking read parks and is woken by its own rows only; a timeout answers
// what it read.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/core/clock.js';
import { silentLogger } from '../../../src/core/log.js';
import { BlockingQueries, Parked, type BlockingParams } from '../../../src/http/blocking.js';
import { errorReply } from '../../../src/http/dispatch.js';
import type { Reply } from '../../../src/http/reply.js';
import { answerStoreRead, type StoreReadSpec } from '../../../src/http/store-read.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../../src/state/embedded/index.js';
import type { RangeTarget } from '../../../src/state/types.js';
import { nextMacrotask, request } from './support.js';

let clock: FakeClock;
let store: EmbeddedStore;
let blocking: BlockingQueries;

beforeEach(async () => {
  clock = new FakeClock(0);
  store = await openEmbeddedStore({ log: silentLogger, clock });
  blocking = new BlockingQueries(store, clock, (err, path) => errorReply(err, silentLogger, path));
});
afterEach(async () => {
  await store.close();
});

/** Renders the rows' keys and the index as the reply body. */
const spec = (target: RangeTarget): StoreReadSpec<unknown> => ({
  target,
  consistency: 'default',
  shareKey: JSON.stringify(target),
  render: ({ rows, index }) => ({ status: 200, body: JSON.stringify({ keys: rows.map((r) => r.key), index }) }),
});

const answer = (target: RangeTarget, minIndex: number, timeoutMs = 60_000): Promise<Reply> | Parked =>
  answerStoreRead(blocking, store, request(), { minIndex, timeoutMs } satisfies BlockingParams, spec(target));

const body = (reply: Reply): unknown => JSON.parse(reply.body as string);

describe('answerStoreRead', () => {
  it('answers a read that does not block with the rows and the index to report', async () => {
    const written = await store.commit([{ op: 'set', table: 'kv', key: 'a', value: 1 }]);
    const reply = answer({ table: 'kv', key: 'a' }, 0);
    expect(reply).toBeInstanceOf(Promise);
    expect(body(await (reply as Promise<Reply>))).toEqual({ keys: ['a'], index: written.index });
  });

  it('answers a blocking read already past its index without another write', async () => {
    await store.commit([{ op: 'set', table: 'kv', key: 'a', value: 1 }]);
    const second = await store.commit([{ op: 'set', table: 'kv', key: 'a', value: 2 }]);
    const parked = answer({ table: 'kv', key: 'a' }, second.index - 1) as Parked;
    expect(body(await parked.wait())).toEqual({ keys: ['a'], index: second.index });
    expect(blocking.parked).toBe(0);
  });

  it('answers a blocking read of a key never written once its table moved past the index (as Consul does)', async () => {
    const first = await store.commit([{ op: 'set', table: 'kv', key: 'a', value: 1 }]);
    const second = await store.commit([{ op: 'set', table: 'kv', key: 'b', value: 1 }]);
    const parked = answer({ table: 'kv', key: 'never' }, first.index) as Parked;
    expect(body(await parked.wait())).toEqual({ keys: [], index: second.index });
  });

  it('wakes a blocking read on a change of its own rows only', async () => {
    const first = await store.commit([{ op: 'set', table: 'kv', key: 'dir/a', value: 1 }]);
    const parked = answer({ table: 'kv', prefix: 'dir/' }, first.index) as Parked;
    let reply: Reply | undefined;
    const waiting = parked.wait().then((r) => (reply = r));
    await store.commit([{ op: 'set', table: 'kv', key: 'other', value: 1 }]);
    await store.commit([{ op: 'set', table: 'intentions', key: 'dir/a', value: 1 }]);
    for (let i = 0; i < 3; i++) await nextMacrotask();
    expect(reply).toBeUndefined();
    expect(blocking.parked).toBe(1);
    const mine = await store.commit([{ op: 'delete', table: 'kv', key: 'dir/a' }]);
    await waiting;
    expect(body(reply as Reply)).toEqual({ keys: [], index: mine.index });
    expect(store.watchCount).toBe(0);
  });

  it('answers at the end of the wait with what it read, and leaves no watch behind', async () => {
    const first = await store.commit([{ op: 'set', table: 'kv', key: 'k', value: 1 }]);
    const parked = answer({ table: 'kv', key: 'k' }, first.index, 1_000) as Parked;
    const waiting = parked.wait();
    await nextMacrotask();
    clock.advance(1_100);
    expect(body(await waiting)).toEqual({ keys: ['k'], index: first.index });
    expect(blocking.parked).toBe(0);
    expect(store.watchCount).toBe(0);
  });

  it('reads a change again through the leader when the member it asked lags behind the change', async () => {
    // A store reading through etcd: the wait's watch saw the key made at revision 171, and the
    // member the stale read went to has only reached 170 (another row's change).
    const reads: string[] = [];
    let woken: ((changedAt?: number) => void) | undefined;
    const lagging = {
      read: <V>(_target: RangeTarget, consistency: string) => {
        reads.push(consistency);
        const row = { key: 'k', value: 1 as V, createIndex: 171, modifyIndex: 171 };
        if (consistency === 'consistent') return Promise.resolve({ rows: [row], index: 171, revision: 171 });
        const revision = woken === undefined ? 169 : 170;
        return Promise.resolve({ rows: [], index: revision, revision });
      },
      changedAfter: (_target: RangeTarget, _revision: number, fn: (changedAt?: number) => void) => {
        woken = fn;
        return () => {};
      },
    };
    const parked = answerStoreRead(
      blocking,
      lagging,
      request(),
      { minIndex: 169, timeoutMs: 60_000 },
      spec({ table: 'kv', key: 'k' }),
    ) as Parked;
    const reply = parked.wait();
    await nextMacrotask();
    woken?.(171);
    expect(body(await reply)).toEqual({ keys: ['k'], index: 171 });
    expect(reads).toEqual(['default', 'stale', 'consistent']);
  });
});
