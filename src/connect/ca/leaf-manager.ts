// The agent's leaf certificates (docs/decisions.md D7, D8, D13): one cached leaf per (namespace,
// service) in a bounded LRU, shared across tokens (the HTTP layer checks service:write on every
// request). Concurrent requests share one issuance, which waits its turn in the IssueQueue. A leaf
// is renewed at a random time in 60-90 % of its life while someone watches it; after a root change,
// watchers get a new one within a random spread. Blocking reads park in the HTTP layer's blocking
// queries, on a LeafWatch: this file only says when a leaf changed. A non-blocking read never waits
// behind a blocking one: a valid cached leaf is answered at once.
import { LRUCache } from 'lru-cache';
import type { Clock, TimerHandle } from '../../core/clock.js';
import { agentError, isAgentError } from '../../core/errors.js';
import type { Logger } from '../../core/log.js';
import { causeOf, LogGate } from '../../core/log-gate.js';
import type { IssuedLeaf } from './authority.js';
import { IssueQueue } from './issue-queue.js';
import { renewalTime } from './renewal.js';
import type { RootsSnapshot } from './roots-view.js';

export interface LeafSource {
  /** `token`: the caller's, for a server to check service:write again (a client agent's leaves; docs/decisions.md D24). */
  signLeaf(namespace: string, service: string, token?: string): Promise<IssuedLeaf>;
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
  /** An entry is dropped this long after its last read (docs/decisions.md D7). */
  readonly idleTtlMs: number;
  /** Re-issue window after a root change (docs/decisions.md D13); 0 re-issues at once. */
  readonly rootChangeSpreadMs: number;
  /** Runs `fn` on a later event-loop turn, for the IssueQueue (setImmediate by default). */
  readonly nextTurn?: (fn: () => void) => void;
  /** Told after each new leaf, to keep the cache on disk (leaf-cache-file.ts). */
  readonly leafIssued?: (() => void) | undefined;
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

/**
 * A blocking read's view of one service's leaf, for the blocking queries to park on: the leaf now,
 * and a one-shot callback for its next one. While a watch is held the leaf is renewed on time.
 */
export interface LeafWatch {
  readonly leaf: CachedLeaf;
  watchOnce(fn: () => void): () => void;
}

/** After a failed background renewal the old leaf stays; the next try is within this window. */
const RETRY_WINDOW_MS = 30_000;

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
  /** One-shot watches of parked reads, made with the first: an empty Set adds ~160 B to every cached leaf. */
  private watchers: Set<() => void> | undefined;
  timer: TimerHandle | undefined;
  timerAt = Infinity;
  /** The token of the latest caller: issuances and renewals are asked for with it. */
  token: string | undefined;

  constructor(
    readonly namespace: string,
    readonly service: string,
  ) {}

  get watched(): boolean {
    return this.watchers !== undefined && this.watchers.size > 0;
  }

  addWatcher(fn: () => void): void {
    (this.watchers ??= new Set()).add(fn);
  }

  /** False when the watch was already gone (fired or cancelled). */
  removeWatcher(fn: () => void): boolean {
    return this.watchers?.delete(fn) ?? false;
  }

  /** Every watch, removed. */
  takeWatchers(): Iterable<() => void> {
    const watchers = this.watchers;
    this.watchers = undefined;
    return watchers ?? NO_WATCHERS;
  }
}

const NO_WATCHERS: readonly (() => void)[] = [];

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
  private readonly queue: IssueQueue<Entry>;
  /** Every watched leaf's renewal fails alike while no leaf can be signed: said once per cause, counted when one is signed. */
  private readonly renewalFailures: LogGate;

  constructor(private readonly o: LeafManagerOptions) {
    this.renewalFailures = new LogGate({ log: o.log, clock: o.clock });
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
    this.queue = new IssueQueue((entry) => this.start(entry), o.nextTurn);
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * A service's leaf for a non-blocking read: the cached one while valid, else a new one. A leaf
   * past its renewal time but not expired is still answered when no new one can be signed (etcd or
   * every server down), as a Consul agent's cache answers while its servers are away.
   */
  get(namespace: string, service: string, token?: string): LeafAnswer | Promise<LeafAnswer> {
    const entry = this.entry(namespace, service, token);
    const leaf = entry.leaf;
    if (leaf !== undefined && (this.closed || this.usable(leaf))) return { leaf, hit: true };
    const issuing = this.issue(entry);
    if (leaf === undefined || !this.unexpired(leaf)) return issuing;
    return issuing.catch((err: unknown) => {
      if (isAgentError(err) && err.kind === 'unavailable' && this.unexpired(leaf)) return { leaf, hit: true };
      throw err;
    });
  }

  /**
   * What a blocking read (`?index=minIndex`) parks on, when it must wait for a leaf newer than the
   * one it has; undefined when it is answered as a non-blocking read is (`get`).
   */
  waitFor(namespace: string, service: string, minIndex: number, token?: string): LeafWatch | undefined {
    if (minIndex === 0 || this.closed) return undefined;
    const entry = this.entry(namespace, service, token);
    const leaf = entry.leaf;
    if (leaf === undefined || leaf.index > minIndex) return undefined;
    const watch = (fn: () => void): (() => void) => this.watch(entry, fn);
    return {
      get leaf() {
        return entry.leaf ?? leaf;
      },
      watchOnce: watch,
    };
  }

  /** Every leaf held now, for keeping on disk. */
  held(): CachedLeaf[] {
    const leaves: CachedLeaf[] = [];
    for (const entry of this.entries.values()) if (entry.leaf !== undefined) leaves.push(entry.leaf);
    return leaves;
  }

  /** Leaves kept from before a restart: each is its service's cached leaf unless one was issued since. */
  restore(leaves: readonly CachedLeaf[]): void {
    for (const leaf of leaves) {
      const entry = this.entry(leaf.namespace, leaf.service, undefined);
      entry.leaf ??= leaf;
    }
  }

  private entry(namespace: string, service: string, token: string | undefined): Entry {
    const key = `${namespace}\u0000${service}`;
    let entry = this.entries.get(key);
    if (entry === undefined) {
      entry = new Entry(namespace, service);
      this.entries.set(key, entry);
    }
    if (token !== undefined) entry.token = token;
    return entry;
  }

  /** Valid for a non-blocking read: before its renewal time and signed by the active root. */
  private usable(leaf: CachedLeaf): boolean {
    return this.o.clock.now() < leaf.renewAt && leaf.signingKeyId === this.o.roots.get().snapshot.activeSigningKeyId;
  }

  /** Not yet expired, and signed by the active root (a leaf of a replaced root is never kept past renewal). */
  private unexpired(leaf: CachedLeaf): boolean {
    return (
      this.o.clock.now() < leaf.validBefore && leaf.signingKeyId === this.o.roots.get().snapshot.activeSigningKeyId
    );
  }

  private watch(entry: Entry, fn: () => void): () => void {
    entry.addWatcher(fn);
    // A leaf of a replaced root that nobody watched yet gets its herd-guard delay now.
    const leaf = entry.leaf;
    if (
      leaf !== undefined &&
      entry.replaceAt === undefined &&
      leaf.signingKeyId !== this.o.roots.get().snapshot.activeSigningKeyId
    ) {
      entry.replaceAt = this.spreadFromNow();
    }
    this.arm(entry);
    return () => {
      if (entry.removeWatcher(fn) && !entry.watched) this.disarm(entry);
    };
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
        const fields = { err, service: entry.service, namespace: entry.namespace };
        this.renewalFailures.fail(causeOf(err), 'warn', fields, 'leaf renewal failed; retrying');
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
   * One issuance per entry at a time, started in its turn by the IssueQueue; every caller gets its
   * answer, one object for all of them, and every watch hears of the new leaf. A pending request
   * of a wave holds what is made here, so it is one promise per issuance, settled from the entry.
   */
  private issue(entry: Entry): Promise<LeafAnswer> {
    if (entry.inflight !== undefined) return entry.inflight;
    entry.inflight = new Promise<LeafAnswer>((resolve, reject) => {
      entry.settle = { resolve, reject };
    });
    this.queue.push(entry);
    return entry.inflight;
  }

  /** The IssueQueue's start of an issuance: the returned promise frees its place when settled. */
  private start(entry: Entry): Promise<unknown> {
    let signing: Promise<IssuedLeaf>;
    try {
      signing = this.o.source.signLeaf(entry.namespace, entry.service, entry.token);
    } catch (err) {
      signing = Promise.reject(err);
    }
    return signing.then(
      (issued) => this.issued(entry, issued),
      (err: unknown) => this.failed(entry, leafFailure(err)),
    );
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
    this.renewalFailures.clear();
    this.disarm(entry);
    for (const fn of entry.takeWatchers()) fn();
    settle?.resolve({ leaf, hit: false });
    this.o.leafIssued?.();
  }

  private failed(entry: Entry, err: unknown): void {
    this.doneIssuing(entry)?.reject(err);
  }

  /** Ends the entry's issuance; returns how to settle the promise its callers hold. */
  private doneIssuing(entry: Entry): Settle | undefined {
    const settle = entry.settle;
    entry.settle = undefined;
    entry.inflight = undefined;
    return settle;
  }

  private spreadFromNow(): number {
    return this.o.clock.now() + Math.floor(this.o.random() * this.o.rootChangeSpreadMs);
  }

  /** Leaves of a root no longer active are replaced within the spread (docs/decisions.md D13). */
  private rootsChanged(snapshot: RootsSnapshot): void {
    for (const entry of this.entries.values()) {
      const leaf = entry.leaf;
      if (leaf === undefined || leaf.signingKeyId === snapshot.activeSigningKeyId) continue;
      if (entry.replaceAt === undefined) entry.replaceAt = this.spreadFromNow();
      this.arm(entry);
    }
  }

  /**
   * Stops renewals and forgets every watch; parked reads are the blocking queries' to answer
   * (releaseAll, before this). Later reads get the cached leaf without waiting.
   */
  close(): void {
    this.closed = true;
    this.unsubscribe();
    for (const entry of this.entries.values()) {
      this.disarm(entry);
      entry.takeWatchers();
    }
  }
}

/**
 * A signing whose commit (its serials, its record) went unanswered leaves no leaf for the caller to
 * read back, at most serials taken and never used: it is told etcd could not sign, and asks again
 * (docs/decisions.md#write-outcome-unknown is for writes a caller made).
 */
function leafFailure(err: unknown): unknown {
  if (!isAgentError(err) || err.code !== 'STATE_WRITE_OUTCOME_UNKNOWN') return err;
  return agentError('STATE_NO_LEADER', { cause: err });
}
