// GET /v1/agent/metrics?format=prometheus (docs/decisions.md D19) against the real agent: Prometheus
// text with Node's own metrics, request latencies by route, method and status, WAL fsync latency,
// cache sizes, parked queries and leaf issuance; off (Consul's 415) when the retention time is 0.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, tempDir, type AgentProcess } from './support/agent-process.js';

/** `name{labels} value` lines, by name and label text. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (m === null) throw new Error(`not a Prometheus sample line: ${line}`);
    out.set(`${m[1]}${m[2] ?? ''}`, Number(m[3]));
  }
  return out;
}

describe('Prometheus metrics', () => {
  let agent: AgentProcess;
  let data: { path: string; remove: () => Promise<void> };
  beforeAll(async () => {
    data = await tempDir();
    agent = await startAgent({ dataDir: data.path });
  });
  afterAll(async () => {
    await agent.stop();
    await data.remove();
  });

  const scrape = async (): Promise<{ text: string; values: Map<string, number>; type: string | null }> => {
    const res = await fetch(`${agent.url}/v1/agent/metrics?format=prometheus`);
    expect(res.status).toBe(200);
    const text = await res.text();
    return { text, values: samples(text), type: res.headers.get('content-type') };
  };

  it("serves Node's runtime metrics in the Prometheus text format", async () => {
    const { text, type } = await scrape();
    expect(type).toBe('text/plain; version=0.0.4; charset=utf-8');
    for (const name of [
      'process_resident_memory_bytes',
      'process_cpu_seconds_total',
      'nodejs_heap_size_used_bytes',
      'nodejs_eventloop_lag_p99_seconds',
      'nodejs_gc_duration_seconds',
    ]) {
      expect(text).toContain(`# TYPE ${name} `);
    }
  });

  it('counts requests by route pattern, method and status, with latency buckets', async () => {
    const authorize = {
      method: 'POST',
      body: JSON.stringify({ Target: 'db', ClientCertURI: 'spiffe://x.consul/ns/default/dc/dc1/svc/web' }),
    };
    for (let i = 0; i < 5; i++)
      expect((await fetch(`${agent.url}/v1/agent/connect/authorize`, authorize)).status).toBe(200);
    expect((await fetch(`${agent.url}/v1/kv/a/b/c`)).status).toBe(404);
    const { values } = await scrape();
    const labels = '{route="/v1/agent/connect/authorize",method="POST",code="200"}';
    expect(values.get(`svc_http_request_duration_seconds_count${labels}`)).toBe(5);
    expect(
      values.get(
        'svc_http_request_duration_seconds_bucket{le="+Inf",route="/v1/agent/connect/authorize",method="POST",code="200"}',
      ),
    ).toBe(5);
    expect(values.get('svc_http_request_duration_seconds_sum' + labels)).toBeGreaterThan(0);
    // The route's pattern, not the path: a KV key is not a label.
    expect(values.get('svc_http_request_duration_seconds_count{route="/v1/kv/",method="GET",code="404"}')).toBe(1);
    expect(values.get('svc_connect_authorize_allowed_total')).toBe(5);
  });

  it('reports WAL fsync latency, cache sizes, parked queries and leaf issuance', async () => {
    expect((await fetch(`${agent.url}/v1/kv/durable`, { method: 'PUT', body: 'x' })).status).toBe(200);
    expect((await fetch(`${agent.url}/v1/agent/connect/ca/leaf/web`)).status).toBe(200);
    const { values } = await scrape();
    expect(values.get('svc_state_wal_sync_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(values.get('svc_connect_ca_leaf_issued_total')).toBeGreaterThanOrEqual(1);
    expect(values.get('svc_connect_leaf_cache_entries')).toBe(1);
    for (const name of [
      'svc_connect_ca_leaf_signing_queue',
      'svc_blocking_parked',
      'svc_acl_token_cache_entries',
      'svc_connect_authorize_cache_entries',
      'svc_connect_ca_leaf_rate_limited_total',
    ]) {
      expect(values.has(name), name).toBe(true);
    }
  });

  it('keeps the JSON shape without ?format', async () => {
    const body = (await (await fetch(`${agent.url}/v1/agent/metrics`)).json()) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(['Timestamp', 'Gauges', 'Points', 'Counters', 'Samples']);
  });
});

describe('Prometheus off', () => {
  it('answers as Consul does when telemetry.prometheus_retention_time is 0', async () => {
    const agent = await startAgent({ config: { telemetry: { prometheus_retention_time: '0s' } } });
    try {
      const res = await fetch(`${agent.url}/v1/agent/metrics?format=prometheus`);
      expect(res.status).toBe(415);
      expect(await res.text()).toBe('Prometheus is not enabled since its retention time is not positive');
      expect((await fetch(`${agent.url}/v1/agent/metrics`)).status).toBe(200);
    } finally {
      await agent.stop();
    }
  });
});
