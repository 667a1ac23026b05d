// /v1/health/* on the real agent: Consul's CheckServiceNode shape, ?passing, ?tag, ?filter,
// ?node-meta, the mesh view (/connect), checks by state, blocking reads that wake on their own
// answer's change and not on unrelated writes, and the npm `consul` client's health.service.
import Consul from 'consul';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from './support/agent-process.js';

interface Entry {
  Node: Record<string, unknown>;
  Service: Record<string, unknown>;
  Checks: Record<string, unknown>[];
}

function registration(node: string, status: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    Node: node,
    Address: `10.2.0.${node.length}`,
    NodeMeta: { zone: node === 'h1' ? 'a' : 'b' },
    Service: { ID: `web-${node}`, Service: 'web', Tags: [node === 'h1' ? 'primary' : 'replica'], Port: 8080 },
    Check: { CheckID: `web-${node}-http`, Name: 'http', ServiceID: `web-${node}`, Status: status, Output: status },
    ...overrides,
  };
}

describe('health on one agent', () => {
  let agent: AgentProcess;
  const get = async (path: string): Promise<{ status: number; headers: Headers; json: unknown; text: string }> => {
    const res = await fetch(`${agent.url}${path}`);
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, json, text };
  };
  const put = async (path: string, body: unknown): Promise<void> => {
    const res = await fetch(`${agent.url}${path}`, { method: 'PUT', body: JSON.stringify(body) });
    expect(res.status, await res.clone().text()).toBe(200);
  };

  beforeAll(async () => {
    agent = await startAgent({ args: ['-node', 'self'] });
    await put('/v1/catalog/register', registration('h1', 'passing'));
    await put('/v1/catalog/register', registration('h2', 'critical'));
  });
  afterAll(() => agent.stop());

  it("answers Consul's CheckServiceNode shape: Node, Service, then the node's checks and the service's", async () => {
    await put('/v1/catalog/register', {
      Node: 'h1',
      Address: '10.2.0.2',
      NodeMeta: { zone: 'a' },
      Check: { CheckID: 'disk', Name: 'disk', Status: 'passing' },
    });
    const res = await get('/v1/health/service/web');
    const entries = res.json as Entry[];
    expect(entries.map((e) => e.Service.ID)).toEqual(['web-h1', 'web-h2']);
    const [first] = entries as [Entry];
    expect(Object.keys(first)).toEqual(['Node', 'Service', 'Checks']);
    expect(first.Checks.map((c) => c.CheckID)).toEqual(['disk', 'web-h1-http']);
    expect(Object.keys(first.Checks[1] as object)).toEqual([
      'Node',
      'CheckID',
      'Name',
      'Status',
      'Notes',
      'Output',
      'ServiceID',
      'ServiceName',
      'ServiceTags',
      'Type',
      'Interval',
      'Timeout',
      'ExposedPort',
      'Definition',
      'CreateIndex',
      'ModifyIndex',
    ]);
    expect(first.Checks[1]).toMatchObject({ ServiceName: 'web', ServiceTags: ['primary'], Definition: {} });
    expect(res.headers.get('x-svc-effective-consistency')).toBe('leader');
  });

  it('?passing drops instances with a check not passing; ?tag, ?node-meta and ?filter narrow the list', async () => {
    const ids = async (query: string): Promise<unknown[]> =>
      ((await get(`/v1/health/service/web${query}`)).json as Entry[]).map((e) => e.Service.ID);
    expect(await ids('?passing')).toEqual(['web-h1']);
    expect(await ids('?passing=false')).toEqual(['web-h1', 'web-h2']);
    expect(await ids('?tag=replica')).toEqual(['web-h2']);
    expect(await ids('?node-meta=zone:b')).toEqual(['web-h2']);
    expect(
      await ids(`?filter=${encodeURIComponent('Service.Tags contains "primary" and Node.Meta.zone == a')}`),
    ).toEqual(['web-h1']);
    expect(await ids(`?filter=${encodeURIComponent('not (Node.Node == h1)')}`)).toEqual(['web-h2']);
    expect(await ids(`?filter=${encodeURIComponent('Checks.Status == critical')}`)).toEqual(['web-h2']);
    expect(await ids(`?filter=${encodeURIComponent('not Checks.Status == critical')}`)).toEqual(['web-h1']);
    const bad = await get('/v1/health/service/web?passing=maybe');
    expect([bad.status, bad.text]).toEqual([400, 'Invalid value for ?passing']);
  });

  it('lists checks by node, by service and by state', async () => {
    const byService = (await get('/v1/health/checks/web')).json as Record<string, unknown>[];
    expect(byService.map((c) => c.CheckID)).toEqual(['web-h1-http', 'web-h2-http']);
    const critical = (await get('/v1/health/state/critical')).json as Record<string, unknown>[];
    expect(critical.map((c) => c.CheckID)).toEqual(['web-h2-http']);
    const any = (await get('/v1/health/state/any')).json as Record<string, unknown>[];
    expect(any.map((c) => c.CheckID)).toEqual(expect.arrayContaining(['serfHealth', 'web-h1-http', 'web-h2-http']));
    const bad = await get('/v1/health/state/sick');
    expect([bad.status, bad.text]).toEqual([400, 'Bad check state']);
    expect((await get('/v1/health/node/nowhere')).json).toEqual([]);
    const conflict = await get('/v1/health/service/web?stale&consistent');
    expect([conflict.status, conflict.text]).toEqual([
      400,
      'Cannot specify ?stale with ?consistent, conflicting semantics.',
    ]);
    expect((await get('/v1/health/service/web?stale')).headers.get('x-svc-effective-consistency')).toBe('stale');
  });

  it("finds a service's proxies and Connect-native instances through /v1/health/connect", async () => {
    await put('/v1/catalog/register', {
      Node: 'h1',
      Address: '10.2.0.2',
      NodeMeta: { zone: 'a' },
      Service: {
        Kind: 'connect-proxy',
        ID: 'web-h1-sidecar-proxy',
        Service: 'web-sidecar-proxy',
        Port: 21000,
        Proxy: { DestinationServiceName: 'web', LocalServicePort: 8080 },
      },
    });
    await put('/v1/catalog/register', {
      Node: 'h3',
      Address: '10.2.0.3',
      Service: { ID: 'web-native', Service: 'web', Port: 9443, Connect: { Native: true } },
    });
    const entries = (await get('/v1/health/connect/web?passing')).json as Entry[];
    expect(entries.map((e) => [e.Service.ID, e.Service.Kind ?? '', e.Service.Connect])).toEqual([
      ['web-h1-sidecar-proxy', 'connect-proxy', {}],
      ['web-native', '', { Native: true }],
    ]);
  });

  it("wakes a blocking health read on its service's check change, not on unrelated writes", async () => {
    const first = await get('/v1/health/service/web');
    const index = Number(first.headers.get('x-svc-index'));
    let answered = false;
    const parked = fetch(`${agent.url}/v1/health/service/web?index=${index}&wait=5m`).then(async (res) => {
      answered = true;
      return { index: Number(res.headers.get('x-svc-index')), entries: (await res.json()) as Entry[] };
    });
    // Unrelated writes: another service, another node's node check, a KV key.
    await put('/v1/catalog/register', { Node: 'h9', Address: '10.2.0.9', Service: { Service: 'db', Port: 5432 } });
    await put('/v1/catalog/register', {
      Node: 'h9',
      Address: '10.2.0.9',
      Check: { CheckID: 'mem', Name: 'mem', Status: 'warning' },
    });
    await fetch(`${agent.url}/v1/kv/unrelated`, { method: 'PUT', body: 'x' });
    // A later read of another path sees the agent after the writes' watch callbacks ran.
    const db = await get('/v1/health/service/db');
    expect(Number(db.headers.get('x-svc-index'))).toBeGreaterThan(index);
    expect(answered).toBe(false);
    await put('/v1/catalog/register', registration('h2', 'passing'));
    const woken = await parked;
    expect(woken.index).toBeGreaterThan(index);
    const h2 = woken.entries.find((e) => e.Service.ID === 'web-h2');
    expect(h2?.Checks.map((c) => c.Status)).toEqual(['passing']);
  });

  it("wakes a blocking checks-by-state read under ?node-meta when a node's Meta moves it out, with a later index", async () => {
    const node = { Node: 'meta-h', Address: '10.2.0.7', NodeMeta: { zone: 'm1' } };
    await put('/v1/catalog/register', { ...node, Check: { CheckID: 'meta-disk', Name: 'disk', Status: 'critical' } });
    const first = await get('/v1/health/state/critical?node-meta=zone:m1');
    expect((first.json as { CheckID: string }[]).map((c) => c.CheckID)).toEqual(['meta-disk']);
    const index = Number(first.headers.get('x-svc-index'));
    const parked = fetch(`${agent.url}/v1/health/state/critical?node-meta=zone:m1&index=${index}&wait=5m`);
    // Only the node's Meta changes: its check row is the same.
    await put('/v1/catalog/register', { ...node, NodeMeta: { zone: 'm2' } });
    const woken = await parked;
    expect(Number(woken.headers.get('x-svc-index'))).toBeGreaterThan(index);
    expect(await woken.json()).toEqual([]);
    await put('/v1/catalog/deregister', { Node: 'meta-h' });
  });

  it("serves the npm consul client's health.service with passing, and health.checks", async () => {
    const consul = new Consul({ host: '127.0.0.1', port: agent.port });
    await fetch(`${agent.url}/v1/catalog/register`, {
      method: 'PUT',
      body: JSON.stringify(registration('h2', 'critical')),
    });
    const passing = await consul.health.service({ service: 'web', passing: true });
    expect(passing.map((e) => e.Service.ID)).toEqual(['web-h1', 'web-native']);
    const checks = await consul.health.checks('web');
    expect(checks.map((c) => c.Status)).toEqual(expect.arrayContaining(['passing', 'critical']));
    const state = await consul.health.state('critical');
    expect(state.map((c) => c.CheckID)).toEqual(['web-h2-http']);
  });
});
