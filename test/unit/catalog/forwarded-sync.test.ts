// A client agent's sync (docs/decisions.md D26) sent as catalog requests through the HTTP layer's
// own decoders, as a server runs them: the node it leaves equals the one a direct sync writes, and
// the next sync of an unchanged node sends nothing (an entry that came back through JSON compares
// equal to the agent's), whatever the services hold (a sidecar with upstreams, tagged addresses,
// HTTP and TTL checks, a node check).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { allowAllAuthorizer } from '../../../src/acl/authorizer.js';
import type { Identity } from '../../../src/acl/identity.js';
import { Catalog, type NodeSync, type SyncScope } from '../../../src/catalog/catalog.js';
import { ForwardedNodeSync } from '../../../src/catalog/forwarded-sync.js';
import { readNodeState } from '../../../src/catalog/node-state.js';
import { silentLogger } from '../../../src/core/log.js';
import { decodeDeregistration, decodeRegistration } from '../../../src/http/handlers/catalog-body.js';
import { checkEntry, serviceEntry } from '../../../src/local/catalog-entries.js';
import { readCheckDefinition, readServiceDefinition } from '../../../src/local/definition.js';
import { LocalState } from '../../../src/local/local-state.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../../src/state/embedded/index.js';

const NODE = 'client-1';
const everyone: Identity = { authorizer: allowAllAuthorizer, accessorId: '', anonymous: true, namespace: 'default' };
const fields = {
  ID: 'id-1',
  Address: '10.0.0.1',
  TaggedAddresses: { lan: '10.0.0.1', wan: '10.0.0.1' },
  Meta: { 'consul-network-segment': '' },
};
const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));

describe('ForwardedNodeSync', () => {
  let direct: EmbeddedStore;
  let forwarded: EmbeddedStore;
  let directCatalog: Catalog;
  let sync: ForwardedNodeSync;
  let state: LocalState;

  beforeEach(async () => {
    direct = await openEmbeddedStore({ log: silentLogger });
    forwarded = await openEmbeddedStore({ log: silentLogger });
    directCatalog = new Catalog(direct, 'dc1');
    const server = new Catalog(forwarded, 'dc1');
    sync = new ForwardedNodeSync(forwarded, 'dc1', {
      register: async (reg) => void (await server.register(decodeRegistration(json(reg)), everyone)),
      deregister: async (dereg) => void (await server.deregister(decodeDeregistration(json(dereg)), everyone)),
    });
    state = new LocalState(NODE);
    state.addService(
      readServiceDefinition({
        ID: 'web-1',
        Name: 'web',
        Tags: ['v1'],
        Port: 8080,
        Meta: { team: 'a' },
        TaggedAddresses: { lan: { Address: '10.0.0.1', Port: 8080 } },
        Weights: { Passing: 3, Warning: 1 },
        Check: { CheckID: 'web-http', HTTP: 'http://127.0.0.1:8080/h', Interval: '10s', Timeout: '2s' },
        Connect: {
          SidecarService: {
            Proxy: { Upstreams: [{ DestinationName: 'db', LocalBindPort: 9191, Config: { protocol: 'tcp' } }] },
          },
        },
      }),
    );
    state.addService(readServiceDefinition({ Name: 'pay', Port: 7000, Connect: { Native: true } }));
    state.addCheck(readCheckDefinition({ ID: 'disk', Name: 'disk', TTL: '1m', Status: 'passing' }));
  });
  afterEach(async () => {
    await direct.close();
    await forwarded.close();
  });

  const desired = (): NodeSync => {
    const { services, checks } = state.snapshot();
    return { node: fields, services: services.map(serviceEntry), checks: checks.map(checkEntry) };
  };
  const both = async (scope?: SyncScope): Promise<number> => {
    await directCatalog.syncNode(NODE, desired(), scope);
    return sync.syncNode(NODE, desired(), scope);
  };
  const expectSame = (): void => expect(readNodeState(forwarded, NODE)).toEqual(readNodeState(direct, NODE));

  it('leaves the node a direct sync writes, and sends nothing for an unchanged node', async () => {
    expect(await both()).toBeGreaterThan(0);
    expectSame();
    expect(await sync.syncNode(NODE, desired())).toBe(0);
    // Rows as written equal their JSON (etcd's view holds them parsed): a full sync compares them equal.
    const written = readNodeState(direct, NODE);
    const rows = [written.node, ...written.services.values(), ...written.checks.values()];
    expect(rows).toStrictEqual(JSON.parse(JSON.stringify(rows)));
  });

  it('sends only what changed, removals included', async () => {
    await both();
    state.updateCheck('disk', 'critical', 'full');
    state.removeService('pay');
    expect(await both({ services: new Set(['pay']), checks: new Set(['disk']) })).toBe(2);
    expectSame();
    expect(await sync.syncNode(NODE, desired())).toBe(0);
  });
});
