// The load generator's shared shapes: a request's end, a second's summary, a thread's report.

/** One request's end: a status, or how the connection failed. */
export type Outcome =
  | {
      readonly status: number;
      readonly head?: Buffer;
      readonly body?: Buffer;
      /** Whether the body held the bytes the channel was told to look for (an allow, say). */
      readonly marked?: boolean;
    }
  | { readonly error: 'refused' | 'reset' | 'timeout' | 'closed' | string };

/** An answer that counts as served (2xx); anything else is an error of its status code. */
export function answered(outcome: Outcome): boolean {
  return 'status' in outcome && outcome.status >= 200 && outcome.status < 300;
}

/**
 * One window of the measured time: a second, cut short where a stage ends or the schedule ends, so
 * that a stage's windows are its own (src/cli/loadtest/rates.ts turns them into rates).
 */
export interface SecondPoint {
  /** The window's number, from 1. */
  readonly t: number;
  /** Where the window starts and ends, ms since the measured time began. */
  readonly startMs: number;
  readonly endMs: number;
  readonly requests: number;
  /** Calls answered with a status (2xx or an error status; not a 429 the scenario expects): what a rate counts. */
  readonly answered: number;
  readonly errors: number;
  /** Sent after waiting for a free connection (or well after they fell due). */
  readonly late: number;
  /** Fell due but never sent: the backlog was full, or the run ended. */
  readonly dropped: number;
  readonly p50Us: number;
  readonly p99Us: number;
  readonly maxUs: number;
  /** Answers by the scenario's outcome (`allow`, `deny`, `read`, `write`, `throttled`). */
  readonly outcomes: Readonly<Record<string, number>>;
}

/** One outcome's second on a thread: its count and latencies. */
export interface OutcomeTick {
  readonly requests: number;
  readonly histogram: string;
}

/** What a generator thread reports for one window of the measured run, or for the drain after it. */
export interface ThreadTick {
  readonly t: number;
  /** ms since the measured time began; the drain's end is the thread's last answer. */
  readonly startMs: number;
  readonly endMs: number;
  /** Answers that came after the schedule's end (the calls still in flight then), and calls dropped then. */
  readonly drain: boolean;
  readonly answered: number;
  /** The second's latency histogram, compressed (histogram.ts). */
  readonly histogram: string;
  readonly requests: number;
  readonly ok: number;
  readonly late: number;
  readonly dropped: number;
  readonly errors: Readonly<Record<string, number>>;
  readonly outcomes: Readonly<Record<string, OutcomeTick>>;
}
