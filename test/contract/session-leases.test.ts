// The SessionLeases contract (src/sessions/leases.ts), run over both implementations: a lone
// agent's LocalLeases (on a fake clock and on the system clock) and a cluster's EtcdSessionLeases
// on a real etcd. A session's TTL rests on it: a lease lives while renewed, ends when revoked, and
// lapses when left alone. Each wait is for the backend's own event (the `expired` call, the etcd
// watch's delete of a row put under the lease), never for a stretch of wall-clock time.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { EtcdSessionLeases } from '../../src/cluster/session-leases.js';
import { FakeClock, systemClock, type Clock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/log.js';
import { LocalLeases, type SessionLeases } from '../../src/sessions/leases.js';
import { openEmbeddedStore } from '../../src/state/embedded/index.js';
import { connectEtcd, openEtcdStore, type EtcdStore } from '../../src/state/etcd/index.js';
import type { StateStore } from '../../src/state/types.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';

const TABLE = 'leased';

interface OpenedLeases {
  readonly leases: SessionLeases;
  /** A lease time worth waiting out: the shortest the backend keeps. */
  readonly shortMs: number;
  /** Where a session's row goes: a row put under a lease must be taken. */
  readonly store: StateStore;
  /**
   * Resolves once lease `id` has lapsed as the backend shows it (LocalLeases: `expired` called
   * with it; etcd: a row put under it deleted), letting the time pass where it is a fake clock's.
   */
  lapsed(id: string): Promise<void>;
  cleanup(): Promise<void>;
}

function describeSessionLeasesContract(name: string, open: () => Promise<OpenedLeases>): void {
  describe(`SessionLeases contract: ${name}`, () => {
    let h: OpenedLeases;
    beforeEach(async () => {
      h = await open();
    });
    afterEach(async () => {
      await h.cleanup();
    });

    it('grants a lease of its own each time, whose ID a row can be put under', async () => {
      const a = await h.leases.grant(h.shortMs);
      const b = await h.leases.grant(h.shortMs);
      expect(a).not.toBe(b);
      const put = await h.store.commit([
        { op: 'set', table: TABLE, key: 'a', value: 1, lease: a },
        { op: 'set', table: TABLE, key: 'b', value: 1, lease: b },
      ]);
      expect(put.ok).toBe(true);
      await h.leases.revoke(a);
      await h.leases.revoke(b);
    });

    it('renews a live lease', async () => {
      const id = await h.leases.grant(h.shortMs);
      expect(await h.leases.renew(id)).toBe(true);
      expect(await h.leases.renew(id)).toBe(true);
      await h.leases.revoke(id);
    });

    it('ends a lease on revoke: renew is then false, and revoking it again is fine', async () => {
      const id = await h.leases.grant(h.shortMs);
      const other = await h.leases.grant(h.shortMs);
      await h.leases.revoke(id);
      expect(await h.leases.renew(id)).toBe(false);
      await h.leases.revoke(id);
      expect(await h.leases.renew(other)).toBe(true);
      await h.leases.revoke(other);
    });

    it('lapses a lease not renewed: renew is then false, and revoke is fine', async () => {
      const id = await h.leases.grant(h.shortMs);
      await h.lapsed(id);
      expect(await h.leases.renew(id)).toBe(false);
      await h.leases.revoke(id);
    });
  });
}

/** `expired` calls of LocalLeases, awaited by lease ID. */
function expiries(): { expired: (id: string) => void; next: (id: string) => Promise<void>; seen: string[] } {
  const seen: string[] = [];
  const waiters = new Map<string, () => void>();
  return {
    seen,
    expired(id) {
      seen.push(id);
      waiters.get(id)?.();
    },
    next: (id) => (seen.includes(id) ? Promise.resolve() : new Promise((resolve) => waiters.set(id, resolve))),
  };
}

async function openLocal(clock: Clock, shortMs: number): Promise<OpenedLeases> {
  const e = expiries();
  const leases = new LocalLeases(clock, e.expired);
  const store = await openEmbeddedStore({ log: silentLogger });
  return {
    leases,
    shortMs,
    store,
    lapsed(id) {
      const done = e.next(id);
      if (clock instanceof FakeClock) clock.advance(shortMs);
      return done;
    },
    async cleanup() {
      leases.close();
      await store.close();
    },
  };
}

describeSessionLeasesContract('LocalLeases, fake clock', () => openLocal(new FakeClock(), 10_000));
describeSessionLeasesContract('LocalLeases, system clock', () => openLocal(systemClock, 20));

describe('LocalLeases beyond the contract', () => {
  let clock: FakeClock;
  let e: ReturnType<typeof expiries>;
  let leases: LocalLeases;
  beforeEach(() => {
    clock = new FakeClock();
    e = expiries();
    leases = new LocalLeases(clock, e.expired);
  });
  afterEach(() => leases.close());

  it('gives a renewed lease its full time again', async () => {
    const id = await leases.grant(20_000);
    clock.advance(15_000);
    expect(await leases.renew(id)).toBe(true);
    clock.advance(15_000);
    expect(e.seen).toEqual([]);
    clock.advance(5_000);
    expect(e.seen).toEqual([id]);
  });

  it('calls expired once per lapsed lease, and never for a revoked one', async () => {
    const kept = await leases.grant(1_000);
    const revoked = await leases.grant(1_000);
    await leases.revoke(revoked);
    clock.advance(5_000);
    expect(e.seen).toEqual([kept]);
  });

  it('adopts a lease granted before a restart: its full time from now, renewable', async () => {
    const before = await leases.grant(10_000);
    leases.close();
    clock.advance(60_000);
    expect(e.seen).toEqual([]);
    const after = new LocalLeases(clock, e.expired);
    after.adopt(before, 10_000);
    clock.advance(9_000);
    expect(await after.renew(before)).toBe(true);
    clock.advance(9_000);
    expect(e.seen).toEqual([]);
    clock.advance(1_000);
    expect(e.seen).toEqual([before]);
    // A lease granted after the restart is not one from before it.
    expect(await after.grant(10_000)).not.toBe(before);
    after.close();
  });

  it('stops every timer on close', async () => {
    await leases.grant(1_000);
    await leases.grant(2_000);
    leases.close();
    expect(clock.pendingTimers).toBe(0);
    clock.advance(10_000);
    expect(e.seen).toEqual([]);
  });
});

describe('etcd', () => {
  let cluster: EtcdCluster;
  let prefixes = 0;
  beforeAll(async () => {
    cluster = await startEtcdCluster({ size: 1 });
  }, 180_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  const openStore = (): Promise<EtcdStore> =>
    openEtcdStore({
      etcd: { endpoints: cluster.endpoints },
      prefix: `/svc-test/${process.pid}/leases-${prefixes++}/`,
      log: silentLogger,
    });

  /** Resolves once the row `key` is gone from the store's view (deleted by etcd when its lease ended). */
  const gone = (store: StateStore, key: string): Promise<void> =>
    new Promise((resolve) => {
      const wait = (): void => {
        if (store.get(TABLE, key) === undefined) resolve();
        else store.watchOnce({ table: TABLE, key }, wait);
      };
      wait();
    });

  describeSessionLeasesContract('EtcdSessionLeases', async () => {
    const leases = new EtcdSessionLeases(connectEtcd({ endpoints: cluster.endpoints }));
    const store = await openStore();
    return {
      leases,
      // Asked for 1 s, etcd grants its minimum (1.5 election timeouts, rounded up: 2 s here).
      shortMs: 1_000,
      store,
      async lapsed(id) {
        await store.commit([{ op: 'set', table: TABLE, key: `row-${id}`, value: 1, lease: id }]);
        await gone(store, `row-${id}`);
      },
      async cleanup() {
        leases.close();
        await store.close();
      },
    };
  });

  describe('EtcdSessionLeases beyond the contract', () => {
    let leases: EtcdSessionLeases;
    let store: EtcdStore;
    beforeEach(async () => {
      leases = new EtcdSessionLeases(connectEtcd({ endpoints: cluster.endpoints }));
      store = await openStore();
    });
    afterEach(async () => {
      leases.close();
      await store.close();
    });

    it('grants the time asked for, rounded up to whole seconds', async () => {
      const id = await leases.grant(10_500);
      // "lease 694d77aa9e36b213 granted with TTL(11s), remaining(10s)"
      const text = await cluster.etcdctl('lease', 'timetolive', BigInt(id).toString(16));
      expect(/granted with TTL\((\d+)s\)/.exec(text)?.[1]).toBe('11');
      await leases.revoke(id);
    });

    it('takes the rows put under a lease with it when revoked, and no others', async () => {
      const id = await leases.grant(60_000);
      const put = await store.commit([
        { op: 'set', table: TABLE, key: 'session', value: { n: 1 }, lease: id },
        { op: 'set', table: TABLE, key: 'plain', value: { n: 2 } },
      ]);
      expect(store.get(TABLE, 'session')?.modifyIndex).toBe(put.index);
      await leases.revoke(id);
      await gone(store, 'session');
      expect(store.get(TABLE, 'plain')?.value).toEqual({ n: 2 });
    });
  });
});
