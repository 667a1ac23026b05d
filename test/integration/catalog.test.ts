// /v1/catalog/* on the real agent: the agent's own node, register and deregister, Consul's shapes
// (key order and zero values), errors, ACL vetting and filtering, and the npm `consul` client.
import Consul from 'consul';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from './support/agent-process.js';

const MANAGEMENT = '5b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d';

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  readonly json: unknown;
}

function client(agent: AgentProcess, token?: string) {
  return async (method: string, path: string, body?: unknown): Promise<Answer> => {
    const res = await fetch(`${agent.url}${path}`, {
      method,
      headers: token === undefined ? {} : { 'X-Svc-Token': token },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, text, json };
  };
}

const WEB = {
  Node: 'node-b',
  Address: '10.1.0.2',
  TaggedAddresses: { wan: '198.51.100.2' },
  NodeMeta: { rack: 'r2' },
  Service: { Service: 'web', Tags: ['v1', 'blue'], Port: 8080, Meta: { version: '1' } },
  Check: { CheckID: 'web-http', Name: 'web http', ServiceID: 'web', Status: 'passing', Output: 'HTTP 200' },
};

describe('catalog on one agent', () => {
  let agent: AgentProcess;
  let api: ReturnType<typeof client>;
  beforeAll(async () => {
    agent = await startAgent({ args: ['-node', 'node-a'] });
    api = client(agent);
  });
  afterAll(() => agent.stop());

  it("lists the agent's own node with its address, and its serfHealth check passing", async () => {
    const nodes = await api('GET', '/v1/catalog/nodes');
    const self = (nodes.json as Record<string, unknown>[]).find((n) => n.Node === 'node-a');
    expect(self).toMatchObject({
      Node: 'node-a',
      Address: '127.0.0.1',
      Datacenter: 'dc1',
      TaggedAddresses: { lan: '127.0.0.1', lan_ipv4: '127.0.0.1', wan: '127.0.0.1', wan_ipv4: '127.0.0.1' },
    });
    expect(Object.keys(self as object)).toEqual([
      'ID',
      'Node',
      'Address',
      'Datacenter',
      'TaggedAddresses',
      'Meta',
      'CreateIndex',
      'ModifyIndex',
    ]);
    const checks = await api('GET', '/v1/health/node/node-a');
    expect(checks.json).toEqual([
      expect.objectContaining({ CheckID: 'serfHealth', Name: 'Serf Health Status', Status: 'passing' }),
    ]);
    expect(nodes.headers.get('x-svc-effective-consistency')).toBe('leader');
  });

  it("registers a node with a service and a check, and answers in Consul's ServiceNode shape", async () => {
    const put = await api('PUT', '/v1/catalog/register', WEB);
    expect([put.status, put.text]).toEqual([200, 'true']);
    const res = await api('GET', '/v1/catalog/service/web');
    const [entry] = res.json as Record<string, unknown>[];
    const service = entry as Record<string, unknown>;
    expect(Object.keys(service)).toEqual([
      'ID',
      'Node',
      'Address',
      'Datacenter',
      'TaggedAddresses',
      'NodeMeta',
      'ServiceKind',
      'ServiceID',
      'ServiceName',
      'ServiceTags',
      'ServiceAddress',
      'ServiceWeights',
      'ServiceMeta',
      'ServicePort',
      'ServiceEnableTagOverride',
      'ServiceProxy',
      'ServiceConnect',
      'CreateIndex',
      'ModifyIndex',
    ]);
    expect(service).toMatchObject({
      ID: '',
      Node: 'node-b',
      Address: '10.1.0.2',
      Datacenter: 'dc1',
      TaggedAddresses: { wan: '198.51.100.2' },
      NodeMeta: { rack: 'r2' },
      ServiceKind: '',
      ServiceID: 'web',
      ServiceName: 'web',
      ServiceTags: ['v1', 'blue'],
      ServiceAddress: '',
      ServiceWeights: { Passing: 1, Warning: 1 },
      ServiceMeta: { version: '1' },
      ServicePort: 8080,
      ServiceEnableTagOverride: false,
      ServiceProxy: { Mode: '', MeshGateway: {}, Expose: {} },
      ServiceConnect: {},
    });
    expect(Number(res.headers.get('x-svc-index'))).toBe(service.ModifyIndex);
  });

  it('lists services with their tags, a node with its services, and the datacenters', async () => {
    await api('PUT', '/v1/catalog/register', WEB);
    const services = (await api('GET', '/v1/catalog/services')).json as Record<string, string[]>;
    expect(services.web).toEqual(['blue', 'v1']);
    const node = (await api('GET', '/v1/catalog/node/node-b')).json as Record<string, Record<string, unknown>>;
    expect(Object.keys(node.Services ?? {})).toEqual(['web']);
    expect(Object.keys(node.Services?.web as object)).toEqual([
      'ID',
      'Service',
      'Tags',
      'Address',
      'Meta',
      'Port',
      'Weights',
      'EnableTagOverride',
      'Proxy',
      'Connect',
      'PeerName',
      'CreateIndex',
      'ModifyIndex',
    ]);
    const list = (await api('GET', '/v1/catalog/node-services/node-b')).json as { Services: unknown[] };
    expect(list.Services).toHaveLength(1);
    expect((await api('GET', '/v1/catalog/node/nowhere')).text).toBe('null');
    expect((await api('GET', '/v1/catalog/node-services/nowhere')).json).toEqual({ Node: null, Services: null });
    expect((await api('GET', '/v1/catalog/datacenters')).json).toEqual(['dc1']);
  });

  it('finds the sidecar proxy of a service through /v1/catalog/connect', async () => {
    await api('PUT', '/v1/catalog/register', {
      Node: 'node-b',
      Address: '10.1.0.2',
      TaggedAddresses: { wan: '198.51.100.2' },
      NodeMeta: { rack: 'r2' },
      Service: {
        Kind: 'connect-proxy',
        ID: 'web-sidecar-proxy',
        Service: 'web-sidecar-proxy',
        Port: 21000,
        Proxy: { DestinationServiceName: 'web', LocalServicePort: 8080 },
      },
    });
    const res = await api('GET', '/v1/catalog/connect/web');
    expect(res.json).toEqual([
      expect.objectContaining({
        ServiceKind: 'connect-proxy',
        ServiceID: 'web-sidecar-proxy',
        ServiceProxy: { DestinationServiceName: 'web', LocalServicePort: 8080, Mode: '', MeshGateway: {}, Expose: {} },
      }),
    ]);
  });

  it('filters with ?filter and ?node-meta, and refuses a bad filter with 400', async () => {
    await api('PUT', '/v1/catalog/register', WEB);
    const byMeta = await api('GET', '/v1/catalog/nodes?node-meta=rack:r2');
    expect((byMeta.json as { Node: string }[]).map((n) => n.Node)).toEqual(['node-b']);
    const byFilter = await api(
      'GET',
      `/v1/catalog/service/web?filter=${encodeURIComponent('ServiceMeta.version == "2"')}`,
    );
    expect(byFilter.json).toEqual([]);
    const tagged = await api('GET', `/v1/catalog/service/web?filter=${encodeURIComponent('blue in ServiceTags')}`);
    expect(tagged.json).toHaveLength(1);
    const bad = await api('GET', `/v1/catalog/nodes?filter=${encodeURIComponent('Nope == 1')}`);
    expect(bad.status).toBe(400);
  });

  it("wakes a blocking services list under ?node-meta when a node's Meta moves it out, with a later index", async () => {
    const node = { Node: 'node-m', Address: '10.1.0.9', NodeMeta: { rack: 'm1' } };
    await api('PUT', '/v1/catalog/register', { ...node, Service: { Service: 'meta-web', Port: 80 } });
    const first = await api('GET', '/v1/catalog/services?node-meta=rack:m1');
    expect(first.json).toEqual({ 'meta-web': [] });
    const index = Number(first.headers.get('x-svc-index'));
    const parked = api('GET', `/v1/catalog/services?node-meta=rack:m1&index=${index}&wait=5m`);
    // Only the node's Meta changes: its service row is the same.
    await api('PUT', '/v1/catalog/register', { ...node, NodeMeta: { rack: 'm2' } });
    const woken = await parked;
    expect(woken.json).toEqual({});
    expect(Number(woken.headers.get('x-svc-index'))).toBeGreaterThan(index);
  });

  it("refuses a bad registration with Consul's texts, writing nothing", async () => {
    const cases: [unknown, string][] = [
      [{ Address: '10.0.0.9' }, 'Must provide node'],
      [{ Node: 'x' }, 'Must provide address if SkipNodeUpdate is not set'],
      [{ Node: 'x', Address: 'a', Service: { Port: 1 } }, 'Must provide service name with ID ""'],
      [
        { Node: 'x', Address: 'a', Service: { Service: 's', Port: 'one' } },
        'Request decode failed: json: cannot unmarshal string into Go struct field RegisterRequest.Service.Port of type int',
      ],
      [{ Node: 'x', Address: 'a', Check: { Name: 'c', ServiceID: 'none' } }, 'Missing service registration'],
    ];
    for (const [body, text] of cases) {
      const res = await api('PUT', '/v1/catalog/register', body);
      expect([res.status, res.text]).toEqual([400, text]);
    }
    expect((await api('GET', '/v1/catalog/node/x')).text).toBe('null');
    expect((await api('GET', '/v1/catalog/service/')).text).toBe('Missing service name');
  });

  it('deregisters a service, then the whole node', async () => {
    await api('PUT', '/v1/catalog/register', { ...WEB, Node: 'node-c' });
    expect((await api('PUT', '/v1/catalog/deregister', { Node: 'node-c', ServiceID: 'web' })).text).toBe('true');
    expect((await api('GET', '/v1/health/node/node-c')).json).toEqual([]);
    await api('PUT', '/v1/catalog/deregister', { Node: 'node-c' });
    expect((await api('GET', '/v1/catalog/node/node-c')).text).toBe('null');
  });

  it('serves the npm consul client: catalog.register, catalog.service, catalog.nodes', async () => {
    const consul = new Consul({ host: '127.0.0.1', port: agent.port });
    await consul.catalog.register({
      node: 'node-d',
      address: '10.1.0.4',
      service: { service: 'api', port: 9000, tags: ['x'] },
    });
    const instances = await consul.catalog.service.nodes('api');
    expect(instances.map((i) => [i.Node, i.ServicePort, i.ServiceTags])).toEqual([['node-d', 9000, ['x']]]);
    const nodes = await consul.catalog.node.list();
    expect(nodes.map((n) => n.Node)).toEqual(expect.arrayContaining(['node-a', 'node-d']));
    expect(await consul.catalog.datacenters()).toEqual(['dc1']);
  });
});

describe('catalog ACLs', () => {
  let agent: AgentProcess;
  let asManagement: ReturnType<typeof client>;
  const tokens: Record<string, string> = {};
  const policyIds: Record<string, string> = {};
  beforeAll(async () => {
    agent = await startAgent({
      args: ['-node', 'acl-node'],
      config: { acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: MANAGEMENT } } },
    });
    asManagement = client(agent, MANAGEMENT);
    const policies: Record<string, string> = {
      'web-reader': 'service "web" { policy = "read" }\nnode_prefix "" { policy = "read" }',
      'web-no-nodes': 'service "web" { policy = "read" }',
      'node-writer': 'node "node-b" { policy = "write" }',
      'web-writer': 'node "node-b" { policy = "write" }\nservice "web" { policy = "write" }',
      'db-reader': 'service "db" { policy = "read" }\nnode_prefix "" { policy = "read" }',
    };
    for (const [name, rules] of Object.entries(policies)) {
      const policy = await asManagement('PUT', '/v1/acl/policy', { Name: name, Rules: rules });
      expect(policy.status).toBe(200);
      policyIds[name] = (policy.json as { ID: string }).ID;
      const token = await asManagement('PUT', '/v1/acl/token', { Policies: [{ Name: name }] });
      tokens[name] = (token.json as { SecretID: string }).SecretID;
    }
    await asManagement('PUT', '/v1/catalog/register', WEB);
    await asManagement('PUT', '/v1/catalog/register', {
      ...WEB,
      Service: { Service: 'db', Port: 5432 },
      Check: undefined,
    });
  });
  afterAll(() => agent.stop());

  it('needs node:write and service:write to register, answering 403 otherwise', async () => {
    const nodeOnly = await client(agent, tokens['node-writer'])('PUT', '/v1/catalog/register', WEB);
    expect(nodeOnly.status).toBe(403);
    expect(nodeOnly.text).toMatch(/lacks permission 'service:write' on "web"/);
    const anonymous = await client(agent)('PUT', '/v1/catalog/register', WEB);
    expect(anonymous.status).toBe(403);
    const writer = await client(agent, tokens['web-writer'])('PUT', '/v1/catalog/register', WEB);
    expect(writer.status).toBe(200);
  });

  it('filters lists silently by service:read and node:read, saying so in a header', async () => {
    const reader = client(agent, tokens['web-reader']);
    const services = await reader('GET', '/v1/catalog/services');
    expect(Object.keys(services.json as object)).toEqual(['web']);
    expect(services.headers.get('x-svc-results-filtered-by-acls')).toBe('true');
    const web = await reader('GET', '/v1/catalog/service/web');
    expect((web.json as unknown[]).length).toBe(1);
    expect(web.headers.get('x-svc-results-filtered-by-acls')).toBeNull();

    const noNodes = client(agent, tokens['web-no-nodes']);
    const hidden = await noNodes('GET', '/v1/catalog/service/web');
    expect([hidden.status, hidden.json]).toEqual([200, []]);
    expect(hidden.headers.get('x-svc-results-filtered-by-acls')).toBe('true');
    const health = await noNodes('GET', '/v1/health/service/web');
    expect(health.json).toEqual([]);
    expect(health.headers.get('x-svc-results-filtered-by-acls')).toBe('true');
    const nodes = await noNodes('GET', '/v1/catalog/nodes');
    expect(nodes.json).toEqual([]);
    expect(nodes.headers.get('x-svc-results-filtered-by-acls')).toBe('true');

    const all = await asManagement('GET', '/v1/catalog/services');
    // `consul`: the agent is a server, with Consul's service on its node.
    expect(Object.keys(all.json as object)).toEqual(['consul', 'db', 'web']);
    expect(all.headers.get('x-svc-results-filtered-by-acls')).toBeNull();
  });

  it("answers each token by its own rights, not another token's kept answer nor its old policy's", async () => {
    const webReader = client(agent, tokens['web-reader']);
    const dbReader = client(agent, tokens['db-reader']);
    for (let round = 0; round < 2; round++) {
      expect(Object.keys((await webReader('GET', '/v1/catalog/services')).json as object)).toEqual(['web']);
      expect(Object.keys((await dbReader('GET', '/v1/catalog/services')).json as object)).toEqual(['db']);
      expect((await webReader('GET', '/v1/health/service/web?passing')).json).toHaveLength(1);
      expect((await dbReader('GET', '/v1/health/service/web?passing')).json).toEqual([]);
    }
    // The catalog did not move, the token's rights did.
    const widened = await asManagement('PUT', `/v1/acl/policy/${policyIds['db-reader']}`, {
      Name: 'db-reader',
      Rules: 'service_prefix "" { policy = "read" }\nnode_prefix "" { policy = "read" }',
    });
    expect(widened.status).toBe(200);
    const services = await dbReader('GET', '/v1/catalog/services');
    expect(Object.keys(services.json as object)).toEqual(['consul', 'db', 'web']);
    expect(services.headers.get('x-svc-results-filtered-by-acls')).toBeNull();
    expect((await dbReader('GET', '/v1/health/service/web?passing')).json).toHaveLength(1);
  });
});
