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

export interface SecondPoint {
  /** Seconds since the measured part of the run began. */
  readonly t: number;
  readonly requests: number;
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

/** What a generator thread reports for one second of the measured run. */
export interface ThreadTick {
  readonly t: number;
  /** The second's latency histogram, compressed (histogram.ts). */
  readonly histogram: string;
  readonly requests: number;
  readonly ok: number;
  readonly late: number;
  readonly dropped: number;
  readonly errors: Readonly<Record<string, number>>;
  readonly outcomes: Readonly<Record<string, OutcomeTick>>;
}
