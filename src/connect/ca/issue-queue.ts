// The one place leaf issuance is paced. Issuances wait here in arrival order and start one pool
// batch per event-loop turn, with a bound on how many are started and not yet settled. Past this
// point nothing waits but for the operator's CSR rate limit (`csr_max_per_second` or
// `csr_max_concurrent`, csr-limiter.ts) and in piscina's list of batches, which the bound keeps
// short. Guarded by bench/sizing/ca.ts (authorize during a first-leaf wave).
import { MAX_BATCH } from './signing-protocol.js';

/**
 * Starts per event-loop turn: one pool batch. Starting an issuance (serial commit, hand-off to the
 * pool) costs the main thread ~30 µs, so a wave of 1,000 first leaves started at once would hold
 * the loop ~30 ms in one piece and every request behind it (authorize) would wait; 16 keep a turn's
 * slice near 0.5 ms, while the pool, which signs ~2,000 leaves/s a thread, never runs dry.
 *
 * Issuances started and not yet settled, at most: 128, 8 batches. One signing thread at ~2,000
 * leaves/s works ~60 ms through them, far longer than the few turns it takes to start the next,
 * so the pool always has work; beyond them an issuance waits as a place in this line (one entry
 * object), not as a committed serial and a built task (~1 KB of heap each), which in a wave of
 * 1,000 young-generation collections would copy and promote for the whole wave.
 */
export const STARTS_PER_TURN = MAX_BATCH;
export const MAX_ISSUING = 8 * MAX_BATCH;

export class IssueQueue<T> {
  private readonly waiting: T[] = [];
  private issuing = 0;
  private scheduled = false;

  /**
   * @param start begins one issuance; its promise settling (either way) frees its place.
   * @param nextTurn runs a function on a later event-loop turn (setImmediate; tests step it).
   */
  constructor(
    private readonly start: (item: T) => Promise<unknown>,
    private readonly nextTurn: (fn: () => void) => void = setImmediate,
  ) {}

  /** Issuances waiting for their turn. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Issuances started and not yet settled (at most MAX_ISSUING). */
  get inFlight(): number {
    return this.issuing;
  }

  push(item: T): void {
    this.waiting.push(item);
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled || this.waiting.length === 0 || this.issuing >= MAX_ISSUING) return;
    this.scheduled = true;
    this.nextTurn(() => this.startSome());
  }

  private startSome(): void {
    this.scheduled = false;
    const room = Math.min(STARTS_PER_TURN, MAX_ISSUING - this.issuing);
    for (const item of this.waiting.splice(0, Math.max(0, room))) {
      this.issuing++;
      let running: Promise<unknown>;
      try {
        running = this.start(item);
      } catch (err) {
        running = Promise.reject(err);
      }
      running.then(this.settled, this.settled);
    }
    this.schedule();
  }

  private readonly settled = (): void => {
    this.issuing--;
    this.schedule();
  };
}
