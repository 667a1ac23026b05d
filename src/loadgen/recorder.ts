// What a generator thread measures: each second's latencies in an HDR histogram, and its answers
// and errors by kind (a status code, refused, reset, timeout); aggregate.ts merges the threads.
import { answered, type Outcome, type ThreadTick } from './types.js';
import { latencyHistogram, type LatencyHistogram } from './histogram.js';

/** One thread's record of a run: each second's histogram and counts, handed over by tick(). */
export class Recorder {
  private second: LatencyHistogram = latencyHistogram();
  private secondOk = 0;
  private secondErrors: Record<string, number> = {};
  private secondRequests = 0;

  record(outcome: Outcome, latencyUs: number): void {
    this.secondRequests++;
    if (answered(outcome)) {
      this.secondOk++;
      this.second.record(latencyUs);
      return;
    }
    const kind = 'status' in outcome ? String(outcome.status) : outcome.error;
    this.secondErrors[kind] = (this.secondErrors[kind] ?? 0) + 1;
  }

  /** Closes second `t` and starts the next. */
  tick(t: number): ThreadTick {
    const tick = { t, histogram: this.second.encode(), requests: this.secondRequests, ok: this.secondOk, errors: this.secondErrors };
    this.second = latencyHistogram();
    this.secondOk = 0;
    this.secondErrors = {};
    this.secondRequests = 0;
    return tick;
  }
}
