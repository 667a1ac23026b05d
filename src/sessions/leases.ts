// What keeps a TTL session alive: a lease of twice its TTL (Consul's grace), renewed by the
// session's renew. In a cluster the lease is etcd's and the session's row goes with it on every
// agent at once (cluster/session-leases.ts); a lone agent's leases are its own timers, which end
// the session through `expired` (this file). Both pass test/contract/session-leases.test.ts.
import type { Clock, TimerHandle } from '../core/clock.js';

export interface SessionLeases {
  /** A new lease lasting `ms` unless renewed; its ID goes on the session's row. */
  grant(ms: number): Promise<string>;
  /** Gives the lease its full time again; false when it has already ended. */
  renew(id: string): Promise<boolean>;
  /** Ends the lease now (nothing if it already has). */
  revoke(id: string): Promise<void>;
  /**
   * Takes on a lease granted before this process (a session found in the store at start): a lone
   * agent starts its full time again, as Consul's new leader resets every session's timer.
   */
  adopt(id: string, ms: number): void;
  close(): void;
}

/** Timers of one process: each lease ends by calling `expired` with its ID. */
export class LocalLeases implements SessionLeases {
  private readonly timers = new Map<string, { ms: number; timer: TimerHandle }>();
  private next = 0;

  constructor(
    private readonly clock: Clock,
    private readonly expired: (id: string) => void,
  ) {}

  grant(ms: number): Promise<string> {
    // Unique across restarts: a lease adopted after a restart keeps its ID. A positive integer of
    // at most 19 digits, as a row's lease must be (state/write-ops.ts), whatever the clock reads.
    const now = Math.max(1, Math.floor(this.clock.now()));
    const id = `${now}${String(this.next++ % 1_000_000).padStart(6, '0')}`;
    this.adopt(id, ms);
    return Promise.resolve(id);
  }

  renew(id: string): Promise<boolean> {
    const lease = this.timers.get(id);
    if (lease === undefined) return Promise.resolve(false);
    this.adopt(id, lease.ms);
    return Promise.resolve(true);
  }

  revoke(id: string): Promise<void> {
    this.timers.get(id)?.timer.cancel();
    this.timers.delete(id);
    return Promise.resolve();
  }

  adopt(id: string, ms: number): void {
    this.timers.get(id)?.timer.cancel();
    const timer = this.clock.setTimer(ms, () => {
      this.timers.delete(id);
      this.expired(id);
    });
    this.timers.set(id, { ms, timer });
  }

  close(): void {
    for (const { timer } of this.timers.values()) timer.cancel();
    this.timers.clear();
  }
}
