// The sidecar's Prometheus metrics (-metrics-addr, GET /metrics): connections accepted, refused by
// reason, closed on deny and open now, bytes each way, and handshake and authorize latencies, with
// Node's process metrics. Counters are read from the proxy's and the SDK's stats when scraped.
import { createServer, type Server } from 'node:http';
import { PrometheusMetrics } from '../core/prometheus.js';
import type { ConnectService, ServiceTimings } from '../sdk/index.js';
import { listen, type ConnectProxy } from './proxy.js';

/** A handshake takes about a millisecond on loopback, up to handshake_timeout_ms (10 s) for a slow client. */
const HANDSHAKE_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 2.5, 10];
/** A decision held while the intentions stand takes microseconds; one asked of the agent, a few hundred. */
const AUTHORIZE_BUCKETS = [0.00001, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1];

export class ProxyMetrics {
  private readonly prometheus = new PrometheusMetrics();
  /** For the SDK's service: its handshake and authorize times. */
  readonly timings: ServiceTimings = {
    handshake: this.prometheus.histogram(
      'svc_proxy_handshake_seconds',
      'Public listener: from the TCP connection to the finished mTLS handshake.',
      HANDSHAKE_BUCKETS,
    ),
    authorize: this.prometheus.histogram(
      'svc_proxy_authorize_seconds',
      'Public listener: authorize asked for an inbound connection.',
      AUTHORIZE_BUCKETS,
    ),
  };

  /** Reads the proxy's and its service's stats at each scrape. */
  count(proxy: ConnectProxy, service: ConnectService): void {
    const p = proxy.stats;
    const s = service.stats;
    const m = this.prometheus;
    m.countersBy('svc_proxy_connections_accepted_total', 'Connections accepted, by listener.', 'listener', () => ({
      public: s.accepted,
      upstream: p.upstreamAccepted,
    }));
    m.countersBy(
      'svc_proxy_connections_refused_total',
      'Connections refused, by reason (the local application or the upstream not taking one included).',
      'reason',
      () => ({ ...s.refused, 'local-app': p.localFailures, upstream: p.upstreamFailures }),
    );
    m.countersBy(
      'svc_proxy_connections_closed_total',
      'Established connections closed by the proxy, by reason.',
      'reason',
      () => ({ denied: s.closedOnDeny }),
    );
    m.gauge('svc_proxy_connections_active', 'Connections piped now, both listeners.', () => p.active);
    m.countersBy(
      'svc_proxy_bytes_total',
      'Bytes piped: in, from the connecting side; out, to it.',
      'direction',
      () => ({ in: p.bytesIn, out: p.bytesOut }),
    );
  }

  /** Serves the metrics on `port` and `host`; rejects when it cannot listen. */
  async listen(port: number, host: string): Promise<Server> {
    const server = createServer((req, res) => {
      if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
        res.writeHead(404).end();
        return;
      }
      this.prometheus.text().then(
        (text) => res.writeHead(200, { 'Content-Type': this.prometheus.contentType }).end(text),
        (err: unknown) => res.writeHead(500).end(String(err)),
      );
    });
    await listen(server, port, host);
    return server;
  }
}
