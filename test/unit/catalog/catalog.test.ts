import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Catalog, type NodeSync } from '../../../src/catalog/catalog.js';
import {
  CATALOG_CHECKS,
  CATALOG_INDEX,
  CATALOG_SERVICES,
  connectIndexKey,
  nodeIndexKey,
  serviceIndexKey,
} from '../../../src/catalog/model.js';
import { CatalogQueries } from '../../../src/catalog/queries.js';
import type { Registration } from '../../../src/catalog/register.js';
import { silentLogger } from '../../../src/core/log.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../../src/state/embedded/index.js';
import { agentRejectionOf } from '../../support/errors.js';
import { everyone, identityWith } from '../../support/identities.js';

async function expectAgentError(promise: Promise<unknown>, code: string): Promise<void> {
  expect((await agentRejectionOf(promise))[0]).toBe(code);
}

const node = { ID: 'id-1', Address: '10.0.0.1', TaggedAddresses: {}, Meta: { rack: 'r1' } };

function sync(overrides: Partial<NodeSync> = {}): NodeSync {
  return {
    node,
    services: [
      { Service: 'web', Port: 8080, Tags: ['v1'] },
      {
        Kind: 'connect-proxy',
        ID: 'web-sidecar-proxy',
        Service: 'web-sidecar-proxy',
        Port: 21000,
        Proxy: { DestinationServiceName: 'web' },
      },
    ],
    checks: [{ CheckID: 'web-http', Name: 'web', ServiceID: 'web', Status: 'passing', Output: 'ok' }],
    ...overrides,
  };
}

function registration(overrides: Partial<Registration> = {}): Registration {
  return {
    Datacenter: '',
    ID: '',
    Node: 'n1',
    Address: '10.0.0.1',
    TaggedAddresses: {},
    NodeMeta: {},
    Checks: [],
    SkipNodeUpdate: false,
    ...overrides,
  };
}

describe('Catalog', () => {
  let store: EmbeddedStore;
  let catalog: Catalog;
  let queries: CatalogQueries;
  beforeEach(async () => {
    store = await openEmbeddedStore({ log: silentLogger });
    catalog = new Catalog(store, 'dc1');
    queries = new CatalogQueries(store);
  });
  afterEach(() => store.close());

  describe('syncNode', () => {
    it('writes the node, its services and checks, and the same call again writes nothing', async () => {
      const first = await catalog.syncNode('n1', sync());
      expect(first.changed).toBe(4);
      const index = store.index;
      const again = await catalog.syncNode('n1', sync());
      expect(again).toEqual({ changed: 0, index });
      expect(store.index).toBe(index);
      const [instance] = queries.withChecks(queries.instances('web', false));
      expect(instance?.node.value).toEqual({ ...node, Node: 'n1', Datacenter: 'dc1' });
      expect(instance?.checks.map((c) => c.value)).toEqual([
        expect.objectContaining({ CheckID: 'web-http', ServiceName: 'web', ServiceTags: ['v1'], Status: 'passing' }),
      ]);
      expect(queries.instances('web', true).map((i) => i.service.value.ID)).toEqual(['web-sidecar-proxy']);
    });

    it("a check's status change is one write, and moves the service's index, not another service's", async () => {
      await catalog.syncNode('n1', sync());
      await catalog.syncNode('n2', { node, services: [{ Service: 'db' }], checks: [] });
      const db = store.keyIndex(CATALOG_INDEX, serviceIndexKey('db'));
      const services = store.tableIndex(CATALOG_SERVICES);
      const result = await catalog.syncNode(
        'n1',
        sync({ checks: [{ CheckID: 'web-http', Name: 'web', ServiceID: 'web', Status: 'critical', Output: 'down' }] }),
      );
      expect(result.changed).toBe(1);
      expect(store.keyIndex(CATALOG_INDEX, serviceIndexKey('web'))).toBe(result.index);
      expect(store.keyIndex(CATALOG_INDEX, nodeIndexKey('n1'))).toBe(result.index);
      expect(store.keyIndex(CATALOG_INDEX, serviceIndexKey('db'))).toBe(db);
      expect(store.tableIndex(CATALOG_SERVICES)).toBe(services);
      // The proxy's checks are not web's: its mesh answer did not change either.
      expect(store.keyIndex(CATALOG_INDEX, connectIndexKey('web'))).toBeLessThan(result.index);
    });

    it('removes what the agent no longer holds, keeping the liveness check', async () => {
      await catalog.registerSelf('n1', node);
      await catalog.syncNode('n1', sync());
      const result = await catalog.syncNode('n1', sync({ services: [], checks: [] }));
      expect(result.changed).toBe(3);
      expect(queries.nodeServices('n1')).toEqual([]);
      expect(queries.nodeChecks('n1').map((c) => c.value.CheckID)).toEqual(['serfHealth']);
      expect(store.keyIndex(CATALOG_INDEX, connectIndexKey('web'))).toBe(result.index);
    });

    it('a node check moves the index of every service on the node', async () => {
      await catalog.syncNode('n1', sync());
      const result = await catalog.setLiveness('n1', 'critical', 'Agent not live or unreachable');
      expect(result.changed).toBe(1);
      expect(store.keyIndex(CATALOG_INDEX, serviceIndexKey('web'))).toBe(result.index);
      expect(store.keyIndex(CATALOG_INDEX, connectIndexKey('web'))).toBe(result.index);
      expect(store.keyIndex(CATALOG_INDEX, serviceIndexKey('web-sidecar-proxy'))).toBe(result.index);
    });

    it('a write planned before another agent wrote the node is planned again, not applied over it', async () => {
      // Writer one's commit is held until writer two (another agent of a cluster) has written the node.
      let release = (): void => {};
      const gate = new Promise<void>((resolve) => (release = resolve));
      let held = false;
      const gated = new Proxy(store, {
        get(target, prop, receiver) {
          if (prop === 'commit' && !held) {
            held = true;
            return async (ops: Parameters<EmbeddedStore['commit']>[0]) => {
              await gate;
              return target.commit(ops);
            };
          }
          const value: unknown = Reflect.get(target, prop, receiver);
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
      const one = new Catalog(gated, 'dc1').syncNode('n1', sync({ services: [{ Service: 'a' }], checks: [] }));
      await new Catalog(store, 'dc1').syncNode('n1', sync({ services: [{ Service: 'b' }], checks: [] }));
      release();
      await one;
      expect(queries.nodeServices('n1').map((r) => r.value.ID)).toEqual(['a']);
    });

    it("a service renamed, or a proxy pointed elsewhere, leaves its old name's answers", async () => {
      await catalog.syncNode('n1', sync());
      await catalog.syncNode(
        'n1',
        sync({
          services: [
            { ID: 'web', Service: 'www', Port: 8080 },
            {
              Kind: 'connect-proxy',
              ID: 'web-sidecar-proxy',
              Service: 'web-sidecar-proxy',
              Port: 21000,
              Proxy: { DestinationServiceName: 'www' },
            },
          ],
        }),
      );
      expect(queries.instances('web', false)).toEqual([]);
      expect(queries.instances('web', true)).toEqual([]);
      expect(queries.instances('www', false).map((i) => i.service.value.ID)).toEqual(['web']);
      expect(queries.instances('www', true).map((i) => i.service.value.ID)).toEqual(['web-sidecar-proxy']);
      await catalog.syncNode('n1', sync({ services: [], checks: [] }));
      expect(queries.instances('www', false)).toEqual([]);
      expect(queries.instances('www', true)).toEqual([]);
    });

    it('refuses a check on a service the node does not run, writing nothing', async () => {
      const index = store.index;
      await expectAgentError(
        catalog.syncNode('n1', sync({ checks: [{ CheckID: 'x', ServiceID: 'nope' }] })),
        'CATALOG_CHECK_NO_SERVICE',
      );
      expect(store.index).toBe(index);
      expect(store.list(CATALOG_CHECKS, '')).toEqual([]);
    });
  });

  describe('register', () => {
    it('fills Consul defaults: service ID from its name, check ID from its name, status critical', async () => {
      await catalog.register(
        registration({ Service: { Service: 'api' }, Checks: [{ Name: 'api alive', ServiceID: 'api' }] }),
        everyone,
      );
      const [service] = queries.nodeServices('n1');
      expect(service?.value).toEqual(
        expect.objectContaining({ ID: 'api', Service: 'api', Tags: [], Weights: { Passing: 1, Warning: 1 } }),
      );
      const [check] = queries.nodeChecks('n1');
      expect(check?.value).toEqual(
        expect.objectContaining({ CheckID: 'api alive', Status: 'critical', ServiceName: 'api' }),
      );
      expect(queries.node('n1')?.value.Datacenter).toBe('dc1');
    });

    it.each([
      [registration({ Node: '' }), 'CATALOG_MISSING_NODE'],
      [registration({ Address: '' }), 'CATALOG_MISSING_ADDRESS'],
      [registration({ Service: { ID: 'x' } }), 'CATALOG_MISSING_SERVICE_NAME'],
      [registration({ Service: { Service: 'p', Kind: 'connect-proxy', Port: 1 } }), 'CATALOG_PROXY_DESTINATION'],
      [
        registration({ Service: { Service: 'p', Kind: 'connect-proxy', Proxy: { DestinationServiceName: 'web' } } }),
        'CATALOG_PROXY_PORT',
      ],
      [registration({ Checks: [{ Name: 'c', Status: 'sick' as never }] }), 'CATALOG_CHECK_STATUS'],
      [registration({ Datacenter: 'dc9' }), 'CATALOG_UNKNOWN_DATACENTER'],
    ] as const)('refuses a bad registration (%#): %s', async (reg, code) => {
      await expectAgentError(
        (async () => {
          await catalog.register(reg, everyone);
        })(),
        code,
      );
    });

    it('needs node:write for the node and service:write for the service', async () => {
      const nodeOnly = await identityWith('node "n1" { policy = "write" }');
      await expectAgentError(
        catalog.register(registration({ Service: { Service: 'web' } }), nodeOnly),
        'ACL_PERMISSION_DENIED',
      );
      const serviceOnly = await identityWith('service "web" { policy = "write" }');
      await expectAgentError(
        catalog.register(registration({ Service: { Service: 'web' } }), serviceOnly),
        'ACL_PERMISSION_DENIED',
      );
      const both = await identityWith('node "n1" { policy = "write" }\nservice "web" { policy = "write" }');
      await catalog.register(registration({ Service: { Service: 'web' } }), both);
      // The node is unchanged now: a service writer alone may add a service to it.
      await catalog.register(registration({ Service: { Service: 'web', Port: 81 } }), serviceOnly);
      expect(queries.nodeServices('n1').map((r) => r.value.Port)).toEqual([81]);
    });
  });

  describe('deregister', () => {
    it('removes a check, a service with its checks, or the whole node', async () => {
      await catalog.syncNode('n1', sync());
      await catalog.deregister({ Datacenter: '', Node: 'n1', ServiceID: 'web', CheckID: '' }, everyone);
      expect(queries.nodeServices('n1').map((r) => r.value.ID)).toEqual(['web-sidecar-proxy']);
      expect(queries.nodeChecks('n1')).toEqual([]);
      await catalog.deregister({ Datacenter: '', Node: 'n1', ServiceID: '', CheckID: '' }, everyone);
      expect(queries.node('n1')).toBeUndefined();
      expect(queries.nodeServices('n1')).toEqual([]);
    });

    it('needs service:write to remove a service', async () => {
      await catalog.syncNode('n1', sync());
      const nodeOnly = await identityWith('node "n1" { policy = "write" }');
      await expectAgentError(
        catalog.deregister({ Datacenter: '', Node: 'n1', ServiceID: 'web', CheckID: '' }, nodeOnly),
        'ACL_PERMISSION_DENIED',
      );
    });
  });
});
