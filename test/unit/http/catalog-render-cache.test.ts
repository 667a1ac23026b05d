// The catalog and health handlers over a real embedded store, with the rendered-answer cache
// (src/http/render-cache.ts) and without it: the same bytes through writes that change the
// answers, a token never served another token's filtered answer, and parked reads of one view
// rendered once per wake-up.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compileAuthorizer } from '../../../src/acl/authorizer.js';
import type { Identity } from '../../../src/acl/identity.js';
import { parseRules } from '../../../src/acl/rules/parse.js';
import { Catalog, type NodeSync } from '../../../src/catalog/catalog.js';
import { CatalogQueries } from '../../../src/catalog/queries.js';
import { FakeClock } from '../../../src/core/clock.js';
import { silentLogger } from '../../../src/core/log.js';
import { BlockingQueries, Parked } from '../../../src/http/blocking.js';
import { brandHeaders } from '../../../src/http/brand.js';
import { errorReply } from '../../../src/http/dispatch.js';
import { catalogRoutes } from '../../../src/http/handlers/catalog.js';
import { healthRoutes } from '../../../src/http/handlers/health.js';
import { RenderCache } from '../../../src/http/render-cache.js';
import type { Reply } from '../../../src/http/reply.js';
import type { Handler, MethodSpec, Route } from '../../../src/http/route-types.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../../src/state/embedded/index.js';
import { request } from './support.js';
import { everyone, identityWith as identityOf } from '../../support/identities.js';

/** Every identity here has the same accessor, so only its rights tell them apart. */
const identityWith = (rules: string): Promise<Identity> => identityOf(rules, 'same-accessor');

function node(rack: string): NodeSync['node'] {
  return { ID: '', Address: '10.0.0.1', TaggedAddresses: {}, Meta: { rack } };
}

/** Node `name` running `web` (with a check in `status`), its sidecar, and `api`. */
function instances(rack: string, status: 'passing' | 'critical'): NodeSync {
  return {
    node: node(rack),
    services: [
      { Service: 'web', Port: 8080, Tags: ['v1'] },
      {
        Kind: 'connect-proxy',
        ID: 'web-sidecar-proxy',
        Service: 'web-sidecar-proxy',
        Port: 21000,
        Proxy: { DestinationServiceName: 'web' },
      },
      { Service: 'api', Port: 9090, Tags: ['v2'] },
    ],
    checks: [
      { CheckID: 'web-http', Name: 'web', ServiceID: 'web', Status: status, Output: status },
      { CheckID: 'node-ok', Name: 'node', Status: 'passing', Output: 'fine' },
    ],
  };
}

/** Every catalog and health read, with the parameters that shape their answers. */
const READS: readonly string[] = [
  '/v1/health/service/web',
  '/v1/health/service/web?passing',
  '/v1/health/service/web?tag=v1&node-meta=rack:r1',
  '/v1/health/service/web?filter=Service.Port%20%3D%3D%208080&pretty',
  '/v1/health/connect/web?passing',
  '/v1/health/checks/web',
  '/v1/health/node/n1',
  '/v1/health/state/any?node-meta=rack:r1',
  '/v1/health/state/critical',
  '/v1/catalog/services',
  '/v1/catalog/services?node-meta=rack:r2',
  '/v1/catalog/services?filter=NodeMeta.rack%20%3D%3D%20r1',
  '/v1/catalog/service/web?tag=v1',
  '/v1/catalog/connect/web',
  '/v1/catalog/nodes?node-meta=rack:r1',
  '/v1/catalog/node/n1',
  '/v1/catalog/node-services/n2',
];

describe('catalog and health answers kept until their data moves', () => {
  let store: EmbeddedStore;
  let catalog: Catalog;
  let clock: FakeClock;
  let blocking: BlockingQueries;

  beforeEach(async () => {
    clock = new FakeClock(0);
    store = await openEmbeddedStore({ log: silentLogger, clock });
    catalog = new Catalog(store, 'dc1');
    blocking = new BlockingQueries(store, clock, (err, path) => errorReply(err, silentLogger, path));
  });
  afterEach(() => store.close());

  function routesWith(renders: RenderCache): Route[] {
    const deps = {
      store,
      queries: new CatalogQueries(store),
      blocking,
      brand: brandHeaders('Consul'),
      limits: { defaultQueryTimeMs: 300_000, maxQueryTimeMs: 600_000 },
      random: () => 0,
      renders,
    };
    return [...healthRoutes(deps), ...catalogRoutes({ ...deps, catalog, datacenter: 'dc1' })];
  }

  /** GET `url` through the route table's handler, as the guard would call it with `identity`. */
  function get(routes: Route[], url: string, identity: Identity): Reply | Parked {
    const [path = '', rawQuery = ''] = url.split('?');
    const route = routes.find((r) => (r.prefix === true ? path.startsWith(r.path) : path === r.path));
    if (route === undefined) throw new Error(`no route for ${path}`);
    const handler = (route.methods.GET as MethodSpec).handler as Handler;
    const rest = route.prefix === true ? decodeURIComponent(path.slice(route.path.length)) : '';
    return handler(request({ path, rawQuery }, rest), identity, undefined) as Reply | Parked;
  }

  const now = (routes: Route[], url: string, identity: Identity): Reply => {
    const out = get(routes, url, identity);
    if (out instanceof Parked) throw new Error(`${url} parked`);
    return out;
  };

  /** Status, headers and body bytes, for comparing replies exactly. */
  const bytesOf = (reply: Reply): unknown => ({
    status: reply.status,
    headers: reply.headers,
    contentType: reply.contentType,
    body: Buffer.from(reply.body ?? '').toString('latin1'),
  });

  const json = (reply: Reply): unknown => JSON.parse(Buffer.from(reply.body ?? '').toString('utf8'));
  const filteredHeader = (reply: Reply): string | undefined =>
    reply.headers?.find(([name]) => name === 'X-Consul-Results-Filtered-By-ACLs')?.[1];

  it('answers byte for byte as without the cache, read twice, after each write that moves an answer', async () => {
    const renders = new RenderCache({ maxBytes: 1 << 20 });
    const cached = routesWith(renders);
    const uncached = routesWith(new RenderCache({ maxBytes: 0 }));
    const limited = await identityWith('service "web" { policy = "read" }\nnode "n1" { policy = "read" }');
    const writes: (() => Promise<unknown>)[] = [
      () => catalog.syncNode('n1', instances('r1', 'passing')),
      () => catalog.syncNode('n2', instances('r2', 'passing')),
      () => catalog.syncNode('n1', instances('r1', 'critical')),
      // Node Meta only: the services and checks tables stay as they were.
      () => catalog.syncNode('n2', instances('r1', 'passing')),
      () => catalog.syncNode('n1', { node: node('r2'), services: [{ Service: 'db' }], checks: [] }),
      () => catalog.removeNode('n2'),
    ];
    let hits = 0;
    for (const write of writes) {
      await write();
      for (const identity of [everyone, limited]) {
        for (const url of READS) {
          const expected = bytesOf(now(uncached, url, identity));
          expect(bytesOf(now(cached, url, identity)), url).toEqual(expected);
          const before = renders.renders;
          expect(bytesOf(now(cached, url, identity)), url).toEqual(expected);
          if (renders.renders === before) hits++;
        }
      }
    }
    // Every second read was a lookup, not a render.
    expect(hits).toBe(writes.length * 2 * READS.length);
  });

  it("never serves one token's filtered answer to a token with other service:read rights", async () => {
    const renders = new RenderCache({ maxBytes: 1 << 20 });
    const routes = routesWith(renders);
    await catalog.syncNode('n1', instances('r1', 'passing'));
    const webReader = await identityWith('service "web" { policy = "read" }\nnode_prefix "" { policy = "read" }');
    const apiReader = await identityWith('service "api" { policy = "read" }\nnode_prefix "" { policy = "read" }');

    const web = now(routes, '/v1/catalog/services', webReader);
    expect(json(web)).toEqual({ web: ['v1'] });
    const rendered = renders.renders;
    expect(json(now(routes, '/v1/catalog/services', webReader))).toEqual({ web: ['v1'] });
    expect(renders.renders).toBe(rendered);

    const api = now(routes, '/v1/catalog/services', apiReader);
    expect(json(api)).toEqual({ api: ['v2'] });
    expect(filteredHeader(api)).toBe('true');
    expect(json(now(routes, '/v1/health/service/web', webReader))).toHaveLength(1);
    const hidden = now(routes, '/v1/health/service/web', apiReader);
    expect(json(hidden)).toEqual([]);
    expect(filteredHeader(hidden)).toBe('true');
    expect(json(now(routes, '/v1/health/service/web', webReader))).toHaveLength(1);
  });

  it('shares one render among tokens that read every service and node, sidecars by identity too', async () => {
    const renders = new RenderCache({ maxBytes: 1 << 20 });
    const routes = routesWith(renders);
    await catalog.syncNode('n1', instances('r1', 'passing'));
    const sidecar = (service: string): Identity => ({
      authorizer: compileAuthorizer({
        datacenter: 'dc1',
        defaultPolicy: 'deny',
        policies: [],
        serviceIdentities: [{ ServiceName: service }],
      }),
      accessorId: `sidecar-${service}`,
      anonymous: false,
      namespace: 'default',
    });
    const readsAll = await identityWith('service_prefix "" { policy = "read" }\nnode_prefix "" { policy = "read" }');
    const url = '/v1/health/connect/web?passing';
    const whole = bytesOf(now(routes, url, everyone));
    const before = renders.renders;
    for (const identity of [sidecar('web'), sidecar('api'), readsAll])
      expect(bytesOf(now(routes, url, identity))).toEqual(whole);
    expect(renders.renders).toBe(before);
    // One service denied: a view of its own, rendered for it.
    const allButApi = await identityWith(
      'service_prefix "" { policy = "read" }\nservice "api" { policy = "deny" }\nnode_prefix "" { policy = "read" }',
    );
    expect(json(now(routes, '/v1/catalog/services', allButApi))).toEqual({ web: ['v1'], 'web-sidecar-proxy': [] });
    expect(renders.renders).toBe(before + 1);
  });

  it('renders parked reads of one ACL view once per wake-up, whoever holds the view', async () => {
    const renders = new RenderCache({ maxBytes: 1 << 20 });
    const routes = routesWith(renders);
    const first = await catalog.syncNode('n1', instances('r1', 'passing'));
    const webReader = await identityWith('service "web" { policy = "read" }\nnode_prefix "" { policy = "read" }');
    // Two tokens on one authorizer (ACLs off: every request holds the allow-all one).
    const other: Identity = { ...everyone, accessorId: 'other' };
    const url = `/v1/health/service/web?index=${first.index}`;
    const parked = [everyone, other, everyone, webReader, webReader].map((identity) => {
      const out = get(routes, url, identity);
      if (!(out instanceof Parked)) throw new Error('answered at once');
      return out.wait();
    });
    const before = renders.renders;
    await catalog.syncNode('n1', instances('r1', 'critical'));
    const replies = await Promise.all(parked);
    expect(renders.renders - before).toBe(2);
    for (const reply of replies) {
      const [entry] = json(reply) as { Checks: { Status: string }[] }[];
      expect(entry?.Checks.map((c) => c.Status)).toEqual(['passing', 'critical']);
    }
  });
});

describe('RenderCache', () => {
  const body = (bytes: number) => ({ body: new Uint8Array(bytes), filtered: false });

  it('renders again only when the stamp moves', () => {
    const cache = new RenderCache({ maxBytes: 1 << 20 });
    let calls = 0;
    const render = () => (calls++, body(10));
    cache.answer('k', 5, render);
    cache.answer('k', 5, render);
    expect(calls).toBe(1);
    expect(cache.answer('k', 6, render).stamp).toBe(6);
    expect(calls).toBe(2);
  });

  it('holds at most its bound in bytes, and keeps no answer above a quarter of it', () => {
    const cache = new RenderCache({ maxBytes: 100_000 });
    for (let i = 0; i < 50; i++) cache.answer(`k${i}`, 1, () => body(10_000));
    expect(cache.bytes).toBeGreaterThan(0);
    expect(cache.bytes).toBeLessThanOrEqual(100_000);
    let calls = 0;
    cache.answer('huge', 1, () => (calls++, body(30_000)));
    cache.answer('huge', 1, () => (calls++, body(30_000)));
    expect(calls).toBe(2);
  });

  it('gives each authorizer its own view, and the same authorizer the same one', async () => {
    const cache = new RenderCache({ maxBytes: 1 });
    const a = compileAuthorizer({ datacenter: 'dc1', defaultPolicy: 'deny', policies: [await parseRules('')] });
    const b = compileAuthorizer({ datacenter: 'dc1', defaultPolicy: 'deny', policies: [await parseRules('')] });
    expect(cache.viewOf(a)).toBe(cache.viewOf(a));
    expect(cache.viewOf(a)).not.toBe(cache.viewOf(b));
  });
});
