// The agent's cached copy of the CA roots (docs/decisions.md#agent-cache-headers): filled by the
// first request (a MISS), then refreshed in the background on every change of the roots table, and
// served from memory even when the state backend fails (fail-open), with `Age` counting from the
// first failed refresh. Blocking reads park in the HTTP layer's blocking queries on the cache's own
// index (not the store's), woken through `watchOnce`.
import type { Clock, TimerHandle } from '../../core/clock.js';
import type { Logger } from '../../core/log.js';
import type { RootsSnapshot } from './roots-view.js';

export interface RootsSource {
  /** The roots as the store has them now; throws when the backend cannot answer. */
  roots(): RootsSnapshot;
  /** A one-shot watch on the roots (the store's watchOnce on the roots table). */
  watch(fn: () => void): () => void;
}

export interface CachedRoots {
  readonly snapshot: RootsSnapshot;
  readonly hit: boolean;
  /** Seconds since the cache last lost contact with the backend; 0 while in contact. */
  readonly ageSec: number;
}

/** Retry delays after a failed refresh: 1 s doubling to 1 min, plus up to as much again in jitter. */
const RETRY_BASE_MS = 1000;
const RETRY_MAX_MS = 60_000;

const NO_CANCEL = (): void => {};

export class RootsCache {
  private snapshot: RootsSnapshot | undefined;
  private lastError: unknown;
  private lostSince: number | undefined;
  private failures = 0;
  private cancelWatch: (() => void) | undefined;
  private retryTimer: TimerHandle | undefined;
  private closed = false;
  /** One-shot watches of parked reads, told of the next snapshot. */
  private readonly watchers = new Set<() => void>();
  private readonly listeners = new Set<(snapshot: RootsSnapshot) => void>();

  constructor(
    private readonly source: RootsSource,
    private readonly clock: Clock,
    private readonly random: () => number,
    private readonly log: Logger,
  ) {}

  /** The cached roots; the first call fills the cache from the backend and throws if it cannot. */
  get(): CachedRoots {
    if (this.snapshot !== undefined) return { snapshot: this.snapshot, hit: true, ageSec: this.ageSec() };
    this.refresh();
    if (this.snapshot === undefined) throw this.lastError;
    return { snapshot: this.snapshot, hit: false, ageSec: 0 };
  }

  /** Calls `fn` once, when the cache next takes new roots; returns the cancel. */
  watchOnce(fn: () => void): () => void {
    if (this.closed) return NO_CANCEL;
    this.watchers.add(fn);
    return () => this.watchers.delete(fn);
  }

  /** Calls `fn` with every new snapshot after the first (the leaf manager's root-change hook). */
  subscribe(fn: (snapshot: RootsSnapshot) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private ageSec(): number {
    return this.lostSince === undefined ? 0 : Math.round((this.clock.now() - this.lostSince) / 1000);
  }

  private refresh(): void {
    if (this.closed) return;
    this.retryTimer?.cancel();
    this.retryTimer = undefined;
    // Watch before reading, so a change between the read and the watch cannot be missed.
    this.cancelWatch?.();
    this.cancelWatch = undefined;
    let next: RootsSnapshot;
    try {
      this.cancelWatch = this.source.watch(() => {
        this.cancelWatch = undefined;
        this.refresh();
      });
      next = this.source.roots();
    } catch (err) {
      this.failed(err);
      return;
    }
    if (this.lostSince !== undefined) this.log.info({ index: next.index }, 'CA roots refresh recovered');
    this.lostSince = undefined;
    this.failures = 0;
    const previous = this.snapshot;
    if (previous !== undefined && previous.index === next.index) return;
    this.snapshot = next;
    if (previous === undefined) return;
    const watchers = [...this.watchers];
    this.watchers.clear();
    for (const fn of watchers) fn();
    for (const listener of this.listeners) listener(next);
  }

  private failed(err: unknown): void {
    this.lastError = err;
    this.lostSince ??= this.clock.now();
    this.failures++;
    const delay = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** (this.failures - 1));
    if (this.snapshot !== undefined)
      this.log.warn({ err, retryInMs: delay }, 'CA roots refresh failed; serving the cached roots');
    this.retryTimer = this.clock.setTimer(delay + Math.floor(this.random() * delay), () => {
      this.retryTimer = undefined;
      this.refresh();
    });
  }

  /** Stops refreshing and forgets every watch (parked reads are the blocking queries' to answer). */
  close(): void {
    this.closed = true;
    this.cancelWatch?.();
    this.retryTimer?.cancel();
    this.watchers.clear();
  }
}
