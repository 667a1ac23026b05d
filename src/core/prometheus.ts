// The Prometheus view of the agent's metrics (GET /v1/agent/metrics?format=prometheus), built on
// prom-client, imported here and nowhere else: Node's own metrics (event-loop delay, heap, RSS,
// GC, CPU), HTTP requests by route, method and status with latency histograms, WAL fsync latency,
// and every counter and gauge of Metrics (metrics.ts), read when scraped (docs/decisions.md D19);
// other processes (the sidecar proxy) add their own histograms, counters and gauges.
// The request histograms are recorded here and handed to prom-client's registry when scraped:
// prom-client's own observe() hashes its labels on every call (430 ns), a cost on every request.
import { collectDefaultMetrics, Counter, Gauge, Registry, type Metric } from 'prom-client';
import type { Metrics } from './metrics.js';

/** Request latencies from 50 µs (a cached authorize) to 10 min (the longest blocking query). */
const HTTP_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2.5, 10, 60, 600];
/** fdatasync takes tens of µs on a fast SSD and tens of ms on a busy disk. */
const FSYNC_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

export type RequestRecorder = (route: string, method: string, status: number, seconds: number) => void;

export class PrometheusMetrics {
  private readonly registry = new Registry();
  private readonly http = new Histograms(
    'svc_http_request_duration_seconds',
    'HTTP requests by route pattern, method and status, from the request line to the answer.',
    HTTP_BUCKETS,
    ['route', 'method', 'code'],
  );
  private readonly walSync = new Histograms(
    'svc_state_wal_sync_seconds',
    'One WAL batch written and fdatasynced (group commit).',
    FSYNC_BUCKETS,
    [],
  );
  private readonly walSyncAll = this.walSync.series([]);
  /** route → method → status → its series, so a request costs three map lookups. */
  private readonly series = new Map<string, Map<string, Map<number, Series>>>();
  /** Metrics' counters and gauges already exported (they appear on first use). */
  private readonly exported = new Set<string>();

  /** `metrics`: the agent's counters and gauges; a process without them (the sidecar proxy) gives none. */
  constructor(private readonly metrics?: Metrics) {
    collectDefaultMetrics({ register: this.registry });
    this.registry.registerMetric(this.http as unknown as Metric);
    this.registry.registerMetric(this.walSync as unknown as Metric);
  }

  /** Records one answered request. */
  readonly recordRequest: RequestRecorder = (route, method, status, seconds) => {
    let byMethod = this.series.get(route);
    if (byMethod === undefined) this.series.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) byMethod.set(method, (byStatus = new Map()));
    let series = byStatus.get(status);
    if (series === undefined) byStatus.set(status, (series = this.http.series([route, method, String(status)])));
    series.observe(seconds);
  };

  readonly recordWalSync = (seconds: number): void => {
    this.walSyncAll.observe(seconds);
  };

  /** A histogram of one series, registered now; the function records one observation. */
  histogram(name: string, help: string, buckets: readonly number[]): (seconds: number) => void {
    const histograms = new Histograms(name, help, buckets, []);
    this.registry.registerMetric(histograms as unknown as Metric);
    const series = histograms.series([]);
    return (seconds) => series.observe(seconds);
  }

  /** A counter read when scraped, one series per key of what `read` returns, labelled `label`. */
  countersBy(name: string, help: string, label: string, read: () => Readonly<Record<string, number>>): void {
    new Counter({
      name,
      help,
      labelNames: [label],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [value, count] of Object.entries(read())) this.inc({ [label]: value }, count);
      },
    });
  }

  /** A gauge read when scraped. */
  gauge(name: string, help: string, read: () => number): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.set(read());
      },
    });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  text(): Promise<string> {
    this.exportNew();
    return this.registry.metrics();
  }

  /** Metrics' counters and gauges, under Prometheus names, read at scrape time. */
  private exportNew(): void {
    const registers = [this.registry];
    for (const metric of this.metrics?.describe() ?? []) {
      if (this.exported.has(metric.name)) continue;
      this.exported.add(metric.name);
      const name = promName(metric.name);
      const read = metric.read;
      if (metric.kind === 'counter') {
        new Counter({
          name: `${name}_total`,
          help: `${metric.name}: events since start.`,
          registers,
          collect() {
            this.reset();
            this.inc(read());
          },
        });
      } else {
        new Gauge({
          name,
          help: `${metric.name}.`,
          registers,
          collect() {
            this.set(read());
          },
        });
      }
    }
  }
}

/** One label set's histogram: a count per bucket (not cumulative), the sum and the count. */
class Series {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    private readonly bounds: readonly number[],
    readonly labels: Readonly<Record<string, string>>,
  ) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    this.sum += value;
    this.count++;
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= (bounds[i] as number)) {
        this.counts[i] = (this.counts[i] as number) + 1;
        return;
      }
    }
  }
}

/** A histogram family in the shape prom-client's registry reads from a metric's get(). */
class Histograms {
  readonly type = 'histogram';
  private readonly all: Series[] = [];

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
    private readonly labelNames: readonly string[],
  ) {}

  series(values: readonly string[]): Series {
    const labels = Object.fromEntries(this.labelNames.map((name, i) => [name, values[i] ?? '']));
    const series = new Series(this.bounds, labels);
    this.all.push(series);
    return series;
  }

  get(): {
    name: string;
    help: string;
    type: string;
    values: { metricName: string; labels: Record<string, string | number>; value: number }[];
    aggregator: string;
  } {
    const values: { metricName: string; labels: Record<string, string | number>; value: number }[] = [];
    for (const s of this.all) {
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += s.counts[i] as number;
        values.push({ metricName: `${this.name}_bucket`, labels: { le, ...s.labels }, value: cumulative });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...s.labels }, value: s.count });
      values.push({ metricName: `${this.name}_sum`, labels: { ...s.labels }, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: { ...s.labels }, value: s.count });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: 'sum' };
  }
}

/** `svc.connect.authorize.allowed` → `svc_connect_authorize_allowed`. */
export function promName(name: string): string {
  return name.replace(/[^a-zA-Z0-9_]/g, '_');
}
