// The agent's roots cache: MISS then HIT, blocking reads woken by a rotation, and fail-open:
// with the backend's reads failing, the last good roots are served with a growing Age, and the
// cache catches up once the backend answers again.
import { describe, expect, it } from 'vitest';
import { CaManager } from '../../../../src/connect/ca/ca-manager.js';
import { ROOTS_TABLE } from '../../../../src/connect/ca/model.js';
import { RootsCache, type CachedRoots } from '../../../../src/connect/ca/roots-cache.js';
import { LocalSigner } from '../../../../src/connect/ca/signer.js';
import { FakeClock } from '../../../../src/core/clock.js';
import { silentLogger } from '../../../../src/core/log.js';
import { openEmbeddedStore } from '../../../../src/state/embedded-store.js';
import { DEFAULT_CA, FailingStore, START, caFixture, seededRandom, settle } from './support.js';

const rotate = (manager: CaManager, bits: number) =>
  manager.updateConfiguration({ provider: 'consul', config: { PrivateKeyBits: bits }, state: null, forceWithoutCrossSigning: false });

describe('RootsCache', () => {
  it('answers MISS when it fills, HIT after, and wakes blocking reads on a rotation', async () => {
    const { roots, manager } = await caFixture();
    const first = roots.get();
    expect(first.hit).toBe(false);
    expect(roots.get()).toEqual({ snapshot: first.snapshot, hit: true, ageSec: 0 });
    let woken: CachedRoots | undefined;
    void Promise.resolve(roots.wait(first.snapshot.index, 60_000, () => {})).then((a) => (woken = a));
    await settle();
    expect(woken).toBeUndefined();
    await rotate(manager, 384);
    await settle();
    expect(woken?.hit).toBe(false);
    expect(woken!.snapshot.roots).toHaveLength(2);
    expect(woken!.snapshot.index).toBeGreaterThan(first.snapshot.index);
  });

  it('serves the cached roots while the backend fails, with Age since contact was lost', async () => {
    const clock = new FakeClock(START);
    const inner = await openEmbeddedStore({ log: silentLogger, clock });
    const store = new FailingStore(inner);
    const manager = await CaManager.open({ store, signer: new LocalSigner(), clock, random: seededRandom(), log: silentLogger, datacenter: 'dc1', bootstrap: DEFAULT_CA });
    const roots = new RootsCache({ roots: () => manager.roots(), watch: (fn) => store.watchOnce({ table: ROOTS_TABLE }, fn) }, clock, seededRandom(), silentLogger);
    const good = roots.get().snapshot;

    store.failing = true;
    expect(() => manager.roots()).toThrow('backend unavailable');
    // A change reaches the cache's watch, but the refresh cannot read: the old roots stay.
    await inner.commit([{ op: 'set', table: ROOTS_TABLE, key: 'zz', value: { ...good.roots[0]!.value, ID: 'zz', Active: false } }]);
    await settle();
    clock.advance(5000);
    const served = roots.get();
    expect(served.snapshot).toBe(good);
    expect(served.hit).toBe(true);
    expect(served.ageSec).toBe(5);
    // A blocking read at the cached index still parks and times out with the cached roots.
    let timedOut: CachedRoots | undefined;
    void Promise.resolve(roots.wait(good.index, 1000, () => {})).then((a) => (timedOut = a));
    clock.advance(1000);
    await settle();
    expect(timedOut?.snapshot).toBe(good);

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
    const manager = await CaManager.open({ store, signer: new LocalSigner(), clock, random: seededRandom(), log: silentLogger, datacenter: 'dc1', bootstrap: DEFAULT_CA });
    const roots = new RootsCache({ roots: () => manager.roots(), watch: (fn) => store.watchOnce({ table: ROOTS_TABLE }, fn) }, clock, seededRandom(), silentLogger);
    store.failing = true;
    expect(() => roots.get()).toThrow('backend unavailable');
    store.failing = false;
    expect(roots.get().hit).toBe(false);
  });
});
