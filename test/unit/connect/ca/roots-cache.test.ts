// The agent's roots cache: MISS then HIT, its watch woken by a rotation, and fail-open: with the
// backend's reads failing, the last good roots are served with a growing Age, and the cache
// catches up once the backend answers again. Blocking reads of GET /v1/agent/connect/ca/roots park
// in the agent's blocking queries on that watch (the route over BlockingQueries, fake clock).
import { describe, expect, it } from 'vitest';
import { ServerCa } from '../../../../src/connect/ca/server-ca.js';
import { ROOTS_TABLE } from '../../../../src/connect/ca/model.js';
import { LeafManager } from '../../../../src/connect/ca/leaf-manager.js';
import { RootsCache } from '../../../../src/connect/ca/roots-cache.js';
import { LocalSigner } from '../../../../src/connect/ca/signer.js';
import { FakeClock } from '../../../../src/core/clock.js';
import { silentLogger } from '../../../../src/core/log.js';
import { Metrics } from '../../../../src/core/metrics.js';
import { BlockingQueries, Parked } from '../../../../src/http/blocking.js';
import { brandHeaders } from '../../../../src/http/brand.js';
import { connectCaRoutes } from '../../../../src/http/handlers/connect-ca.js';
import type { Reply } from '../../../../src/http/reply.js';
import type { StateStore } from '../../../../src/state/types.js';
import { request } from '../../http/support.js';
import { openEmbeddedStore } from '../../../../src/state/embedded/index.js';
import { DEFAULT_CA, FailingStore, HOUR, START, caFixture, seededRandom, settle } from './support.js';
import type { MethodSpec } from '../../../../src/http/routes.js';

const rotate = (manager: ServerCa, bits: number) =>
  manager.updateConfiguration({
    provider: 'consul',
    config: { PrivateKeyBits: bits },
    state: null,
    forceWithoutCrossSigning: false,
  });

describe('RootsCache', () => {
  it('answers MISS when it fills, HIT after, and tells its watches of a rotation once', async () => {
    const { roots, manager } = await caFixture();
    const first = roots.get();
    expect(first.hit).toBe(false);
    expect(roots.get()).toEqual({ snapshot: first.snapshot, hit: true, ageSec: 0 });
    let woken = 0;
    let cancelled = 0;
    roots.watchOnce(() => woken++);
    const cancel = roots.watchOnce(() => cancelled++);
    cancel();
    await settle();
    expect(woken).toBe(0);
    await rotate(manager, 384);
    await settle();
    expect(woken).toBe(1);
    expect(cancelled).toBe(0);
    expect(roots.get().snapshot.roots).toHaveLength(2);
    expect(roots.get().snapshot.index).toBeGreaterThan(first.snapshot.index);
    await rotate(manager, 256);
    await settle();
    expect(woken).toBe(1); // one-shot
  });

  it('serves the cached roots while the backend fails, with Age since contact was lost', async () => {
    const clock = new FakeClock(START);
    const inner = await openEmbeddedStore({ log: silentLogger, clock });
    const store = new FailingStore(inner);
    const manager = await ServerCa.open({
      store,
      signer: new LocalSigner(),
      clock,
      random: seededRandom(),
      log: silentLogger,
      datacenter: 'dc1',
      bootstrap: DEFAULT_CA,
    });
    const roots = new RootsCache(
      { roots: () => manager.roots(), watch: (fn) => store.watchOnce({ table: ROOTS_TABLE }, fn) },
      clock,
      seededRandom(),
      silentLogger,
    );
    const good = roots.get().snapshot;

    store.failing = true;
    expect(() => manager.roots()).toThrow('backend unavailable');
    // A change reaches the cache's watch, but the refresh cannot read: the old roots stay.
    await inner.commit([
      { op: 'set', table: ROOTS_TABLE, key: 'zz', value: { ...good.roots[0]!.value, ID: 'zz', Active: false } },
    ]);
    await settle();
    clock.advance(5000);
    const served = roots.get();
    expect(served.snapshot).toBe(good);
    expect(served.hit).toBe(true);
    expect(served.ageSec).toBe(5);
    // A blocking read at the cached index still parks and times out with the cached roots.
    const route = agentRootsRoute(roots, manager, store, clock);
    const timedOut = route.read(good.index, 1000);
    expect(route.blocking.parked).toBe(1);
    clock.advance(1000);
    await settle();
    expect(timedOut.answer).toEqual({ index: good.index, hit: true, age: '6' });

    store.failing = false;
    clock.advance(120_000); // the retry (backoff with jitter, at most 2 min) runs
    await settle();
    const fresh = roots.get();
    expect(fresh.snapshot.roots).toHaveLength(2);
    expect(fresh.ageSec).toBe(0);
  });

  it('fails when the backend fails before the cache ever filled', async () => {
    const clock = new FakeClock(START);
    const store = new FailingStore(await openEmbeddedStore({ log: silentLogger, clock }));
    const manager = await ServerCa.open({
      store,
      signer: new LocalSigner(),
      clock,
      random: seededRandom(),
      log: silentLogger,
      datacenter: 'dc1',
      bootstrap: DEFAULT_CA,
    });
    const roots = new RootsCache(
      { roots: () => manager.roots(), watch: (fn) => store.watchOnce({ table: ROOTS_TABLE }, fn) },
      clock,
      seededRandom(),
      silentLogger,
    );
    store.failing = true;
    expect(() => roots.get()).toThrow('backend unavailable');
    store.failing = false;
    expect(roots.get().hit).toBe(false);
  });
});

/** GET /v1/agent/connect/ca/roots through the route and the agent's blocking queries. */
function agentRootsRoute(roots: RootsCache, manager: ServerCa, store: StateStore, clock: FakeClock) {
  const leaves = new LeafManager({
    source: manager,
    roots,
    clock,
    random: seededRandom(),
    log: silentLogger,
    maxEntries: 10,
    idleTtlMs: HOUR,
    rootChangeSpreadMs: 0,
  });
  const blocking = new BlockingQueries(store, clock, (err) => {
    throw err;
  });
  const routes = connectCaRoutes({
    ca: { manager, roots, leaves },
    blocking,
    brand: brandHeaders('Svc'),
    limits: { defaultQueryTimeMs: 300_000, maxQueryTimeMs: 600_000 },
    clock,
    random: () => 0,
    metrics: new Metrics(clock),
  });
  const handler = (routes.find((r) => r.path === '/v1/agent/connect/ca/roots')!.methods.GET as MethodSpec).handler;
  const identity = { authorizer: undefined as never, accessorId: 'a', anonymous: true, namespace: 'default' };
  const read = (minIndex: number, waitMs: number) => {
    const req = request({ path: '/v1/agent/connect/ca/roots', rawQuery: `index=${minIndex}&wait=${waitMs}ms` });
    const outcome = handler(req, identity, undefined);
    const box: { answer: { index: number; hit: boolean; age: string | undefined } | undefined; abort: () => void } = {
      answer: undefined,
      abort: () => req.abort(),
    };
    void (outcome instanceof Parked ? outcome.wait() : Promise.resolve(outcome)).then((r: Reply) => {
      const header = (name: string) => r.headers?.find(([n]) => n === name)?.[1];
      box.answer = { index: Number(header('X-Svc-Index')), hit: header('X-Cache') === 'HIT', age: header('Age') };
    });
    return box;
  };
  return { blocking, read };
}

describe('GET /v1/agent/connect/ca/roots?index', () => {
  it('parks in the blocking queries: a rotation wakes it (a MISS), an abort forgets it, release answers it', async () => {
    const { roots, manager, store, clock } = await caFixture();
    const first = roots.get().snapshot;
    const route = agentRootsRoute(roots, manager, store, clock);
    const woken = route.read(first.index, 60_000);
    const gone = route.read(first.index, 60_000);
    expect(route.blocking.parked).toBe(2);
    gone.abort();
    expect(route.blocking.parked).toBe(1);
    await rotate(manager, 384);
    await settle();
    expect(woken.answer?.hit).toBe(false);
    expect(woken.answer!.index).toBeGreaterThan(first.index);
    expect(gone.answer).toBeUndefined();
    expect(route.blocking.parked).toBe(0);

    const timers = clock.pendingTimers;
    const released = route.read(woken.answer!.index, 60_000);
    expect(route.blocking.parked).toBe(1);
    route.blocking.releaseAll();
    roots.close();
    await settle(1);
    expect(released.answer).toMatchObject({ index: woken.answer!.index, hit: true });
    expect(clock.pendingTimers).toBe(timers); // the wait's timer went with it
  });
});
