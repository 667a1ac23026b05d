import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Catalog } from '../../../src/catalog/catalog.js';
import { LivenessReconciler, SERF_FAILED_OUTPUT } from '../../../src/catalog/liveness.js';
import { CatalogQueries } from '../../../src/catalog/queries.js';
import { FakeClock } from '../../../src/core/clock.js';
import { silentLogger } from '../../../src/core/log.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../../src/state/embedded/index.js';

const fields = { ID: 'id', Address: '10.0.0.1', TaggedAddresses: {}, Meta: {} };
const everyone = {
  authorizer: {
    allowed: () => true,
    keyWritePrefix: () => true,
    anyAllowed: () => true,
    allAllowed: () => true,
    defaultAllow: true,
  },
  accessorId: '',
  anonymous: true,
  namespace: 'default',
};

describe('LivenessReconciler', () => {
  let store: EmbeddedStore;
  let catalog: Catalog;
  let queries: CatalogQueries;
  let clock: FakeClock;
  let live: Map<string, typeof fields>;
  let reconciler: LivenessReconciler;
  beforeEach(async () => {
    store = await openEmbeddedStore({ log: silentLogger });
    catalog = new Catalog(store, 'dc1');
    queries = new CatalogQueries(store);
    clock = new FakeClock(1_000);
    live = new Map([
      ['a', fields],
      ['b', fields],
    ]);
    reconciler = new LivenessReconciler({
      catalog,
      queries,
      liveMembers: () => live,
      clock,
      log: silentLogger,
      reapAfterMs: 10_000,
    });
    await catalog.registerSelf('a', fields);
    await catalog.registerSelf('b', fields);
    await catalog.syncNode('b', { node: fields, services: [{ Service: 'web' }], checks: [] });
  });
  afterEach(() => store.close());

  const serf = (node: string): string | undefined =>
    queries.nodeChecks(node).find((c) => c.value.CheckID === 'serfHealth')?.value.Status;

  it("turns a lapsed member's serfHealth critical, and passing again when it is back", async () => {
    const index = store.index;
    await reconciler.reconcile();
    expect(store.index).toBe(index);
    live.delete('b');
    await reconciler.reconcile();
    expect([serf('a'), serf('b')]).toEqual(['passing', 'critical']);
    expect(queries.nodeChecks('b')[0]?.value.Output).toBe(SERF_FAILED_OUTPUT);
    live.set('b', fields);
    await reconciler.reconcile();
    expect(serf('b')).toBe('passing');
  });

  it('registers a live member that has no node yet, alive, as the leader does (clients write nothing)', async () => {
    live.set('c', { ...fields, Address: '10.0.0.3' });
    await reconciler.reconcile();
    expect(queries.node('c')?.value.Address).toBe('10.0.0.3');
    expect(serf('c')).toBe('passing');
    const index = store.index;
    await reconciler.reconcile();
    expect(store.index).toBe(index);
  });

  it('reaps a node critical for the reap interval, with its services', async () => {
    live.delete('b');
    await reconciler.reconcile();
    clock.advance(9_999);
    await reconciler.reconcile();
    expect(queries.node('b')).toBeDefined();
    clock.advance(1);
    await reconciler.reconcile();
    expect(queries.node('b')).toBeUndefined();
    expect(queries.instances('web', false)).toEqual([]);
  });

  it('leaves nodes without a serfHealth check (registered through the API) alone', async () => {
    await catalog.register(
      {
        Datacenter: '',
        ID: '',
        Node: 'external',
        Address: '10.9.9.9',
        TaggedAddresses: {},
        NodeMeta: {},
        Checks: [],
        SkipNodeUpdate: false,
      },
      everyone,
    );
    await reconciler.reconcile();
    clock.advance(20_000);
    await reconciler.reconcile();
    expect(queries.node('external')).toBeDefined();
  });
});
