// Reconnect delays towards a backend (etcd): doubling from a fast first retry up to a cap, with ±50 % jitter
// so that thousands of agents losing etcd together do not come back in step.

export interface Backoff {
  readonly initialMs: number;
  readonly maxMs: number;
}

/** Fast first retry (a restarting member is back in well under a second), capped so a dead cluster costs little. */
export const DEFAULT_BACKOFF: Backoff = { initialMs: 100, maxMs: 5_000 };

/** The delay before retry number `attempt` (0 for the first). */
export function backoffDelay(backoff: Backoff, attempt: number, random: () => number): number {
  const base = Math.min(backoff.maxMs, backoff.initialMs * 2 ** attempt);
  return base * (0.5 + random());
}
