import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/core/clock.js';
import { AgentError } from '../../../src/core/errors.js';
import { silentLogger } from '../../../src/core/log.js';
import {
  BlockingQueries,
  Parked,
  blockingTimeout,
  parseBlockingParams,
  queryMetaHeaders,
  type BlockingLimits,
  type BlockingParams,
  type WatchedRead,
} from '../../../src/http/blocking.js';
import { brandHeaders } from '../../../src/http/brand.js';
import { errorReply } from '../../../src/http/dispatch.js';
import { Query } from '../../../src/http/query.js';
import { TEXT_TYPE, type Reply } from '../../../src/http/reply.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../../src/state/embedded/index.js';
import type { ApiRequest } from '../../../src/http/request.js';
import { nextMacrotask, recordingLogger, request, type RecordingLogger } from './support.js';

const LIMITS: BlockingLimits = { defaultQueryTimeMs: 300_000, maxQueryTimeMs: 600_000 };
const noJitter = (): number => 0;

function params(raw: string, random: () => number = noJitter): BlockingParams {
  return parseBlockingParams(new Query(raw), LIMITS, random);
}

function paramError(raw: string): AgentError {
  try {
    params(raw);
  } catch (err) {
    expect(err).toBeInstanceOf(AgentError);
    expect((err as AgentError).kind).toBe('invalid');
    return err as AgentError;
  }
  throw new Error(`?${raw} did not throw`);
}

describe('parseBlockingParams', () => {
  it('no parameters: non-blocking with the default wait', () => {
    expect(params('')).toEqual({ minIndex: 0, timeoutMs: 300_000 });
  });

  it('reads index and wait', () => {
    expect(params('index=42&wait=10s')).toEqual({ minIndex: 42, timeoutMs: 10_000 });
    expect(params('wait=1m30s&index=007')).toEqual({ minIndex: 7, timeoutMs: 90_000 });
  });

  it.each(['index=abc', 'index=-1', 'index=1.5', 'index=+1', 'index=1e3', 'index=18446744073709551616', 'index= 1'])(
    '?%s → Invalid index',
    (raw) => {
      const err = paramError(raw);
      expect(err.message).toBe('Invalid index');
      expect(err.code).toBe('INVALID_INDEX');
    },
  );

  it('accepts the largest uint64 index', () => {
    expect(params('index=18446744073709551615').minIndex).toBeGreaterThan(0);
  });

  it.each(['wait=10', 'wait=abc', 'wait=5 s', 'wait=1d', 'wait=s'])('?%s → Invalid wait time', (raw) => {
    const err = paramError(raw);
    expect(err.message).toBe('Invalid wait time');
    expect(err.code).toBe('INVALID_WAIT');
  });

  it('parses wait before index: both bad → Invalid wait time', () => {
    expect(paramError('index=abc&wait=abc').code).toBe('INVALID_WAIT');
  });

  it('ignores empty values', () => {
    expect(params('index=&wait=')).toEqual({ minIndex: 0, timeoutMs: 300_000 });
    expect(params('index&wait')).toEqual({ minIndex: 0, timeoutMs: 300_000 });
  });

  it('the first of repeated values is used', () => {
    expect(params('index=3&index=abc').minIndex).toBe(3);
  });

  it.each(['wait=0', 'wait=0s', 'wait=-5s'])(
    '?%s uses the default wait (Go parses a negative wait; Consul then defaults)',
    (raw) => {
      expect(params(`index=1&${raw}`).timeoutMs).toBe(300_000);
    },
  );

  it('caps the wait at the maximum', () => {
    expect(params('index=1&wait=1h').timeoutMs).toBe(600_000);
    expect(params('index=1&wait=10m').timeoutMs).toBe(600_000);
    expect(params('index=1&wait=9m59s').timeoutMs).toBe(599_000);
  });

  it('adds jitter in [0, timeout/16) from the injected random', () => {
    expect(params('wait=160s', () => 0).timeoutMs).toBe(160_000);
    expect(params('wait=160s', () => 0.5).timeoutMs).toBe(165_000);
    const high = params('wait=160s', () => 0.9999999).timeoutMs;
    expect(high).toBeLessThan(170_000);
    expect(high).toBeGreaterThanOrEqual(169_999);
    // Jitter applies after the clamp: at most max + max/16.
    const capped = params('wait=1h', () => 0.9999999).timeoutMs;
    expect(capped).toBeLessThan(600_000 + 37_500);
    expect(capped).toBeGreaterThanOrEqual(637_499);
  });

  it('blockingTimeout on its own', () => {
    expect(blockingTimeout(0, LIMITS, noJitter)).toBe(300_000);
    expect(blockingTimeout(1_000, LIMITS, noJitter)).toBe(1_000);
    expect(blockingTimeout(1_000, { defaultQueryTimeMs: 10, maxQueryTimeMs: 500 }, noJitter)).toBe(500);
  });
});

describe('queryMetaHeaders', () => {
  it('writes index 0 as 1, and the leader headers', () => {
    expect(queryMetaHeaders(brandHeaders('Svc'), 0)).toEqual([
      ['X-Svc-Index', '1'],
      ['X-Svc-KnownLeader', 'true'],
      ['X-Svc-LastContact', '0'],
    ]);
  });

  it('writes the index as given otherwise, in the chosen brand', () => {
    expect(queryMetaHeaders(brandHeaders('Consul'), 77)[0]).toEqual(['X-Consul-Index', '77']);
    expect(queryMetaHeaders(brandHeaders('Svc'), 1)[0]).toEqual(['X-Svc-Index', '1']);
  });
});

describe('BlockingQueries', () => {
  let store: EmbeddedStore;
  let clock: FakeClock;
  let blocking: BlockingQueries;
  let log: RecordingLogger;

  beforeEach(async () => {
    store = await openEmbeddedStore({ log: silentLogger });
    clock = new FakeClock();
    log = recordingLogger();
    blocking = new BlockingQueries(store, clock, (err, path) => errorReply(err, log, path));
  });

  afterEach(async () => {
    await store.close();
  });

  /** A read of one kv key whose reply body is `<index>:<value or none>`, counting renders. */
  function keyRead(key: string): WatchedRead & { renders: number } {
    const read = {
      renders: 0,
      target: { table: 'kv', key },
      index: () => store.keyIndex('kv', key),
      render(index: number): Reply {
        read.renders++;
        const row = store.get<string>('kv', key);
        return { status: 200, body: `${index}:${row?.value ?? 'none'}` };
      },
    };
    return read;
  }

  /** The answer as a reply, or as a promise of one for a parked read. */
  const ask = (req: ApiRequest, p: BlockingParams, read: WatchedRead): Reply | Promise<Reply> => {
    const out = blocking.answer(req, p, read);
    return out instanceof Parked ? out.wait() : out;
  };

  const set = (key: string, value: string) => store.commit([{ op: 'set', table: 'kv', key, value }]);

  /** Tracks whether a promise has settled, without awaiting it. */
  function track(p: Reply | Promise<Reply>): { reply: Reply | undefined } {
    const state: { reply: Reply | undefined } = { reply: undefined };
    void Promise.resolve(p).then((r) => (state.reply = r));
    return state;
  }

  it('answers synchronously when the read does not block', async () => {
    await set('a', 'v1');
    const reply = ask(request(), { minIndex: 0, timeoutMs: 1000 }, keyRead('a'));
    expect(reply).not.toBeInstanceOf(Promise);
    expect((reply as Reply).body).toBe('1:v1');
    expect(blocking.parked).toBe(0);
    expect(store.watchCount).toBe(0);
  });

  it('answers synchronously when the index is already past minIndex', async () => {
    await set('a', 'v1');
    await set('a', 'v2');
    const reply = ask(request(), { minIndex: 1, timeoutMs: 1000 }, keyRead('a'));
    expect(reply).not.toBeInstanceOf(Promise);
    expect((reply as Reply).body).toBe('2:v2');
  });

  it('parks at the current index and wakes on a commit to the watched key', async () => {
    await set('a', 'v1');
    const read = keyRead('a');
    const reply = ask(request(), { minIndex: 1, timeoutMs: 60_000 }, read);
    expect(reply).toBeInstanceOf(Promise);
    expect(blocking.parked).toBe(1);
    expect(store.watchCount).toBe(1);
    expect(clock.pendingTimers).toBe(1);
    expect(read.renders).toBe(0);

    await set('a', 'v2');
    await nextMacrotask();
    await expect(reply).resolves.toEqual({ status: 200, body: '2:v2' });
    expect(read.renders).toBe(1);
    expect(blocking.parked).toBe(0);
    expect(store.watchCount).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  it('parks when the index is below minIndex too (strictly greater wakes)', async () => {
    await set('a', 'v1');
    const state = track(ask(request(), { minIndex: 5, timeoutMs: 60_000 }, keyRead('a')));
    await set('other', 'x'); // index 2
    await set('other', 'y'); // index 3
    await set('a', 'v2'); // index 4: still not above 5
    await nextMacrotask();
    expect(state.reply).toBeUndefined();
    expect(blocking.parked).toBe(1);
    expect(store.watchCount).toBe(1); // re-armed
    await set('x', '1'); // 5
    await set('a', 'v3'); // 6
    await nextMacrotask();
    await nextMacrotask();
    expect(state.reply).toEqual({ status: 200, body: '6:v3' });
    expect(blocking.parked).toBe(0);
    expect(store.watchCount).toBe(0);
  });

  it('does not wake on a commit to another key (D6)', async () => {
    await set('a', 'v1');
    const read = keyRead('a');
    const state = track(ask(request(), { minIndex: 1, timeoutMs: 60_000 }, read));
    await set('b', 'x');
    await set('ab', 'y');
    await store.commit([{ op: 'set', table: 'other', key: 'a', value: 'z' }]);
    await nextMacrotask();
    await nextMacrotask();
    expect(state.reply).toBeUndefined();
    expect(read.renders).toBe(0);
    expect(blocking.parked).toBe(1);
    expect(store.watchCount).toBe(1);
  });

  it('a parked query on a key that does not exist yet wakes when it is created', async () => {
    await set('other', 'x');
    const reply = ask(request(), { minIndex: 1, timeoutMs: 60_000 }, keyRead('new'));
    expect(reply).toBeInstanceOf(Promise);
    await set('new', 'v');
    await nextMacrotask();
    await expect(reply).resolves.toEqual({ status: 200, body: '2:v' });
  });

  it('resolves with the current data when the wait runs out', async () => {
    await set('a', 'v1');
    const read = keyRead('a');
    const state = track(ask(request(), { minIndex: 1, timeoutMs: 10_000 }, read));
    clock.advance(9_999);
    await Promise.resolve();
    expect(state.reply).toBeUndefined();
    clock.advance(1);
    await Promise.resolve();
    expect(state.reply).toEqual({ status: 200, body: '1:v1' });
    expect(blocking.parked).toBe(0);
    expect(store.watchCount).toBe(0);
    expect(clock.pendingTimers).toBe(0);
    // A later commit does not answer a second time.
    await set('a', 'v2');
    await nextMacrotask();
    expect(read.renders).toBe(1);
  });

  it('abort unparks: no watch, no timer, no answer', async () => {
    await set('a', 'v1');
    const req = request();
    const read = keyRead('a');
    const state = track(ask(req, { minIndex: 1, timeoutMs: 10_000 }, read));
    expect(blocking.parked).toBe(1);
    req.abort();
    expect(blocking.parked).toBe(0);
    expect(store.watchCount).toBe(0);
    expect(clock.pendingTimers).toBe(0);
    await set('a', 'v2');
    await nextMacrotask();
    clock.advance(20_000);
    await Promise.resolve();
    expect(state.reply).toBeUndefined();
    expect(read.renders).toBe(0);
  });

  it('an abort after the answer changes nothing', async () => {
    await set('a', 'v1');
    const req = request();
    const reply = ask(req, { minIndex: 1, timeoutMs: 10_000 }, keyRead('a'));
    clock.advance(10_000);
    await expect(reply).resolves.toEqual({ status: 200, body: '1:v1' });
    req.abort();
    expect(blocking.parked).toBe(0);
    expect(store.watchCount).toBe(0);
  });

  it('releaseAll answers every parked query with its current data', async () => {
    await set('a', 'v1');
    await set('b', 'w1');
    const a = ask(request(), { minIndex: 1, timeoutMs: 60_000 }, keyRead('a'));
    const b = ask(request(), { minIndex: 2, timeoutMs: 60_000 }, keyRead('b'));
    expect(blocking.parked).toBe(2);
    blocking.releaseAll();
    await expect(a).resolves.toEqual({ status: 200, body: '1:v1' });
    await expect(b).resolves.toEqual({ status: 200, body: '2:w1' });
    expect(blocking.parked).toBe(0);
    expect(store.watchCount).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  it("parks on a source's own one-shot watch (a leaf): wakes on its news, times out, and cancels it on abort", async () => {
    let version = 1;
    const watchers = new Set<() => void>();
    const source = (fn: () => void): (() => void) => {
      watchers.add(fn);
      return () => watchers.delete(fn);
    };
    const read: WatchedRead = {
      target: source,
      index: () => version,
      render: (index) => ({ status: 200, body: `v${index}` }),
    };
    const fire = (): void => {
      const due = [...watchers];
      watchers.clear();
      for (const fn of due) fn();
    };

    const woken = track(ask(request(), { minIndex: 1, timeoutMs: 60_000 }, read));
    expect(blocking.parked).toBe(1);
    expect(watchers.size).toBe(1);
    expect(store.watchCount).toBe(0); // the store is not involved
    fire(); // news without a newer index: still parked, watch re-armed
    expect(blocking.parked).toBe(1);
    expect(watchers.size).toBe(1);
    version = 2;
    fire();
    await Promise.resolve();
    expect(woken.reply).toEqual({ status: 200, body: 'v2' });
    expect(blocking.parked).toBe(0);
    expect(watchers.size).toBe(0);

    const timedOut = track(ask(request(), { minIndex: 2, timeoutMs: 5000 }, read));
    clock.advance(5000);
    await Promise.resolve();
    expect(timedOut.reply).toEqual({ status: 200, body: 'v2' });
    expect(watchers.size).toBe(0);

    const req = request();
    const gone = track(ask(req, { minIndex: 2, timeoutMs: 60_000 }, read));
    expect(watchers.size).toBe(1);
    req.abort();
    expect(blocking.parked).toBe(0);
    expect(watchers.size).toBe(0);
    expect(clock.pendingTimers).toBe(0);
    await Promise.resolve();
    expect(gone.reply).toBeUndefined();
  });

  it('prefix and table targets wake on changes they cover', async () => {
    await set('app/x', '1');
    const prefixRead: WatchedRead = {
      target: { table: 'kv', prefix: 'app/' },
      index: () => store.prefixIndex('kv', 'app/'),
      render: (index) => ({ status: 200, body: String(index) }),
    };
    const tableRead: WatchedRead = {
      target: { table: 'kv' },
      index: () => store.tableIndex('kv'),
      render: (index) => ({ status: 200, body: `t${index}` }),
    };
    const p = track(ask(request(), { minIndex: 1, timeoutMs: 60_000 }, prefixRead));
    const t = track(ask(request(), { minIndex: 1, timeoutMs: 60_000 }, tableRead));
    await set('zzz', '1');
    await nextMacrotask();
    await Promise.resolve();
    expect(p.reply).toBeUndefined();
    expect(t.reply).toEqual({ status: 200, body: 't2' });
    await set('app/y', '2');
    await nextMacrotask();
    await Promise.resolve();
    expect(p.reply).toEqual({ status: 200, body: '3' });
  });

  it('reads with the same share key park in one group: one watch, one render per wake', async () => {
    await set('hot', 'v1');
    const read = (): WatchedRead & { renders: number } => Object.assign(keyRead('hot'), { shareKey: 'hot' });
    const first = read();
    const replies: (Reply | Promise<Reply>)[] = [ask(request(), { minIndex: 1, timeoutMs: 60_000 }, first)];
    for (let i = 0; i < 999; i++) replies.push(ask(request(), { minIndex: 1, timeoutMs: 60_000 }, read()));
    const other = ask(request(), { minIndex: 1, timeoutMs: 60_000 }, { ...keyRead('hot'), shareKey: 'hot-pretty' });
    expect(blocking.parked).toBe(1001);
    expect(store.watchCount).toBe(2);
    await set('hot', 'v2');
    await nextMacrotask();
    const answered = await Promise.all(replies);
    expect(answered.every((r) => r.body === '2:v2')).toBe(true);
    expect(first.renders).toBe(1);
    await expect(other).resolves.toEqual({ status: 200, body: '2:v2' });
    expect(blocking.parked).toBe(0);
    expect(store.watchCount).toBe(0);
  });

  it('a member leaving a shared group keeps the others parked; the last one out drops the watch', async () => {
    await set('k', 'v1');
    const reqs = [request(), request(), request()];
    const states = reqs.map((req) =>
      track(ask(req, { minIndex: 1, timeoutMs: 60_000 }, { ...keyRead('k'), shareKey: 'k' })),
    );
    reqs[0]!.abort();
    reqs[1]!.abort();
    expect(blocking.parked).toBe(1);
    expect(store.watchCount).toBe(1);
    reqs[2]!.abort();
    expect(blocking.parked).toBe(0);
    expect(store.watchCount).toBe(0);
    expect(clock.pendingTimers).toBe(0);
    await set('k', 'v2');
    await nextMacrotask();
    expect(states.every((st) => st.reply === undefined)).toBe(true);
  });

  it('times out each query at its own deadline, sharing one timer', async () => {
    await set('t', 'v1');
    const shared = { ...keyRead('t'), shareKey: 't' };
    const early = track(ask(request(), { minIndex: 1, timeoutMs: 1_000 }, shared));
    const late = track(ask(request(), { minIndex: 1, timeoutMs: 5_000 }, shared));
    expect(clock.pendingTimers).toBe(1);
    clock.advance(1_000);
    await Promise.resolve();
    expect(early.reply).toEqual({ status: 200, body: '1:v1' });
    expect(late.reply).toBeUndefined();
    expect(blocking.parked).toBe(1);
    clock.advance(4_000);
    await Promise.resolve();
    expect(late.reply).toEqual({ status: 200, body: '1:v1' });
    expect(clock.pendingTimers).toBe(0);
    expect(store.watchCount).toBe(0);
  });

  it('10,000 queries parked on one key are all answered by one commit', async () => {
    await set('hot', 'v1');
    const replies: (Reply | Promise<Reply>)[] = [];
    for (let i = 0; i < 10_000; i++) replies.push(ask(request(), { minIndex: 1, timeoutMs: 60_000 }, keyRead('hot')));
    expect(blocking.parked).toBe(10_000);
    expect(store.watchCount).toBe(10_000);
    await set('hot', 'v2');
    await nextMacrotask();
    const answered = await Promise.all(replies);
    expect(answered.every((r) => r.body === '2:v2')).toBe(true);
    expect(blocking.parked).toBe(0);
    expect(store.watchCount).toBe(0);
    expect(clock.pendingTimers).toBe(0);
  });

  describe('when the read fails on wake-up (state backend down)', () => {
    /** No parked entry, store watch or wheel timer is left behind. */
    const expectNothingParked = (): void => {
      expect(blocking.parked).toBe(0);
      expect(store.watchCount).toBe(0);
      expect(clock.pendingTimers).toBe(0);
    };

    /** keyRead whose index() or render() throws `error` while `fails` says so. */
    function failingRead(
      key: string,
      where: 'index' | 'render',
      error: () => unknown = () => new Error('backend unavailable'),
    ): WatchedRead & { renders: number; failing: boolean } {
      const inner = keyRead(key);
      const read = {
        failing: false,
        get renders() {
          return inner.renders;
        },
        target: inner.target,
        index(): number {
          if (read.failing && where === 'index') throw error();
          return inner.index();
        },
        render(index: number): Reply {
          if (read.failing && where === 'render') throw error();
          return inner.render(index);
        },
      };
      return read;
    }

    const BACKEND_500: Reply = { status: 500, body: 'backend unavailable', contentType: TEXT_TYPE };

    it('a watch wake-up whose index() throws answers every member of the group with the error reply', async () => {
      await set('a', 'v1');
      const read = Object.assign(failingRead('a', 'index'), { shareKey: 'a' });
      const states = [
        track(ask(request({ path: '/v1/kv/a' }), { minIndex: 1, timeoutMs: 60_000 }, read)),
        track(ask(request({ path: '/v1/kv/a' }), { minIndex: 1, timeoutMs: 30_000 }, read)),
        // Not yet due at the new index: the failure answers it too (the group retires).
        track(ask(request({ path: '/v1/kv/a' }), { minIndex: 9, timeoutMs: 60_000 }, read)),
      ];
      expect(blocking.parked).toBe(3);
      expect(store.watchCount).toBe(1);

      read.failing = true;
      await set('a', 'v2');
      await nextMacrotask();
      await Promise.resolve();
      expect(states.map((st) => st.reply)).toEqual([BACKEND_500, BACKEND_500, BACKEND_500]);
      expectNothingParked();
      // Logged once per wake-up, with the path, as the dispatcher logs a 500.
      expect(log.entries.filter((e) => e.level === 'error')).toHaveLength(1);
      expect(log.entries[0]!.obj).toMatchObject({ path: '/v1/kv/a' });

      // Later wake-ups and timeouts answer nothing more.
      await set('a', 'v3');
      await nextMacrotask();
      clock.advance(120_000);
      await Promise.resolve();
      expect(states.map((st) => st.reply)).toEqual([BACKEND_500, BACKEND_500, BACKEND_500]);

      // The backend recovers: the same read parks and wakes normally again.
      read.failing = false;
      const again = ask(request(), { minIndex: 3, timeoutMs: 60_000 }, read);
      expect(again).toBeInstanceOf(Promise);
      await set('a', 'v4');
      await nextMacrotask();
      await expect(again).resolves.toEqual({ status: 200, body: '4:v4' });
      expect(blocking.parked).toBe(0);
      expect(store.watchCount).toBe(0);
    });

    it('a watch wake-up whose render() throws an AgentError answers with its mapped status', async () => {
      await set('a', 'v1');
      const read = failingRead('a', 'render', () => new AgentError('STORE_CLOSED', 'state store unavailable'));
      const state = track(ask(request(), { minIndex: 1, timeoutMs: 60_000 }, read));
      read.failing = true;
      await set('a', 'v2');
      await nextMacrotask();
      await Promise.resolve();
      expect(state.reply).toEqual({ status: 503, body: 'state store unavailable', contentType: TEXT_TYPE });
      expectNothingParked();
    });

    it('a timeout whose render() throws answers every member, leaves no timer or watch, and throws nothing', async () => {
      await set('t', 'v1');
      const read = Object.assign(failingRead('t', 'render'), { shareKey: 't' });
      const early = track(ask(request(), { minIndex: 1, timeoutMs: 1_000 }, read));
      const late = track(ask(request(), { minIndex: 1, timeoutMs: 5_000 }, read));
      const other = track(ask(request(), { minIndex: 1, timeoutMs: 5_000 }, keyRead('t')));
      expect(blocking.parked).toBe(3);
      read.failing = true;
      expect(() => clock.advance(1_000)).not.toThrow();
      await Promise.resolve();
      expect(early.reply).toEqual(BACKEND_500);
      expect(late.reply).toEqual(BACKEND_500);
      expect(other.reply).toBeUndefined(); // another group, still parked
      expect(blocking.parked).toBe(1);
      expect(store.watchCount).toBe(1);
      clock.advance(4_000);
      await Promise.resolve();
      expect(other.reply).toEqual({ status: 200, body: '1:v1' });
      expectNothingParked();
    });

    it('a timeout whose render() or index() throws answers with the error; after recovery the same index renders afresh', async () => {
      await set('t', 'v1');
      const read = failingRead('t', 'render');
      const first = track(ask(request(), { minIndex: 1, timeoutMs: 1_000 }, read));
      read.failing = true;
      clock.advance(1_000);
      await Promise.resolve();
      expect(first.reply).toEqual(BACKEND_500);
      expect(blocking.parked).toBe(0);
      expect(clock.pendingTimers).toBe(0);

      // Recovered, same index: rendered afresh, not the error of the last wake-up.
      read.failing = false;
      const second = track(ask(request(), { minIndex: 1, timeoutMs: 1_000 }, read));
      clock.advance(1_000);
      await Promise.resolve();
      expect(second.reply).toEqual({ status: 200, body: '1:v1' });

      const byIndex = failingRead('t', 'index');
      const third = track(ask(request(), { minIndex: 1, timeoutMs: 1_000 }, byIndex));
      byIndex.failing = true;
      expect(() => clock.advance(1_000)).not.toThrow();
      await Promise.resolve();
      expect(third.reply).toEqual(BACKEND_500);
      expectNothingParked();
    });

    it('releaseAll answers a failing group with the error and the others with their data', async () => {
      await set('a', 'v1');
      await set('b', 'w1');
      const broken = Object.assign(failingRead('a', 'index'), { shareKey: 'a' });
      const a1 = ask(request(), { minIndex: 1, timeoutMs: 60_000 }, broken);
      const a2 = ask(request(), { minIndex: 1, timeoutMs: 60_000 }, broken);
      const b = ask(request(), { minIndex: 2, timeoutMs: 60_000 }, keyRead('b'));
      broken.failing = true;
      expect(() => blocking.releaseAll()).not.toThrow();
      await expect(a1).resolves.toEqual(BACKEND_500);
      await expect(a2).resolves.toEqual(BACKEND_500);
      await expect(b).resolves.toEqual({ status: 200, body: '2:w1' });
      expectNothingParked();
    });

    it('the first, synchronous answer still throws to the caller', async () => {
      await set('a', 'v1');
      const byIndex = failingRead('a', 'index');
      byIndex.failing = true;
      expect(() => blocking.answer(request(), { minIndex: 1, timeoutMs: 60_000 }, byIndex)).toThrow(
        'backend unavailable',
      );
      const byRender = failingRead('a', 'render');
      byRender.failing = true;
      expect(() => blocking.answer(request(), { minIndex: 0, timeoutMs: 60_000 }, byRender)).toThrow(
        'backend unavailable',
      );
      expect(blocking.parked).toBe(0);
      expect(store.watchCount).toBe(0);
      expect(log.entries).toHaveLength(0);
    });
  });
});
