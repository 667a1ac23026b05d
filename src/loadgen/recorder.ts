// What a run measured: every answer's latency in one HDR histogram, a per-second series
// (throughput, p50/p99, errors) and errors counted by kind (a status code, refused, reset, timeout).
import { latencyHistogram, type LatencyHistogram } from './histogram.js';

/** One request's end: a status, or how the connection failed. */
export type Outcome = { readonly status: number } | { readonly error: 'refused' | 'reset' | 'timeout' | 'closed' | string };

export interface SecondPoint {
  /** Seconds since the measured part of the run began. */
  readonly t: number;
  readonly requests: number;
  readonly errors: number;
  readonly p50Us: number;
  readonly p99Us: number;
  readonly maxUs: number;
}

export class Recorder {
  readonly total = latencyHistogram();
  private second: LatencyHistogram = latencyHistogram();
  private secondErrors = 0;
  readonly series: SecondPoint[] = [];
  readonly errors = new Map<string, number>();
  requests = 0;
  ok = 0;

  constructor(private readonly okStatus: (status: number) => boolean = (s) => s >= 200 && s < 300) {}

  record(outcome: Outcome, latencyUs: number): void {
    this.requests++;
    const kind = 'status' in outcome ? (this.okStatus(outcome.status) ? undefined : String(outcome.status)) : outcome.error;
    if (kind === undefined) {
      this.ok++;
      this.second.record(latencyUs);
    } else {
      this.errors.set(kind, (this.errors.get(kind) ?? 0) + 1);
      this.secondErrors++;
    }
  }

  /** Closes the current second (called once a second by the run). */
  tick(t: number): SecondPoint {
    const s = this.second;
    const point = { t, requests: s.count + this.secondErrors, errors: this.secondErrors, p50Us: s.count ? s.percentile(50) : 0, p99Us: s.count ? s.percentile(99) : 0, maxUs: s.count ? s.max : 0 };
    this.series.push(point);
    this.total.add(s);
    this.second = latencyHistogram();
    this.secondErrors = 0;
    return point;
  }

  get errorCount(): number {
    let n = 0;
    for (const v of this.errors.values()) n += v;
    return n;
  }
}
