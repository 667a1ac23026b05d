import { describe, expect, it } from 'vitest';
import { Metrics } from '../../../src/core/metrics.js';
import { PrometheusMetrics, promName } from '../../../src/core/prometheus.js';

const clock = { now: () => 0, setTimeout, clearTimeout } as unknown as ConstructorParameters<typeof Metrics>[0];

describe('PrometheusMetrics', () => {
  it('writes request histograms with cumulative buckets, sum and count per route, method and status', async () => {
    const prom = new PrometheusMetrics(new Metrics(clock));
    prom.recordRequest('/v1/kv/', 'GET', 200, 0.00004);
    prom.recordRequest('/v1/kv/', 'GET', 200, 0.0003);
    prom.recordRequest('/v1/kv/', 'GET', 200, 900);
    prom.recordRequest('/v1/kv/', 'PUT', 413, 0.002);
    const text = await prom.text();
    const line = (name: string): string | undefined => text.split('\n').find((l) => l.startsWith(`${name} `));
    const get = '{route="/v1/kv/",method="GET",code="200"}';
    expect(
      line(`svc_http_request_duration_seconds_bucket{le="0.00005",route="/v1/kv/",method="GET",code="200"}`),
    ).toMatch(/ 1$/);
    expect(
      line(`svc_http_request_duration_seconds_bucket{le="0.0005",route="/v1/kv/",method="GET",code="200"}`),
    ).toMatch(/ 2$/);
    expect(line(`svc_http_request_duration_seconds_bucket{le="600",route="/v1/kv/",method="GET",code="200"}`)).toMatch(
      / 2$/,
    );
    expect(line(`svc_http_request_duration_seconds_bucket{le="+Inf",route="/v1/kv/",method="GET",code="200"}`)).toMatch(
      / 3$/,
    );
    expect(line(`svc_http_request_duration_seconds_count${get}`)).toMatch(/ 3$/);
    expect(Number(line(`svc_http_request_duration_seconds_sum${get}`)?.split(' ')[1])).toBeCloseTo(900.00034, 5);
    expect(line('svc_http_request_duration_seconds_count{route="/v1/kv/",method="PUT",code="413"}')).toMatch(/ 1$/);
    expect(text).toContain('# TYPE svc_http_request_duration_seconds histogram');
  });

  it('serves a process without Metrics its own histograms, labelled counters and gauges, read when scraped', async () => {
    const prom = new PrometheusMetrics();
    const observe = prom.histogram('svc_proxy_handshake_seconds', 'handshakes', [0.001, 0.01]);
    const counts = { public: 1, upstream: 0 };
    let active = 2;
    prom.countersBy('svc_proxy_connections_accepted_total', 'accepted', 'listener', () => counts);
    prom.gauge('svc_proxy_connections_active', 'active', () => active);
    observe(0.0005);
    observe(0.005);
    counts.public = 4;
    active = 1;
    const text = await prom.text();
    const value = (series: string): string | undefined =>
      text
        .split('\n')
        .find((l) => l.startsWith(`${series} `))
        ?.split(' ')[1];
    expect(value('svc_proxy_handshake_seconds_bucket{le="0.001"}')).toBe('1');
    expect(value('svc_proxy_handshake_seconds_bucket{le="+Inf"}')).toBe('2');
    expect(value('svc_proxy_connections_accepted_total{listener="public"}')).toBe('4');
    expect(value('svc_proxy_connections_accepted_total{listener="upstream"}')).toBe('0');
    expect(value('svc_proxy_connections_active')).toBe('1');
    expect(text).toContain('# TYPE svc_proxy_connections_accepted_total counter');
  });

  it('exports every counter and gauge of Metrics, including ones made after it, read when scraped', async () => {
    const metrics = new Metrics(clock);
    const prom = new PrometheusMetrics(metrics);
    let parked = 3;
    metrics.gauge('svc.blocking.parked', () => parked);
    metrics.counter('svc.connect.authorize.allowed').inc(2);
    let text = await prom.text();
    expect(text).toContain('\nsvc_blocking_parked 3\n');
    expect(text).toContain('\nsvc_connect_authorize_allowed_total 2\n');
    parked = 7;
    metrics.counter('svc.connect.authorize.allowed').inc();
    metrics.counter('svc.later').inc();
    text = await prom.text();
    expect(text).toContain('\nsvc_blocking_parked 7\n');
    expect(text).toContain('\nsvc_connect_authorize_allowed_total 3\n');
    expect(text).toContain('\nsvc_later_total 1\n');
  });

  it("records WAL syncs and Node's runtime metrics", async () => {
    const prom = new PrometheusMetrics(new Metrics(clock));
    prom.recordWalSync(0.003);
    const text = await prom.text();
    expect(text).toContain('\nsvc_state_wal_sync_seconds_count 1\n');
    expect(text).toContain('# TYPE nodejs_eventloop_lag_seconds gauge');
    expect(text).toContain('# TYPE process_resident_memory_bytes gauge');
  });

  it('names metrics the Prometheus way', () => {
    expect(promName('svc.connect.ca.leaf-issued')).toBe('svc_connect_ca_leaf_issued');
  });
});
