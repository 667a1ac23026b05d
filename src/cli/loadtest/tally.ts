// Latencies measured on the main thread (proxies, leaf-wave, mesh), closed into one point per second
// exactly as a generator thread's are, so the result and report read them the same way.
import { Aggregate } from '../../loadgen/aggregate.js';
import { Recorder } from '../../loadgen/recorder.js';
import type { Outcome, SecondPoint } from '../../loadgen/types.js';

export class Tally {
  readonly aggregate = new Aggregate(1);
  private readonly recorder = new Recorder();
  private second = 1;
  private windowFrom = 0;
  private timer: NodeJS.Timeout | undefined;
  private startedAt = 0;
  private cpuStart = process.cpuUsage();
  private eluStart = performance.eventLoopUtilization();

  /** One answer; `kind`, `expected` and `late` as Recorder.record takes them (a 429 that throttles is not an error). */
  record(outcome: Outcome, latencyUs: number, kind = '', expected = false, late = false): void {
    if (this.timer !== undefined) this.recorder.record(outcome, latencyUs, late, kind, expected);
  }

  /** Calls of an open loop that fell due and were never sent. */
  dropped(count: number): void {
    if (this.timer !== undefined) this.recorder.dropped(count);
  }

  /** Starts the measured time: a point every second from now. */
  start(progress: (point: SecondPoint) => void): void {
    this.startedAt = performance.now();
    this.eluStart = performance.eventLoopUtilization();
    this.cpuStart = process.cpuUsage();
    this.windowFrom = 0;
    this.timer = setInterval(() => {
      const point = this.aggregate.add(this.close());
      if (point !== undefined) progress(point);
    }, 1000);
  }

  get started(): boolean {
    return this.timer !== undefined;
  }

  /** Closes the window open since the last, at its real end (a late timer makes a longer window, not a wrong rate). */
  private close() {
    const end = performance.now() - this.startedAt;
    const tick = this.recorder.tick(this.second++, this.windowFrom, end);
    this.windowFrom = end;
    return tick;
  }

  /** Ends the measured time: its length in ms, the process's CPU share, and whether this thread's event loop was the limit. */
  finish(): { elapsedMs: number; cpuPct: number; clientBusy: boolean } {
    clearInterval(this.timer);
    this.aggregate.add(this.close());
    this.timer = undefined;
    const elapsedMs = Math.max(1, performance.now() - this.startedAt);
    const cpu = process.cpuUsage(this.cpuStart);
    const busy = performance.eventLoopUtilization(this.eluStart).utilization > 0.9;
    return { elapsedMs, cpuPct: ((cpu.user + cpu.system) / 1000 / elapsedMs) * 100, clientBusy: busy };
  }
}
