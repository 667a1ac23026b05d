import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Catalog } from '../../../src/catalog/catalog.js';
import { consulService } from '../../../src/catalog/consul-service.js';
import { LivenessReconciler, SERF_FAILED_OUTPUT, type LiveMember } from '../../../src/catalog/liveness.js';
import {
  departedMembers,
  LEFT_KEPT_MS,
  memberStatuses,
  type MemberFields,
} from '../../../src/catalog/member-status.js';
import { CatalogQueries } from '../../../src/catalog/queries.js';
import { FakeClock } from '../../../src/core/clock.js';
import { silentLogger } from '../../../src/core/log.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../../src/state/embedded/index.js';
import { agentRejectionOf } from '../../support/errors.js';

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

function member(name: string, extra: Partial<MemberFields> & { leaving?: boolean } = {}): LiveMember {
  return {
    member: {
      name,
      id: `id-${name}`,
      address: '10.0.0.1',
      port: 8500,
      datacenter: 'dc1',
      server: false,
      version: '1.0.0',
      aclsEnabled: false,
      ...extra,
    },
    node: fields,
  };
}

describe('LivenessReconciler', () => {
  let store: EmbeddedStore;
  let catalog: Catalog;
  let queries: CatalogQueries;
  let clock: FakeClock;
  let live: Map<string, LiveMember>;
  let reconciler: LivenessReconciler;
  const make = (): LivenessReconciler =>
    new LivenessReconciler({
      catalog,
      queries,
      store,
      liveMembers: () => live,
      consulService: (m) => (m.server ? consulService(m.port, m.version) : undefined),
      clock,
      log: silentLogger,
      reapAfterMs: 10_000,
    });
  beforeEach(async () => {
    store = await openEmbeddedStore({ log: silentLogger });
    catalog = new Catalog(store, 'dc1');
    queries = new CatalogQueries(store);
    clock = new FakeClock(1_000);
    live = new Map([
      ['a', member('a')],
      ['b', member('b')],
    ]);
    reconciler = make();
    await catalog.registerSelf('a', fields);
    await catalog.registerSelf('b', fields);
    await catalog.syncNode('b', { node: fields, services: [{ Service: 'web' }], checks: [] });
  });
  afterEach(() => store.close());

  const serf = (node: string): string | undefined =>
    queries.nodeChecks(node).find((c) => c.value.CheckID === 'serfHealth')?.value.Status;
  const statuses = (): [string, number][] =>
    memberStatuses(
      [...live.values()].map((l) => l.member),
      departedMembers(store),
    ).map((m) => [m.name, m.status]);

  it("turns a lapsed member's serfHealth critical and lists it failed, and alive again when it is back", async () => {
    const index = store.index;
    await reconciler.reconcile();
    expect(store.index).toBe(index);
    live.delete('b');
    await reconciler.reconcile();
    expect([serf('a'), serf('b')]).toEqual(['passing', 'critical']);
    expect(queries.nodeChecks('b')[0]?.value.Output).toBe(SERF_FAILED_OUTPUT);
    expect(statuses()).toEqual([
      ['a', 1],
      ['b', 4],
    ]);
    // As last seen alive: a failed member keeps its entry's fields.
    expect(departedMembers(store).get('b')).toMatchObject({ Status: 'failed', Since: 1_000, Member: { port: 8500 } });
    live.set('b', member('b'));
    await reconciler.reconcile();
    expect(serf('b')).toBe('passing');
    expect(departedMembers(store).size).toBe(0);
  });

  it('registers a live member that has no node yet, alive, as the leader does (clients write nothing)', async () => {
    live.set('c', { ...member('c'), node: { ...fields, Address: '10.0.0.3' } });
    await reconciler.reconcile();
    expect(queries.node('c')?.value.Address).toBe('10.0.0.3');
    expect(serf('c')).toBe('passing');
    const index = store.index;
    await reconciler.reconcile();
    expect(store.index).toBe(index);
  });

  it('reaps a member failed for the reap interval: its node, its services and its record', async () => {
    live.delete('b');
    await reconciler.reconcile();
    clock.advance(9_999);
    await reconciler.reconcile();
    expect(queries.node('b')).toBeDefined();
    clock.advance(1);
    await reconciler.reconcile();
    expect(queries.node('b')).toBeUndefined();
    expect(queries.instances('web', false)).toEqual([]);
    expect(statuses()).toEqual([['a', 1]]);
  });

  it('the reap wait is the record’s: a restarted server does not start it again', async () => {
    live.delete('b');
    await reconciler.reconcile();
    clock.advance(6_000);
    reconciler = make();
    await reconciler.reconcile();
    clock.advance(4_000);
    await reconciler.reconcile();
    expect(queries.node('b')).toBeUndefined();
  });

  it('deregisters a leaving member at once and lists it left until it is reaped', async () => {
    live.set('b', member('b', { leaving: true }));
    expect(statuses()).toEqual([
      ['a', 1],
      ['b', 2],
    ]);
    await reconciler.reconcile();
    expect(queries.node('b')).toBeUndefined();
    expect(queries.instances('web', false)).toEqual([]);
    // Its entry goes with its lease: listed left.
    live.delete('b');
    await reconciler.reconcile();
    expect(statuses()).toEqual([
      ['a', 1],
      ['b', 3],
    ]);
    clock.advance(LEFT_KEPT_MS - 1);
    await reconciler.reconcile();
    expect(statuses()).toContainEqual(['b', 3]);
    clock.advance(1);
    await reconciler.reconcile();
    expect(statuses()).toEqual([['a', 1]]);
  });

  it('records a member whose entry went saying it leaves (departing) left, not failed, then says so once done', async () => {
    const told: string[] = [];
    reconciler = new LivenessReconciler({
      catalog,
      queries,
      store,
      liveMembers: () => live,
      clock,
      log: silentLogger,
      recordedLeft: (name) => told.push(name),
    });
    live.set('b', member('b', { leaving: true }));
    await reconciler.reconcile();
    expect(told).toEqual([]);
    await reconciler.reconcile();
    expect(told).toEqual(['b']);
    expect(statuses()).toEqual([
      ['a', 1],
      ['b', 3],
    ]);
  });

  it("registers a server's consul service on its node, at its port; anti-entropy keeps it", async () => {
    live.set('a', member('a', { server: true, port: 8501, version: '1.17.0+svc-agent-1' }));
    await reconciler.reconcile();
    const consul = queries.instances('consul', false);
    expect(consul.map((i) => [i.node.value.Node, i.service.value.Port, i.service.value.Meta.version])).toEqual([
      ['a', 8501, '1.17.0+svc-agent-1'],
    ]);
    await catalog.syncNode('a', { node: fields, services: [{ Service: 'db' }], checks: [] });
    expect(queries.nodeServices('a').map((s) => s.value.ID)).toEqual(['consul', 'db']);
    // Its port follows the member's.
    live.set('a', member('a', { server: true, port: 8502, version: '1.17.0+svc-agent-1' }));
    await reconciler.reconcile();
    expect(queries.instances('consul', false)[0]?.service.value.Port).toBe(8502);
  });

  it('two servers record a failure once', async () => {
    const other = make();
    live.delete('b');
    await Promise.all([reconciler.reconcile(), other.reconcile()]);
    clock.advance(5);
    await Promise.all([reconciler.reconcile(), other.reconcile()]);
    expect(departedMembers(store).get('b')?.Since).toBe(1_000);
  });

  it('a failed member no server saw alive is listed from its node: a server by its consul service and port', async () => {
    await catalog.setLiveness(
      's',
      'passing',
      'up',
      { ...fields, ID: 'id-s', Address: '10.0.0.9' },
      consulService(8600, 'v'),
    );
    await reconciler.reconcile();
    expect(departedMembers(store).get('s')?.Member).toEqual({
      name: 's',
      id: 'id-s',
      address: '10.0.0.9',
      port: 8600,
      datacenter: 'dc1',
      server: true,
      version: '',
      aclsEnabled: false,
    });
  });

  describe('force-leave', () => {
    it('makes a failed member left and deregisters its node', async () => {
      live.delete('b');
      await reconciler.reconcile();
      await reconciler.forceLeave('b', false);
      expect(statuses()).toContainEqual(['b', 3]);
      expect(queries.node('b')).toBeUndefined();
    });

    it('with prune, removes the member and its node at once, and no reconcile brings either back', async () => {
      live.delete('b');
      await reconciler.reconcile();
      await reconciler.forceLeave('b', true);
      expect(statuses()).toEqual([['a', 1]]);
      expect(queries.node('b')).toBeUndefined();
      await reconciler.reconcile();
      expect(statuses()).toEqual([['a', 1]]);
    });

    it('leaves a live member as it is (it refutes the leave), and refuses an unknown name', async () => {
      const index = store.index;
      await reconciler.forceLeave('a', true);
      expect(store.index).toBe(index);
      expect(serf('a')).toBe('passing');
      expect(await agentRejectionOf(reconciler.forceLeave('nobody', false))).toEqual([
        'AGENT_FORCE_LEAVE_UNKNOWN',
        "agent: No node found with name 'nobody'",
      ]);
    });
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
    expect(departedMembers(store).has('external')).toBe(false);
  });
});
