// GET /v1/agent/metrics (docs/decisions.md D11): authorize decisions and cache hits, CA cache hits,
// leaf issuance and parked queries are counted, and the endpoint needs agent:read.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from './support/agent-process.js';
import { get, openRequest } from './support/raw-http.js';

interface MetricsBody {
  Gauges: { Name: string; Value: number }[];
  Counters: { Name: string; Count: number }[];
}

let agent: AgentProcess;
const metrics = async (): Promise<{ gauge: (n: string) => number | undefined; count: (n: string) => number }> => {
  const body = (await (await fetch(`${agent.url}/v1/agent/metrics`)).json()) as MetricsBody;
  return {
    gauge: (n) => body.Gauges.find((g) => g.Name === n)?.Value,
    count: (n) => body.Counters.find((c) => c.Name === n)?.Count ?? 0,
  };
};
const authorize = (source: string): Promise<Response> =>
  fetch(`${agent.url}/v1/agent/connect/authorize`, {
    method: 'POST',
    body: JSON.stringify({
      Target: 'db',
      ClientCertURI: `spiffe://x.consul/ns/default/dc/dc1/svc/${source}`,
      ClientCertSerial: '01',
    }),
  });

beforeAll(async () => {
  agent = await startAgent();
  await fetch(`${agent.url}/v1/connect/intentions/exact?source=web&destination=db`, {
    method: 'PUT',
    body: JSON.stringify({ Action: 'allow' }),
  });
  await fetch(`${agent.url}/v1/connect/intentions/exact?source=api&destination=db`, {
    method: 'PUT',
    body: JSON.stringify({ Action: 'deny' }),
  });
});
afterAll(() => agent.stop());

describe('GET /v1/agent/metrics', () => {
  it('counts authorize decisions and X-Cache hits', async () => {
    expect((await (await authorize('web')).json()) as object).toMatchObject({ Authorized: true });
    await authorize('web');
    expect((await (await authorize('api')).json()) as object).toMatchObject({ Authorized: false });
    const m = await metrics();
    expect(m.count('svc.connect.authorize.allowed')).toBe(2);
    expect(m.count('svc.connect.authorize.denied')).toBe(1);
    expect(m.count('svc.connect.authorize.cache_miss')).toBe(1);
    expect(m.count('svc.connect.authorize.cache_hit')).toBe(2);
  });

  it('counts leaf issuance and the CA caches', async () => {
    const before = await metrics();
    const first = await fetch(`${agent.url}/v1/agent/connect/ca/leaf/web`);
    expect(first.status).toBe(200);
    await fetch(`${agent.url}/v1/agent/connect/ca/roots`);
    await fetch(`${agent.url}/v1/agent/connect/ca/roots`);
    const m = await metrics();
    expect(m.count('svc.connect.ca.leaf.issued') - before.count('svc.connect.ca.leaf.issued')).toBe(1);
    expect(m.count('svc.connect.ca.leaf.cache_hit') + m.count('svc.connect.ca.leaf.cache_miss')).toBe(1);
    expect(m.count('svc.connect.ca.roots.cache_hit') + m.count('svc.connect.ca.roots.cache_miss')).toBe(2);
    expect(m.count('svc.connect.ca.roots.cache_hit')).toBeGreaterThanOrEqual(1);
  });

  it('reports parked queries as a gauge', async () => {
    await fetch(`${agent.url}/v1/kv/m/key`, { method: 'PUT', body: 'x' });
    const index = Number((await fetch(`${agent.url}/v1/kv/m/key`)).headers.get('x-svc-index'));
    expect((await metrics()).gauge('svc.blocking.parked')).toBe(0);
    const { socket, response } = await openRequest(agent.port, get(`/v1/kv/m/key?index=${index}&wait=30s`));
    try {
      const deadline = Date.now() + 5000;
      while ((await metrics()).gauge('svc.blocking.parked') !== 1) {
        if (Date.now() > deadline) throw new Error('the query never parked');
        await new Promise((r) => setTimeout(r, 20));
      }
      await fetch(`${agent.url}/v1/kv/m/key`, { method: 'PUT', body: 'y' });
      expect((await response).status).toBe(200);
      expect((await metrics()).gauge('svc.blocking.parked')).toBe(0);
    } finally {
      socket.destroy();
    }
  });
  it('counts parked roots and leaf waiters in the same gauge as parked KV reads', async () => {
    const leafIndex = Number((await fetch(`${agent.url}/v1/agent/connect/ca/leaf/gauge`)).headers.get('x-svc-index'));
    const rootsIndex = Number((await fetch(`${agent.url}/v1/agent/connect/ca/roots`)).headers.get('x-svc-index'));
    await fetch(`${agent.url}/v1/kv/m/many`, { method: 'PUT', body: 'x' });
    const kvIndex = Number((await fetch(`${agent.url}/v1/kv/m/many`)).headers.get('x-svc-index'));
    const paths = [
      `/v1/kv/m/many?index=${kvIndex}`,
      `/v1/agent/connect/ca/roots?index=${rootsIndex}`,
      `/v1/agent/connect/ca/leaf/gauge?index=${leafIndex}`,
    ];
    const opened = await Promise.all(
      Array.from({ length: 900 }, (_, i) => openRequest(agent.port, get(`${paths[i % 3]!}&wait=60s`))),
    );
    try {
      // vitest's test timeout is the bound: the gauge must come to every parked read, no more.
      for (;;) {
        const parked = (await metrics()).gauge('svc.blocking.parked');
        if (parked === 900) break;
        expect(parked).toBeLessThan(900);
        await new Promise((r) => setImmediate(r));
      }
    } finally {
      for (const { socket } of opened) socket.destroy();
    }
    for (;;) {
      if ((await metrics()).gauge('svc.blocking.parked') === 0) break;
      await new Promise((r) => setImmediate(r));
    }
  });
});

describe('GET /v1/agent/metrics with ACLs', () => {
  let secured: AgentProcess;
  beforeAll(async () => {
    secured = await startAgent({
      args: ['-node', 'm-node'],
      config: {
        acl: {
          enabled: true,
          default_policy: 'deny',
          tokens: { initial_management: '2f0c5b9a-1d3e-4f5a-8b7c-6d5e4f3a2b1c' },
        },
      },
    });
  });
  afterAll(() => secured.stop());

  it('needs agent:read on the node', async () => {
    const denied = await fetch(`${secured.url}/v1/agent/metrics`);
    expect([denied.status, await denied.text()]).toEqual([
      403,
      `Permission denied: anonymous token lacks permission 'agent:read' on "m-node". The anonymous token is used implicitly when a request does not specify a token.`,
    ]);
    const allowed = await fetch(`${secured.url}/v1/agent/metrics`, {
      headers: { 'X-Svc-Token': '2f0c5b9a-1d3e-4f5a-8b7c-6d5e4f3a2b1c' },
    });
    expect(allowed.status).toBe(200);
  });
});
