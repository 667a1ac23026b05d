// What the main thread of `svc-agent loadtest` hands each generator thread (workers/loadtest.worker.ts).
import type { HttpTarget } from './http-channel.js';

export interface LoadThreadData {
  readonly targets: readonly HttpTarget[];
  readonly requests: readonly Uint8Array[];
  /** Per request, the offset of 16 digits that get the send time in epoch microseconds, or -1. */
  readonly stampAt?: readonly number[] | undefined;
  readonly connections: number;
  /** This thread's share of the open-loop rate; undefined for closed loop. */
  readonly rate: number | undefined;
  /** Epoch ms: warm-up until `from`, measured from `from` to `until`. */
  readonly warmupFrom: number;
  readonly from: number;
  readonly until: number;
  /** A new connection for every request (connection-rate). */
  readonly connectionPerRequest: boolean;
  /** Which request this thread starts with, so that threads do not send the same ones in step. */
  readonly offset: number;
}
