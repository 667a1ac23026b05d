// What a generator thread measures: each second's latencies in an HDR histogram, its answers and
// errors by kind (a status code, refused, reset, timeout), its late and dropped calls, and the
// scenario's outcomes (allow or deny, read or write, throttled) each with its own histogram;
// aggregate.ts merges the threads.
import { answered, type Outcome, type OutcomeTick, type ThreadTick } from './types.js';
import { latencyHistogram, type LatencyHistogram } from './histogram.js';

interface OutcomeSecond {
  requests: number;
  readonly histogram: LatencyHistogram;
}

/** One thread's record of a run: each second's histogram and counts, handed over by tick(). */
export class Recorder {
  private second: LatencyHistogram = latencyHistogram();
  private secondOk = 0;
  private secondAnswered = 0;
  private secondErrors: Record<string, number> = {};
  private secondRequests = 0;
  private secondLate = 0;
  private secondDropped = 0;
  private secondOutcomes = new Map<string, OutcomeSecond>();

  /**
   * One answer (or failure). `outcome` names what the scenario expects it to be (`deny`, `write`);
   * `expected` marks a non-2xx answer the scenario asked for (429 throttling), counted under its
   * outcome and not as an error.
   */
  record(outcome: Outcome, latencyUs: number, late = false, kind = '', expected = false): void {
    this.secondRequests++;
    if (late) this.secondLate++;
    const ok = answered(outcome);
    if (ok || ('status' in outcome && !expected)) this.secondAnswered++;
    if (kind !== '' && (ok || expected)) {
      let o = this.secondOutcomes.get(kind);
      if (o === undefined) this.secondOutcomes.set(kind, (o = { requests: 0, histogram: latencyHistogram() }));
      o.requests++;
      o.histogram.record(latencyUs);
    }
    if (ok) {
      this.secondOk++;
      this.second.record(latencyUs);
      return;
    }
    if (expected) return;
    const error = 'status' in outcome ? String(outcome.status) : outcome.error;
    this.secondErrors[error] = (this.secondErrors[error] ?? 0) + 1;
  }

  /** Calls that fell due and were never sent. */
  dropped(count: number): void {
    this.secondDropped += count;
  }

  /** Closes window `t` (by default second t: from t-1 s to t s) and starts the next. */
  tick(t: number, startMs = (t - 1) * 1000, endMs = t * 1000, drain = false): ThreadTick {
    const outcomes: Record<string, OutcomeTick> = {};
    for (const [kind, o] of this.secondOutcomes)
      outcomes[kind] = { requests: o.requests, histogram: o.histogram.encode() };
    const tick = {
      t,
      startMs,
      endMs,
      drain,
      histogram: this.second.encode(),
      requests: this.secondRequests,
      answered: this.secondAnswered,
      ok: this.secondOk,
      late: this.secondLate,
      dropped: this.secondDropped,
      errors: this.secondErrors,
      outcomes,
    };
    this.second = latencyHistogram();
    this.secondOk = 0;
    this.secondAnswered = 0;
    this.secondErrors = {};
    this.secondRequests = 0;
    this.secondLate = 0;
    this.secondDropped = 0;
    this.secondOutcomes = new Map();
    return tick;
  }
}
