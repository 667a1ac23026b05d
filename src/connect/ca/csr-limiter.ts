// The CA's CSR rate limit, as Consul's: `csr_max_per_second` as a token bucket of burst 1, or,
// when that is 0, `csr_max_concurrent` as a semaphore. A signing waits at most 500 ms for its turn,
// then fails with Consul's text, which the HTTP layer answers as 429. Limits are read on every
// call, so a CA configuration change applies at once.
import type { Clock, TimerHandle } from '../../core/clock.js';
import { agentError, type AgentError } from '../../core/errors.js';

/** Consul's wait for a token before giving up. */
const MAX_WAIT_MS = 500;

export interface CsrLimits {
  readonly csrMaxPerSecond: number;
  readonly csrMaxConcurrent: number;
}

export type Release = () => void;

const rateLimited = (): AgentError => agentError('CSR_RATE_LIMITED');
const NOOP: Release = () => {};

interface Queued {
  readonly resolve: (release: Release) => void;
  timer: TimerHandle | undefined;
}

export class CsrLimiter {
  /** When the bucket next holds a token (it never holds more than one). */
  private nextTokenAt = -Infinity;
  private active = 0;
  private readonly queue: Queued[] = [];

  constructor(
    private readonly limits: () => CsrLimits,
    private readonly clock: Clock,
  ) {}

  /** Resolves with a release function once the signing may run; rejects when it waited too long. */
  acquire(): Promise<Release> {
    const { csrMaxPerSecond: rate, csrMaxConcurrent: concurrent } = this.limits();
    if (rate > 0) return this.takeToken(rate);
    if (concurrent > 0) return this.takeSlot(concurrent);
    return Promise.resolve(NOOP);
  }

  private takeToken(rate: number): Promise<Release> {
    const now = this.clock.now();
    const at = Math.max(now, this.nextTokenAt);
    if (at - now > MAX_WAIT_MS) return Promise.reject(rateLimited());
    this.nextTokenAt = at + 1000 / rate;
    if (at === now) return Promise.resolve(NOOP);
    return new Promise((resolve) => this.clock.setTimer(at - now, () => resolve(NOOP)));
  }

  private takeSlot(max: number): Promise<Release> {
    if (this.active < max) {
      this.active++;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const entry: Queued = { resolve, timer: undefined };
      entry.timer = this.clock.setTimer(MAX_WAIT_MS, () => {
        const i = this.queue.indexOf(entry);
        if (i >= 0) this.queue.splice(i, 1);
        reject(rateLimited());
      });
      this.queue.push(entry);
    });
  }

  private releaser(): Release {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.queue.shift();
      if (next === undefined) {
        this.active--;
        return;
      }
      next.timer?.cancel(); // the slot passes straight to the next in line
      next.resolve(this.releaser());
    };
  }
}
