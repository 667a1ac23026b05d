// The run's totals, merged from what each generator thread reports per window of the measured time
// (a second, cut where a stage or the schedule ends): its latency histogram (compressed), its
// request, answer, error, late and dropped counts, and its outcomes' counts and histograms. A
// window's point appears once every thread has reported it. The drain (answers after the
// schedule's end) is kept apart: it is in the totals, not in the series.
import { decodeHistogram, latencyHistogram, type LatencyHistogram } from './histogram.js';
import type { SecondPoint, ThreadTick } from './types.js';

interface Window {
  startMs: number;
  endMs: number;
  readonly histogram: LatencyHistogram;
  requests: number;
  answered: number;
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

/** Some windows merged: a stage's or a step's share of the run, or the drain. */
export interface Span {
  /** From the first window's start to the last one's end, ms since the measured time began. */
  readonly startMs: number;
  readonly endMs: number;
  readonly requests: number;
  readonly answered: number;
  readonly errors: number;
  readonly dropped: number;
  readonly histogram: LatencyHistogram;
  readonly outcomes: Readonly<Record<string, number>>;
}

const emptyWindow = (startMs: number, endMs: number): Window => ({
  startMs,
  endMs,
  histogram: latencyHistogram(),
  requests: 0,
  answered: 0,
  errors: 0,
  late: 0,
  dropped: 0,
  outcomes: {},
  reports: 0,
});

export class Aggregate {
  readonly total = latencyHistogram();
  readonly errors = new Map<string, number>();
  readonly outcomes = new Map<string, OutcomeTotal>();
  requests = 0;
  ok = 0;
  late = 0;
  dropped = 0;
  private readonly windows = new Map<number, Window>();
  private drainWindow: Window | undefined;

  constructor(private readonly threads: number) {}

  /** Adds a thread's window; returns the window's point once every thread has reported it (never the drain's). */
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
    let w: Window;
    if (tick.drain) {
      w = this.drainWindow ??= emptyWindow(tick.startMs, tick.endMs);
    } else {
      w = this.windows.get(tick.t) ?? emptyWindow(tick.startMs, tick.endMs);
      this.windows.set(tick.t, w);
    }
    w.endMs = Math.max(w.endMs, tick.endMs);
    for (const [kind, o] of Object.entries(tick.outcomes)) {
      let total = this.outcomes.get(kind);
      if (total === undefined) this.outcomes.set(kind, (total = { requests: 0, histogram: latencyHistogram() }));
      total.requests += o.requests;
      total.histogram.add(decodeHistogram(o.histogram));
      w.outcomes[kind] = (w.outcomes[kind] ?? 0) + o.requests;
    }
    w.histogram.add(hist);
    w.requests += tick.requests;
    w.answered += tick.answered;
    w.errors += errorCount;
    w.late += tick.late;
    w.dropped += tick.dropped;
    w.reports++;
    return !tick.drain && w.reports === this.threads ? pointOf(tick.t, w) : undefined;
  }

  /** The measured time's windows in order (the drain not among them). */
  get series(): SecondPoint[] {
    return [...this.windows.entries()].sort(([a], [b]) => a - b).map(([t, w]) => pointOf(t, w));
  }

  /** The windows inside [fromMs, toMs] merged: a stage's share of the run. */
  span(fromMs: number, toMs: number): Span {
    return merge([...this.windows.values()].filter((w) => w.startMs >= fromMs - 1e-6 && w.endMs <= toMs + 1e-6));
  }

  /** Every window of the measured time merged (the drain not among them). */
  measured(): Span {
    return merge([...this.windows.values()]);
  }

  /** The answers after the schedule's end, and the calls dropped then; null when there was no drain. */
  drain(): Span | null {
    return this.drainWindow === undefined ? null : merge([this.drainWindow]);
  }
}

function merge(windows: readonly Window[]): Span {
  const histogram = latencyHistogram();
  const outcomes: Record<string, number> = {};
  let requests = 0;
  let answered = 0;
  let errors = 0;
  let dropped = 0;
  let startMs = Infinity;
  let endMs = -Infinity;
  for (const w of windows) {
    histogram.add(w.histogram);
    requests += w.requests;
    answered += w.answered;
    errors += w.errors;
    dropped += w.dropped;
    startMs = Math.min(startMs, w.startMs);
    endMs = Math.max(endMs, w.endMs);
    for (const [k, n] of Object.entries(w.outcomes)) outcomes[k] = (outcomes[k] ?? 0) + n;
  }
  if (windows.length === 0) startMs = endMs = 0;
  return { startMs, endMs, requests, answered, errors, dropped, histogram, outcomes };
}

function pointOf(t: number, w: Window): SecondPoint {
  const h = w.histogram;
  return {
    t,
    startMs: w.startMs,
    endMs: w.endMs,
    requests: w.requests,
    answered: w.answered,
    errors: w.errors,
    late: w.late,
    dropped: w.dropped,
    p50Us: h.count ? h.percentile(50) : 0,
    p99Us: h.count ? h.percentile(99) : 0,
    maxUs: h.count ? h.max : 0,
    outcomes: { ...w.outcomes },
  };
}
