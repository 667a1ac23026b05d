// The run's totals, merged from what each generator thread reports every second: its second's
// latency histogram (compressed), its request, error, late and dropped counts, and its outcomes'
// counts and histograms. A second's point appears once every thread has reported it, or when the
// run ends.
import { decodeHistogram, latencyHistogram, type LatencyHistogram } from './histogram.js';
import type { SecondPoint, ThreadTick } from './types.js';

interface Second {
  readonly histogram: LatencyHistogram;
  requests: number;
  errors: number;
  late: number;
  dropped: number;
  readonly outcomes: Record<string, number>;
  reports: number;
}

/** One outcome over the run. */
export interface OutcomeTotal {
  requests: number;
  readonly histogram: LatencyHistogram;
}

/** Some seconds merged: a stage of the run. */
export interface Span {
  readonly requests: number;
  readonly errors: number;
  readonly dropped: number;
  readonly histogram: LatencyHistogram;
}

export class Aggregate {
  readonly total = latencyHistogram();
  readonly errors = new Map<string, number>();
  readonly outcomes = new Map<string, OutcomeTotal>();
  requests = 0;
  ok = 0;
  late = 0;
  dropped = 0;
  private readonly seconds = new Map<number, Second>();

  constructor(private readonly threads: number) {}

  /** Adds a thread's second; returns the second's point once every thread has reported it. */
  add(tick: ThreadTick): SecondPoint | undefined {
    const hist = decodeHistogram(tick.histogram);
    this.total.add(hist);
    this.requests += tick.requests;
    this.ok += tick.ok;
    this.late += tick.late;
    this.dropped += tick.dropped;
    let errorCount = 0;
    for (const [kind, n] of Object.entries(tick.errors)) {
      this.errors.set(kind, (this.errors.get(kind) ?? 0) + n);
      errorCount += n;
    }
    let second = this.seconds.get(tick.t);
    if (second === undefined) {
      second = { histogram: latencyHistogram(), requests: 0, errors: 0, late: 0, dropped: 0, outcomes: {}, reports: 0 };
      this.seconds.set(tick.t, second);
    }
    for (const [kind, o] of Object.entries(tick.outcomes)) {
      let total = this.outcomes.get(kind);
      if (total === undefined) this.outcomes.set(kind, (total = { requests: 0, histogram: latencyHistogram() }));
      total.requests += o.requests;
      total.histogram.add(decodeHistogram(o.histogram));
      second.outcomes[kind] = (second.outcomes[kind] ?? 0) + o.requests;
    }
    second.histogram.add(hist);
    second.requests += tick.requests;
    second.errors += errorCount;
    second.late += tick.late;
    second.dropped += tick.dropped;
    second.reports++;
    return second.reports === this.threads ? pointOf(tick.t, second) : undefined;
  }

  get series(): SecondPoint[] {
    return [...this.seconds.entries()].sort(([a], [b]) => a - b).map(([t, s]) => pointOf(t, s));
  }

  /** Seconds `from` < t <= `to` merged (a stage's share of the run). */
  span(from: number, to: number): Span {
    const histogram = latencyHistogram();
    let requests = 0;
    let errors = 0;
    let dropped = 0;
    for (const [t, s] of this.seconds) {
      if (t <= from || t > to) continue;
      histogram.add(s.histogram);
      requests += s.requests;
      errors += s.errors;
      dropped += s.dropped;
    }
    return { requests, errors, dropped, histogram };
  }
}

function pointOf(t: number, s: Second): SecondPoint {
  const h = s.histogram;
  return {
    t,
    requests: s.requests,
    errors: s.errors,
    late: s.late,
    dropped: s.dropped,
    p50Us: h.count ? h.percentile(50) : 0,
    p99Us: h.count ? h.percentile(99) : 0,
    maxUs: h.count ? h.max : 0,
    outcomes: { ...s.outcomes },
  };
}
