// The agent's leaf certificates (reference §5.5, decisions D7, D8, D13): one cached leaf per
// (namespace, service) in a bounded LRU, shared across tokens (the HTTP layer checks service:write
// on every request). Concurrent requests share one issuance. A leaf is renewed at a random time in
// 60-90 % of its life; after a root change, parked watchers get a new one within a random spread.
// A non-blocking read never waits behind a blocking one: a valid cached leaf is answered at once.
import { LRUCache } from 'lru-cache';
import type { Clock, TimerHandle } from '../../core/clock.js';
import type { Logger } from '../../core/log.js';
import type { IssuedLeaf } from './ca-manager.js';
import { renewalTime } from './renewal.js';
import type { RootsSnapshot } from './roots-view.js';

export interface LeafSource {
  signLeaf(namespace: string, service: string): Promise<IssuedLeaf>;
}

/** What the manager needs of the roots: the active signing key now, and news of a change. */
export interface RootsFeed {
  get(): { readonly snapshot: RootsSnapshot };
  subscribe(fn: (snapshot: RootsSnapshot) => void): () => void;
}

export interface LeafManagerOptions {
  readonly source: LeafSource;
  readonly roots: RootsFeed;
  readonly clock: Clock;
  readonly random: () => number;
  readonly log: Logger;
  readonly maxEntries: number;
  /** An entry is dropped this long after its last read (D7). */
  readonly idleTtlMs: number;
  /** Re-issue window after a root change (D13); 0 re-issues at once. */
  readonly rootChangeSpreadMs: number;
  /** Runs `fn` on a later event-loop turn (setImmediate by default). */
  readonly nextTurn?: (fn: () => void) => void;
}

export interface CachedLeaf extends IssuedLeaf {
  readonly namespace: string;
  readonly service: string;
  readonly issuedAt: number;
  /** When this leaf is replaced (drawn once, in its renewal window). */
  readonly renewAt: number;
}

export interface LeafAnswer {
  readonly leaf: CachedLeaf;
  readonly hit: boolean;
}

export interface LeafRead {
  /** 0 for a non-blocking read. */
  readonly minIndex: number;
  readonly timeoutMs: number;
  /** Registers cleanup for a client that goes away while parked. */
  readonly onAbort: (fn: () => void) => void;
}

/** After a failed background renewal the old leaf stays; the next try is within this window. */
const RETRY_WINDOW_MS = 30_000;

/**
 * Issuances started per event-loop turn. Starting one (serial commit, pool hand-off) costs the
 * main thread ~30 µs; 1,000 services asking at once would otherwise hold the loop ~30 ms in one
 * piece, and every request behind it (authorize) would wait. 16 per turn keeps each slice near
 * 0.5 ms while the pool, which signs far slower than this, never runs dry. Guarded by
 * bench/http/ca.ts (authorize p99 during a first-leaf storm).
 */
const STARTS_PER_TURN = 16;

/**
 * Issuances started and not yet settled, at most: a serial committed, a task built, waiting for or
 * in the signing pool. The pool takes 2 batches of 16 per worker at a time, so more would only
 * wait there. A wave of 1,000 first leaves used to start them all within milliseconds and hold
 * that state for the whole wave, ~1 KB a request of the 3.3 KB a heap snapshot showed, which
 * young-generation GCs copied and promoted; the rest now wait as a place in line
 * (bench/README.md, session 5).
 */
export const MAX_ISSUING = 128;

interface Waiter {
  readonly resolve: (answer: LeafAnswer) => void;
  timer: TimerHandle | undefined;
}

interface Settle {
  readonly resolve: (answer: LeafAnswer) => void;
  readonly reject: (err: unknown) => void;
}

class Entry {
  leaf: CachedLeaf | undefined;
  /** The issuance in progress, shared by every caller; `settle` ends it. */
  inflight: Promise<LeafAnswer> | undefined;
  settle: Settle | undefined;
  /** Set by a root change: replace the leaf at this time (the herd guard). */
  replaceAt: number | undefined;
  /**
   * Parked readers, created with the first: most entries never have one, and an empty Set made a
   * cached leaf 2.02 KB of heap instead of 1.86 (heap snapshots of 3,000 leaves).
   */
  private waiting: Set<Waiter> | undefined;
  timer: TimerHandle | undefined;
  timerAt = Infinity;

  constructor(
    readonly namespace: string,
    readonly service: string,
  ) {}

  get watched(): boolean {
    return this.waiting !== undefined && this.waiting.size > 0;
  }

  addWaiter(waiter: Waiter): void {
    (this.waiting ??= new Set()).add(waiter);
  }

  /** False when the waiter was already gone (answered, timed out or aborted). */
  removeWaiter(waiter: Waiter): boolean {
    return this.waiting?.delete(waiter) ?? false;
  }

  /** Every parked reader, removed. */
  takeWaiters(): Iterable<Waiter> {
    const waiting = this.waiting;
    this.waiting = undefined;
    return waiting ?? NO_WAITERS;
  }
}

const NO_WAITERS: readonly Waiter[] = [];

/**
 * Every field written out, in one order: a spread followed by more fields gave each leaf a hidden
 * class of its own (V8 built a new map per object; a profile of a first-leaf wave showed it), and
 * every later read of a leaf went megamorphic.
 */
function cachedLeaf(issued: IssuedLeaf, entry: Entry, issuedAt: number, renewAt: number): CachedLeaf {
  return {
    serial: issued.serial,
    serialNumber: issued.serialNumber,
    certPem: issued.certPem,
    privateKeyPem: issued.privateKeyPem,
    uri: issued.uri,
    validAfter: issued.validAfter,
    validBefore: issued.validBefore,
    index: issued.index,
    signingKeyId: issued.signingKeyId,
    namespace: entry.namespace,
    service: entry.service,
    issuedAt,
    renewAt,
  };
}

export class LeafManager {
  private readonly entries: LRUCache<string, Entry>;
  private readonly unsubscribe: () => void;
  private closed = false;
  /** Entries whose issuance waits for its turn (startSome). */
  private readonly queued: Entry[] = [];
  private startsScheduled = false;
  /** Issuances started and not yet settled (MAX_ISSUING). */
  private issuing = 0;

  constructor(private readonly o: LeafManagerOptions) {
    this.entries = new LRUCache<string, Entry>({
      max: o.maxEntries,
      ttl: o.idleTtlMs,
      updateAgeOnGet: true,
      perf: { now: () => o.clock.now() },
      // An evicted entry with parked readers keeps serving them; without, its timer goes.
      dispose: (entry) => {
        if (!entry.watched) this.disarm(entry);
      },
    });
    this.unsubscribe = o.roots.subscribe((snapshot) => this.rootsChanged(snapshot));
  }

  get size(): number {
    return this.entries.size;
  }

  /** The leaf for a service: cached, renewed, or waited for (`?index`), as §5.5 describes. */
  get(namespace: string, service: string, read: LeafRead): LeafAnswer | Promise<LeafAnswer> {
    const key = `${namespace}\u0000${service}`;
    let entry = this.entries.get(key);
    if (entry === undefined) {
      entry = new Entry(namespace, service);
      this.entries.set(key, entry);
    }
    const leaf = entry.leaf;
    if (leaf === undefined || read.minIndex === 0 || leaf.index > read.minIndex) {
      if (leaf !== undefined && this.usable(leaf)) return { leaf, hit: true };
      return this.issue(entry);
    }
    if (this.closed) return { leaf, hit: true };
    return this.park(entry, leaf, read);
  }

  /** Valid for a non-blocking read: before its renewal time and signed by the active root. */
  private usable(leaf: CachedLeaf): boolean {
    return this.o.clock.now() < leaf.renewAt && leaf.signingKeyId === this.o.roots.get().snapshot.activeSigningKeyId;
  }

  private park(entry: Entry, leaf: CachedLeaf, read: LeafRead): Promise<LeafAnswer> {
    return new Promise((resolve) => {
      const waiter: Waiter = { resolve, timer: undefined };
      entry.addWaiter(waiter);
      waiter.timer = this.o.clock.setTimer(read.timeoutMs, () => {
        if (!entry.removeWaiter(waiter)) return;
        if (!entry.watched) this.disarm(entry);
        resolve({ leaf: entry.leaf ?? leaf, hit: true });
      });
      read.onAbort(() => {
        if (!entry.removeWaiter(waiter)) return;
        waiter.timer?.cancel();
        if (!entry.watched) this.disarm(entry);
      });
      // A leaf of a replaced root that nobody watched yet gets its herd-guard delay now.
      if (entry.replaceAt === undefined && leaf.signingKeyId !== this.o.roots.get().snapshot.activeSigningKeyId) {
        entry.replaceAt = this.spreadFromNow();
      }
      this.arm(entry);
    });
  }

  /** Keeps one timer per watched entry, at its next replacement time. */
  private arm(entry: Entry): void {
    const leaf = entry.leaf;
    if (leaf === undefined || !entry.watched) return;
    const at = Math.min(leaf.renewAt, entry.replaceAt ?? Infinity);
    if (entry.timer !== undefined && entry.timerAt <= at) return;
    entry.timer?.cancel();
    entry.timerAt = at;
    entry.timer = this.o.clock.setTimer(Math.max(0, at - this.o.clock.now()), () => {
      entry.timer = undefined;
      entry.timerAt = Infinity;
      if (!entry.watched) return;
      this.issue(entry).catch((err: unknown) => {
        // The old leaf stays valid; watchers keep waiting and the renewal is tried again.
        this.o.log.warn({ err, service: entry.service, namespace: entry.namespace }, 'leaf renewal failed; retrying');
        entry.replaceAt = this.o.clock.now() + Math.floor(this.o.random() * RETRY_WINDOW_MS);
        this.arm(entry);
      });
    });
  }

  private disarm(entry: Entry): void {
    entry.timer?.cancel();
    entry.timer = undefined;
    entry.timerAt = Infinity;
  }

  /**
   * One issuance per entry at a time, started in turn (startSome); every caller (and every parked
   * watcher) gets its answer, one object for all of them. A pending request of a wave holds what is
   * made here, so it is one promise per issuance, settled from the entry.
   */
  private issue(entry: Entry): Promise<LeafAnswer> {
    if (entry.inflight !== undefined) return entry.inflight;
    entry.inflight = new Promise<LeafAnswer>((resolve, reject) => {
      entry.settle = { resolve, reject };
    });
    this.queued.push(entry);
    this.scheduleStarts();
    return entry.inflight;
  }

  private scheduleStarts(): void {
    if (this.startsScheduled || this.queued.length === 0 || this.issuing >= MAX_ISSUING) return;
    this.startsScheduled = true;
    (this.o.nextTurn ?? setImmediate)(() => this.startSome());
  }

  /** Starts queued issuances in arrival order: STARTS_PER_TURN a turn, MAX_ISSUING at a time. */
  private startSome(): void {
    this.startsScheduled = false;
    const room = Math.min(STARTS_PER_TURN, MAX_ISSUING - this.issuing);
    for (const entry of this.queued.splice(0, Math.max(0, room))) {
      this.issuing++;
      let signing: Promise<IssuedLeaf>;
      try {
        signing = this.o.source.signLeaf(entry.namespace, entry.service);
      } catch (err) {
        signing = Promise.reject(err);
      }
      signing.then(
        (issued) => this.issued(entry, issued),
        (err: unknown) => this.failed(entry, err),
      );
    }
    this.scheduleStarts();
  }

  private issued(entry: Entry, issued: IssuedLeaf): void {
    const settle = this.doneIssuing(entry);
    const now = this.o.clock.now();
    let leaf: CachedLeaf;
    try {
      leaf = cachedLeaf(issued, entry, now, renewalTime(now, issued, this.o.random));
    } catch (err) {
      settle?.reject(err);
      return;
    }
    entry.leaf = leaf;
    entry.replaceAt = undefined;
    this.disarm(entry);
    const answer: LeafAnswer = { leaf, hit: false };
    for (const waiter of entry.takeWaiters()) {
      waiter.timer?.cancel();
      waiter.resolve(answer);
    }
    settle?.resolve(answer);
  }

  private failed(entry: Entry, err: unknown): void {
    this.doneIssuing(entry)?.reject(err);
  }

  /** Ends the entry's issuance; returns how to settle the promise its callers hold. */
  private doneIssuing(entry: Entry): Settle | undefined {
    const settle = entry.settle;
    entry.settle = undefined;
    entry.inflight = undefined;
    this.issuing--;
    this.scheduleStarts();
    return settle;
  }

  private spreadFromNow(): number {
    return this.o.clock.now() + Math.floor(this.o.random() * this.o.rootChangeSpreadMs);
  }

  /** Leaves of a root no longer active are replaced within the spread (D13). */
  private rootsChanged(snapshot: RootsSnapshot): void {
    for (const entry of this.entries.values()) {
      const leaf = entry.leaf;
      if (leaf === undefined || leaf.signingKeyId === snapshot.activeSigningKeyId) continue;
      if (entry.replaceAt === undefined) entry.replaceAt = this.spreadFromNow();
      this.arm(entry);
    }
  }

  /** Answers every parked read with the leaf it has and stops all timers. */
  close(): void {
    this.closed = true;
    this.unsubscribe();
    for (const entry of this.entries.values()) {
      this.disarm(entry);
      for (const waiter of entry.takeWaiters()) {
        waiter.timer?.cancel();
        if (entry.leaf !== undefined) waiter.resolve({ leaf: entry.leaf, hit: true });
      }
    }
  }
}
