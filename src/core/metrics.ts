// What the agent counts about itself (docs/decisions.md D11: decisions, cache hits, leaf issuance,
// parked queries), served by GET /v1/agent/metrics in Consul's JSON shape. Counters run from start
// (Rate is per second over the uptime); a hot path holds its Counter and bumps one field.
import type { Clock } from './clock.js';

/** Rows read from etcd that failed their table's schema and were left out (docs/cluster-security.md#bad-rows). */
export const BAD_ROWS_COUNTER = 'svc.state.bad_rows';

export class Counter {
  count = 0;
  inc(n = 1): void {
    this.count += n;
  }
}

export interface MetricsJson {
  readonly Timestamp: string;
  readonly Gauges: readonly { Name: string; Value: number; Labels: Record<string, string> }[];
  readonly Points: readonly never[];
  readonly Counters: readonly {
    Name: string;
    Count: number;
    Rate: number;
    Sum: number;
    Min: number;
    Max: number;
    Mean: number;
    Stddev: number;
    Labels: Record<string, string>;
  }[];
  readonly Samples: readonly never[];
}

export class Metrics {
  private readonly counters = new Map<string, Counter>();
  private readonly gauges = new Map<string, () => number>();
  private readonly startedAt: number;

  constructor(private readonly clock: Clock) {
    this.startedAt = clock.now();
  }

  /** The counter of that name, created on first use; keep it rather than look it up per event. */
  counter(name: string): Counter {
    let counter = this.counters.get(name);
    if (counter === undefined) {
      counter = new Counter();
      this.counters.set(name, counter);
    }
    return counter;
  }

  /** A value read when metrics are asked for (parked queries, watches). */
  gauge(name: string, read: () => number): void {
    this.gauges.set(name, read);
  }

  /** Every counter and gauge with a reader of its current value (for other formats: prometheus.ts). */
  describe(): { readonly name: string; readonly kind: 'counter' | 'gauge'; readonly read: () => number }[] {
    return [
      ...[...this.counters].map(([name, counter]) => ({ name, kind: 'counter' as const, read: () => counter.count })),
      ...[...this.gauges].map(([name, read]) => ({ name, kind: 'gauge' as const, read })),
    ];
  }

  snapshot(): MetricsJson {
    const now = this.clock.now();
    const uptimeS = Math.max((now - this.startedAt) / 1000, 1e-3);
    const byName = <T>(entries: Iterable<[string, T]>): [string, T][] =>
      [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return {
      Timestamp: goTimestamp(now),
      Gauges: byName(this.gauges).map(([Name, read]) => ({ Name, Value: read(), Labels: {} })),
      Points: [],
      // Each event counts 1, so Sum is the count, Min = Max = Mean = 1 and Stddev 0 once counted.
      Counters: byName(this.counters).map(([Name, { count }]) => ({
        Name,
        Count: count,
        Rate: count / uptimeS,
        Sum: count,
        Min: count > 0 ? 1 : 0,
        Max: count > 0 ? 1 : 0,
        Mean: count > 0 ? 1 : 0,
        Stddev: 0,
        Labels: {},
      })),
      Samples: [],
    };
  }
}

/** Go's time.Time String() in UTC: "2026-11-22 08:55:00 +0000 UTC". */
function goTimestamp(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} +0000 UTC`;
}
