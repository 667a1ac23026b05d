// Helpers of the CA unit tests: a memory store, a fake clock, the real CA manager with the
// in-process signer (the same LeafWork code the pool workers run), and a store wrapper whose
// reads can be made to fail.
import type { CaConfig } from '../../../../src/config/types.js';
import { FakeClock } from '../../../../src/core/clock.js';
import { silentLogger } from '../../../../src/core/log.js';
import { ServerCa } from '../../../../src/connect/ca/server-ca.js';
import { ROOTS_TABLE } from '../../../../src/connect/ca/model.js';
import { RootsCache } from '../../../../src/connect/ca/roots-cache.js';
import { LocalSigner } from '../../../../src/connect/ca/signer.js';
import { openEmbeddedStore } from '../../../../src/state/embedded/index.js';
import type { StateStore } from '../../../../src/state/types.js';

export const HOUR = 3_600_000;
export const START = Date.UTC(2026, 0, 1, 12);

export const DEFAULT_CA: CaConfig = {
  leafCertTtlMs: 72 * HOUR,
  intermediateCertTtlMs: 8760 * HOUR,
  rootCertTtlMs: 87600 * HOUR,
  privateKeyType: 'ec',
  privateKeyBits: 256,
  csrMaxPerSecond: 0,
  csrMaxConcurrent: 0,
  privateKey: undefined,
  rootCert: undefined,
};

/** A deterministic random source (a linear congruential sequence in [0, 1)). */
export function seededRandom(seed = 42): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Passes everything through, except reads once `failing` is set. */
export class FailingStore implements StateStore {
  failing = false;
  constructor(private readonly inner: StateStore) {}
  private check(): void {
    if (this.failing) throw new Error('backend unavailable');
  }
  get index(): number {
    this.check();
    return this.inner.index;
  }
  get watchCount(): number {
    return this.inner.watchCount;
  }
  get: StateStore['get'] = (table, key) => (this.check(), this.inner.get(table, key));
  list: StateStore['list'] = (table, prefix) => (this.check(), this.inner.list(table, prefix));
  keyIndex: StateStore['keyIndex'] = (table, key) => (this.check(), this.inner.keyIndex(table, key));
  prefixIndex: StateStore['prefixIndex'] = (table, prefix) => (this.check(), this.inner.prefixIndex(table, prefix));
  tableIndex: StateStore['tableIndex'] = (table) => (this.check(), this.inner.tableIndex(table));
  read: StateStore['read'] = (target, consistency) =>
    this.failing ? Promise.reject(new Error('backend unavailable')) : this.inner.read(target, consistency);
  changedAfter: StateStore['changedAfter'] = (target, revision, fn) => this.inner.changedAfter(target, revision, fn);
  reached: StateStore['reached'] = (index) => this.inner.reached(index);
  get health(): StateStore['health'] {
    return this.inner.health;
  }
  get stats(): StateStore['stats'] {
    return this.inner.stats;
  }
  commit: StateStore['commit'] = (ops) => this.inner.commit(ops);
  watchOnce: StateStore['watchOnce'] = (target, fn) => this.inner.watchOnce(target, fn);
  close = (): Promise<void> => this.inner.close();
}

export interface CaFixture {
  readonly clock: FakeClock;
  readonly store: StateStore;
  readonly signer: LocalSigner;
  readonly manager: ServerCa;
  readonly roots: RootsCache;
}

export async function caFixture(ca: Partial<CaConfig> = {}, random = seededRandom()): Promise<CaFixture> {
  const clock = new FakeClock(START);
  const store = await openEmbeddedStore({ log: silentLogger, clock });
  const signer = new LocalSigner();
  const manager = await ServerCa.open({
    store,
    signer,
    clock,
    random,
    log: silentLogger,
    datacenter: 'dc1',
    bootstrap: { ...DEFAULT_CA, ...ca },
  });
  const roots = new RootsCache(
    { roots: () => manager.roots(), watch: (fn) => store.watchOnce({ table: ROOTS_TABLE }, fn) },
    clock,
    random,
    silentLogger,
  );
  return { clock, store, signer, manager, roots };
}

/** Resolves after pending setImmediate callbacks (the store's watch deliveries) have run. */
export const nextMacrotask = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Lets promise chains and deferred watch callbacks settle. */
export async function settle(rounds = 3): Promise<void> {
  for (let i = 0; i < rounds; i++) await nextMacrotask();
}
