// The run's totals, merged from what each generator thread reports every second: its second's
// latency histogram (compressed), its request and error counts. A second's point appears once
// every thread has reported it, or when the run ends.
import { decodeHistogram, latencyHistogram, type LatencyHistogram } from './histogram.js';
import type { SecondPoint, ThreadTick } from './types.js';

interface Second {
  readonly histogram: LatencyHistogram;
  requests: number;
  errors: number;
  reports: number;
}

export class Aggregate {
  readonly total = latencyHistogram();
  readonly errors = new Map<string, number>();
  requests = 0;
  ok = 0;
  private readonly seconds = new Map<number, Second>();

  constructor(private readonly threads: number) {}

  /** Adds a thread's second; returns the second's point once every thread has reported it. */
  add(tick: ThreadTick): SecondPoint | undefined {
    const hist = decodeHistogram(tick.histogram);
    this.total.add(hist);
    this.requests += tick.requests;
    this.ok += tick.ok;
    let errorCount = 0;
    for (const [kind, n] of Object.entries(tick.errors)) {
      this.errors.set(kind, (this.errors.get(kind) ?? 0) + n);
      errorCount += n;
    }
    let second = this.seconds.get(tick.t);
    if (second === undefined) this.seconds.set(tick.t, (second = { histogram: latencyHistogram(), requests: 0, errors: 0, reports: 0 }));
    second.histogram.add(hist);
    second.requests += tick.requests;
    second.errors += errorCount;
    second.reports++;
    return second.reports === this.threads ? pointOf(tick.t, second) : undefined;
  }

  get series(): SecondPoint[] {
    return [...this.seconds.entries()].sort(([a], [b]) => a - b).map(([t, s]) => pointOf(t, s));
  }
}

function pointOf(t: number, s: Second): SecondPoint {
  const h = s.histogram;
  return { t, requests: s.requests, errors: s.errors, p50Us: h.count ? h.percentile(50) : 0, p99Us: h.count ? h.percentile(99) : 0, maxUs: h.count ? h.max : 0 };
}
