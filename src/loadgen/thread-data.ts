// What the main thread of `svc-agent loadtest` hands each generator thread (workers/loadtest.worker.ts).
import type { HttpTarget } from './http-channel.js';
import type { Stage } from './pacer.js';

/** How a thread names an authorize answer's outcome: `ifFound` when its body holds `bytes`, else `otherwise`. */
export interface AnswerKinds {
  readonly bytes: string;
  readonly ifFound: string;
  readonly otherwise: string;
}

export interface LoadThreadData {
  readonly targets: readonly HttpTarget[];
  readonly requests: readonly Uint8Array[];
  /** Per request, the offset of 16 digits that get the send time in epoch microseconds, or -1. */
  readonly stampAt?: readonly number[] | undefined;
  /** Per request, its outcome's name (`read`, `write`); absent: none. */
  readonly requestKinds?: readonly string[] | undefined;
  /** Names each 2xx answer by its body (allow or deny); absent: none. */
  readonly answerKinds?: AnswerKinds | undefined;
  readonly connections: number;
  /** This thread's share of the open-loop rate, stage by stage; undefined for closed loop. */
  readonly stages: readonly Stage[] | undefined;
  /** A new connection for every request (connection-rate). */
  readonly connectionPerRequest: boolean;
  /** Which request this thread starts with, so that threads do not send the same ones in step. */
  readonly offset: number;
}

/** Sent to each thread once all are ready. Epoch ms: warm-up until `from`, measured from `from` to `until`. */
export interface LoadThreadTimes {
  readonly warmupFrom: number;
  readonly from: number;
  readonly until: number;
}

/** A thread's last message: its warm-up's 2xx answers, stamped requests sent, and its event loop's busy share over the measured time (0-1). */
export interface LoadThreadDone {
  readonly type: 'done';
  readonly warmupOk: number;
  readonly stampedSent: number;
  readonly busy: number;
}
