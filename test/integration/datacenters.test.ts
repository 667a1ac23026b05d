// ?dc=, ?peer= and catalog/node's ?filter against a real agent (docs/decisions.md#datacenters):
// another datacenter is Consul's 500 `No path to datacenter` on every group of endpoints that reads
// dc, and the agent's own is served as without it; a peer is refused on the catalog and health
// reads; ?filter narrows /v1/catalog/node/:node's Services. python3-consul, which passes dc= on
// most calls, gets the error when built for another datacenter (its generic calls: kv, catalog,
// health, session; its event.fire passes no dc).
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerOf } from '../support/errors.js';
import { startAgent, type AgentProcess } from './support/agent-process.js';

const run = promisify(execFile);
const ENSURE = resolve(import.meta.dirname, '../../scripts/ensure-python-consul.sh');
const NODE = 'dc-node';

let agent: AgentProcess;

async function call(method: string, path: string, body?: string): Promise<[number, string]> {
  const res = await fetch(`${agent.url}${path}`, { method, ...(body === undefined ? {} : { body }) });
  return [res.status, await res.text()];
}

beforeAll(async () => {
  agent = await startAgent({
    args: ['-node', NODE],
    config: { datacenter: 'dc1', http_config: { header_brand: 'Consul' } },
  });
  for (const service of [
    { ID: 'web-1', Name: 'web', Tags: ['blue'], Port: 8080, Meta: { team: 'a' } },
    { ID: 'web-2', Name: 'web', Tags: ['green'], Port: 8081, Meta: { team: 'b' } },
    { ID: 'db-1', Name: 'db', Port: 5432 },
  ]) {
    const [status] = await call('PUT', '/v1/agent/service/register', JSON.stringify(service));
    expect(status).toBe(200);
  }
  // Anti-entropy puts them in the catalog: wait for the node to hold all three.
  for (;;) {
    const [, body] = await call('GET', `/v1/catalog/node/${NODE}?index=0`);
    const services = (JSON.parse(body) as { Services?: Record<string, unknown> } | null)?.Services ?? {};
    if (Object.keys(services).length >= 4) break;
    await new Promise((r) => setTimeout(r, 20));
  }
});
afterAll(() => agent?.stop());

/** One request per group of endpoints that reads ?dc in Consul. */
const DC_READERS: readonly [string, string, string?][] = [
  ['GET', '/v1/kv/some/key'],
  ['PUT', '/v1/kv/some/key', 'v'],
  ['DELETE', '/v1/kv/some/key'],
  ['PUT', '/v1/txn', JSON.stringify([{ KV: { Verb: 'get', Key: 'some/key' } }])],
  ['GET', '/v1/catalog/nodes'],
  ['GET', '/v1/catalog/services'],
  ['GET', '/v1/catalog/service/web'],
  ['GET', `/v1/catalog/node/${NODE}`],
  ['GET', `/v1/catalog/node-services/${NODE}`],
  ['GET', '/v1/health/service/web'],
  ['GET', '/v1/health/checks/web'],
  ['GET', `/v1/health/node/${NODE}`],
  ['GET', '/v1/health/state/any'],
  ['GET', '/v1/session/list'],
  ['PUT', '/v1/session/create', '{}'],
  ['GET', `/v1/session/node/${NODE}`],
  ['PUT', '/v1/event/fire/deploy', ''],
  ['GET', '/v1/connect/intentions'],
  ['GET', '/v1/connect/ca/roots'],
  ['GET', '/v1/agent/connect/ca/roots'],
  ['GET', '/v1/agent/connect/ca/leaf/web'],
  ['GET', '/v1/status/leader'],
  ['GET', '/v1/config/service-defaults'],
  ['GET', '/v1/snapshot'],
];

describe('?dc=', () => {
  it('answers 500 No path to datacenter for another datacenter on every group that reads dc', async () => {
    const noPath = answerOf('DC_NO_PATH');
    expect(noPath).toEqual([500, 'No path to datacenter']);
    for (const [method, path, body] of DC_READERS)
      expect([method, path, await call(method, `${path}?dc=dc2`, body)]).toEqual([method, path, noPath]);
    // Nothing was written meanwhile.
    expect((await call('GET', '/v1/kv/some/key'))[0]).toBe(404);
    expect(JSON.parse((await call('GET', '/v1/session/list'))[1])).toEqual([]);
    expect(JSON.parse((await call('GET', '/v1/event/list'))[1])).toEqual([]);
  });

  it("serves the agent's own datacenter as it serves no dc", async () => {
    for (const [method, path, body] of DC_READERS.filter(([m]) => m === 'GET')) {
      const [withDc] = await call(method, `${path}?dc=dc1`, body);
      const [without] = await call(method, path, body);
      expect([path, withDc]).toEqual([path, without]);
    }
    expect(await call('PUT', '/v1/kv/own?dc=dc1', 'v')).toEqual([200, 'true']);
  });

  it("is ignored where Consul's handler does not read it: the agent's own endpoints, event list, datacenters", async () => {
    for (const path of ['/v1/agent/self', '/v1/agent/services', '/v1/agent/members', '/v1/event/list'])
      expect([path, (await call('GET', `${path}?dc=dc2`))[0]]).toEqual([path, 200]);
    expect(await call('GET', '/v1/catalog/datacenters?dc=dc2')).toEqual([200, '["dc1"]']);
  });
});

describe('?peer=', () => {
  it("is refused on the catalog and health reads, where Consul reads it, in Consul's words for peering turned off", async () => {
    const refused = answerOf('PEERING_UNSUPPORTED');
    expect(refused).toEqual([400, 'peering must be enabled to use this endpoint']);
    for (const path of [
      '/v1/catalog/nodes',
      '/v1/catalog/services',
      '/v1/catalog/service/web',
      `/v1/catalog/node/${NODE}`,
      '/v1/health/service/web',
      '/v1/health/connect/web',
      `/v1/health/node/${NODE}`,
      '/v1/health/checks/web',
    ])
      expect([path, await call('GET', `${path}?peer=other-cluster`)]).toEqual([path, refused]);
    // An empty peer is the local cluster, as in Consul.
    expect((await call('GET', '/v1/catalog/nodes?peer='))[0]).toBe(200);
  });
});

describe('?filter on /v1/catalog/node/:node', () => {
  const servicesOf = async (query: string): Promise<string[]> => {
    const [status, body] = await call('GET', `/v1/catalog/node/${NODE}?${query}`);
    expect([status, query]).toEqual([200, query]);
    return Object.keys((JSON.parse(body) as { Services: Record<string, unknown> }).Services).sort();
  };

  it("keeps the services the expression matches, over Consul's NodeService fields", async () => {
    expect(await servicesOf(`filter=${encodeURIComponent('Service == web')}`)).toEqual(['web-1', 'web-2']);
    expect(await servicesOf(`filter=${encodeURIComponent('blue in Tags')}`)).toEqual(['web-1']);
    expect(await servicesOf(`filter=${encodeURIComponent('Meta.team == b or Port == 5432')}`)).toEqual([
      'db-1',
      'web-2',
    ]);
    expect(await servicesOf(`filter=${encodeURIComponent('Service == nothing')}`)).toEqual([]);
    expect((await servicesOf('filter=')).length).toBe(4);
  });

  it('leaves the node itself whole, and node-services filters its list the same way', async () => {
    const [, body] = await call('GET', `/v1/catalog/node/${NODE}?filter=${encodeURIComponent('Service == db')}`);
    expect((JSON.parse(body) as { Node: { Node: string } }).Node.Node).toBe(NODE);
    const [, list] = await call(
      'GET',
      `/v1/catalog/node-services/${NODE}?filter=${encodeURIComponent('Service == db')}`,
    );
    expect((JSON.parse(list) as { Services: { ID: string }[] }).Services.map((s) => s.ID)).toEqual(['db-1']);
  });

  it('refuses a malformed expression and a field a NodeService does not have', async () => {
    const [bad] = await call('GET', `/v1/catalog/node/${NODE}?filter=${encodeURIComponent('Service ==')}`);
    const [unknown] = await call('GET', `/v1/catalog/node/${NODE}?filter=${encodeURIComponent('ServiceName == web')}`);
    expect([bad, unknown]).toEqual([400, 400]);
  });
});

// python-consul 0.7.1's calls each pass dc= (the client's, else none): built for another datacenter,
// every one fails with the agent's 500 and its text; built for dc1, each is served.
const PROGRAM = `
import json, sys
import consul
port = int(sys.argv[1])
calls = [
    ('kv.get', lambda c: c.kv.get('py/dc')),
    ('kv.put', lambda c: c.kv.put('py/dc', 'v')),
    ('catalog.nodes', lambda c: c.catalog.nodes()),
    ('catalog.services', lambda c: c.catalog.services()),
    ('catalog.node', lambda c: c.catalog.node('${NODE}')),
    ('health.service', lambda c: c.health.service('web')),
    ('session.list', lambda c: c.session.list()),
    ('session.create', lambda c: c.session.create(name='py-dc')),
]
for dc in ('elsewhere', 'dc1'):
    c = consul.Consul(host='127.0.0.1', port=port, dc=dc)
    for name, fn in calls:
        try:
            fn(c)
            out = 'ok'
        except consul.ConsulException as e:
            out = str(e)
        print(json.dumps({'dc': dc, 'call': name, 'out': out}), flush=True)
`;

describe('python3-consul with dc set', () => {
  it(
    'gets No path to datacenter from every call for another datacenter, and answers for its own',
    { timeout: 300_000 },
    async () => {
      const python = (await run(ENSURE, [])).stdout.trim();
      const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(CONSUL|SVC)_/.test(name)));
      const { stdout } = await run(python, ['-c', PROGRAM, String(agent.port)], { env });
      const lines = stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { dc: string; call: string; out: string });
      expect(lines).toHaveLength(16);
      for (const line of lines) {
        if (line.dc === 'elsewhere') expect(line).toEqual({ ...line, out: '500 No path to datacenter' });
        else expect(line).toEqual({ ...line, out: 'ok' });
      }
    },
  );
});
