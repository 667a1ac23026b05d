// Blocking queries: `?index=N&wait=D` parks a read until what it watches has an index above N,
// or until the wait (default 5 min, capped at 10 min, plus up to wait/16 jitter: docs/decisions.md
// D8) runs out. Wake-ups come from one-shot watches:
// the store's, so a query wakes only when its own key, prefix or table changed (docs/decisions.md
// D6), or a domain source's own (a service's leaf certificate). Guarded by bench/sizing/fanout.ts.
import type { Clock, TimerHandle } from '../core/clock.js';
import { parseDuration } from '../core/duration.js';
import { agentError } from '../core/errors.js';
import type { StateStore, WatchTarget } from '../state/types.js';
import type { BrandHeaders } from './brand.js';
import type { Query } from './query.js';
import type { Header, Reply } from './reply.js';
import type { ApiRequest } from './request.js';

export interface BlockingLimits {
  readonly defaultQueryTimeMs: number;
  readonly maxQueryTimeMs: number;
}

export interface BlockingParams {
  /** 0 means the read does not block. */
  readonly minIndex: number;
  /** The wait, clamped and with its jitter already added. */
  readonly timeoutMs: number;
}

const UINT64_MAX = 18446744073709551615n;

/** Parses `wait` then `index`, as Consul does, with its exact error texts. */
export function parseBlockingParams(query: Query, limits: BlockingLimits, random: () => number): BlockingParams {
  let waitMs = 0;
  const wait = query.get('wait');
  if (wait) {
    const parsed = parseDuration(wait);
    // A negative duration parses in Go; Consul then falls back to the default wait.
    if (parsed === undefined) throw agentError('INVALID_WAIT');
    waitMs = parsed;
  }
  let minIndex = 0;
  const index = query.get('index');
  if (index) {
    if (!/^\d+$/.test(index) || BigInt(index) > UINT64_MAX) throw agentError('INVALID_INDEX');
    minIndex = Number(index);
  }
  return { minIndex, timeoutMs: blockingTimeout(waitMs, limits, random) };
}

/** The wait actually used: default when 0, capped at the maximum, plus jitter in [0, wait/16). */
export function blockingTimeout(waitMs: number, limits: BlockingLimits, random: () => number): number {
  let timeout = waitMs > 0 ? waitMs : limits.defaultQueryTimeMs;
  if (timeout > limits.maxQueryTimeMs) timeout = limits.maxQueryTimeMs;
  return timeout + Math.floor(random() * (timeout / 16));
}

/** The meta headers of a blocking-capable read; the index is never 0 (Consul's clients loop on 0). */
export function queryMetaHeaders(brand: BrandHeaders, index: number | bigint): Header[] {
  const leader = brand.leader;
  return [
    [brand.index, String(index > 0 ? index : 1)],
    [brand.knownLeader, leader === undefined || leader.knownLeader ? 'true' : 'false'],
    [brand.lastContact, leader === undefined ? '0' : String(leader.lastContactMs)],
  ];
}

/** A one-shot watch kept outside the store (a service's leaf): calls `fn` once; returns the cancel. */
export type WatchSource = (fn: () => void) => () => void;

export interface WatchedRead {
  /** What wakes the read: a store target, or a source's own one-shot watch. */
  readonly target: WatchTarget | WatchSource;
  /** The index of what the read returns (its key's, its prefix's, its table's). */
  index(): number;
  /** The reply for the current data, given the index just read. */
  render(index: number): Reply;
  /**
   * Reads with equal keys give equal replies for an index (same data, same rendering, same
   * ACL view): they park together and are rendered once per wake-up. Absent: parked alone.
   */
  readonly shareKey?: string;
  /**
   * The index names the data rather than counting changes (Consul's event list: the last event's
   * ID folded to 64 bits): any index but the one asked for is news, a lower one included.
   */
  readonly unordered?: boolean;
}

/** Whether a read at `index` answers a query that waits past `minIndex`. */
function isNews(read: WatchedRead, index: number, minIndex: number): boolean {
  return read.unordered === true ? index !== minIndex : index > minIndex;
}

/** Hands a reply to the transport that holds a parked request (the adapter's writer). */
export type Deliver<H> = (handle: H, reply: Reply, closeConnection: boolean) => void;

/**
 * Turns an error thrown by a read on wake-up into the reply a non-parked request would get for it
 * (the dispatcher's errorReply, which also logs it); `path` is the request path, for the log.
 */
export type ErrorReplier = (err: unknown, path: string) => Reply;

/** Timeouts are served from a shared wheel with this resolution instead of a timer per query. */
const WHEEL_RESOLUTION_MS = 100;

/**
 * Parked reads. Memory per parked query is one small Entry (measured target: ≤ 1.5 KiB RSS per
 * parked query including uWS's own socket state); readers of the same data share one Group with
 * one store watch, and a wake-up renders once per group and writes from the store's deferred
 * (setImmediate) callback, never from inside another request's handler.
 */
export class BlockingQueries {
  /** Every group with parked members; shared groups are also found by key. */
  private readonly live = new Set<Group>();
  private readonly shared = new Map<string, Group>();
  private readonly wheel: TimeoutWheel;
  private parkedCount = 0;

  constructor(
    private readonly store: StateStore,
    private readonly clock: Clock,
    private readonly errorReply: ErrorReplier,
  ) {
    this.wheel = new TimeoutWheel(clock, (entry) => this.expire(entry));
  }

  get parked(): number {
    return this.parkedCount;
  }

  /**
   * Answers at once when the read does not block or is already past `minIndex`; else parks.
   * Throws what the read throws here (the caller turns it into an error reply); later, on a
   * wake-up, a throwing read answers the parked members with `errorReply` instead.
   */
  answer(req: ApiRequest, params: BlockingParams, read: WatchedRead): Reply | Parked {
    const index = read.index();
    if (params.minIndex === 0 || isNews(read, index, params.minIndex)) return read.render(index);
    return new Parked(this, req, read, params);
  }

  /** Answers every parked query with its current data (graceful shutdown). */
  releaseAll(): void {
    for (const group of [...this.live]) {
      const current = this.current(group);
      if (current === undefined) continue;
      for (const entry of [...group.members]) this.settle(entry, current.reply);
    }
  }

  /** @internal Called by Parked.attach. */
  park<H>(parked: Parked, handle: H, deliver: Deliver<H>, closeConnection: boolean): Entry {
    const { read } = parked;
    const key = read.shareKey;
    let group = key === undefined ? undefined : this.shared.get(key);
    if (group === undefined) {
      group = new Group(read, key, parked.path);
      this.live.add(group);
      if (key !== undefined) this.shared.set(key, group);
      this.arm(group);
    }
    const entry = new Entry(
      group,
      handle,
      deliver as Deliver<unknown>,
      closeConnection,
      parked.params.minIndex,
      this.clock.now() + parked.params.timeoutMs,
    );
    group.members.add(entry);
    this.wheel.add(entry);
    this.parkedCount++;
    return entry;
  }

  /** @internal The client went away: forget the entry, answer nothing. */
  drop(entry: Entry): void {
    if (!entry.group.members.delete(entry)) return;
    this.wheel.remove(entry);
    this.parkedCount--;
    this.retireIfEmpty(entry.group);
  }

  private arm(group: Group): void {
    const wake = (): void => {
      group.cancelWatch = undefined;
      const current = this.current(group);
      if (current === undefined) return;
      for (const entry of [...group.members]) {
        if (isNews(group.read, current.index, entry.minIndex)) this.settle(entry, current.reply);
      }
      // A watch fires only on a change of its target, so survivors are a safety net.
      if (group.members.size > 0) this.arm(group);
    };
    const { target } = group.read;
    group.cancelWatch = typeof target === 'function' ? target(wake) : this.store.watchOnce(target, wake);
  }

  private expire(entry: Entry): void {
    if (!entry.group.members.has(entry)) return;
    const current = this.current(entry.group);
    if (current !== undefined) this.settle(entry, current.reply);
  }

  /**
   * The group's index and reply now, for a wake-up (watch, timeout, release). These run from the
   * store's deferred callback or a timer, where a throw would escape as an uncaught exception: if
   * the read or its render throws (the state backend failed), every member of the group gets the
   * error reply a non-parked request would get, the group retires (watch cancelled, entries off
   * the wheel), and this returns undefined. The error reply is not kept as the group's rendering.
   */
  private current(group: Group): { readonly index: number; readonly reply: Reply } | undefined {
    try {
      const index = group.read.index();
      return { index, reply: group.reply(index) };
    } catch (err) {
      const reply = this.errorReply(err, group.path);
      for (const entry of [...group.members]) this.settle(entry, reply);
      return undefined;
    }
  }

  private settle(entry: Entry, reply: Reply): void {
    entry.group.members.delete(entry);
    this.wheel.remove(entry);
    this.parkedCount--;
    this.retireIfEmpty(entry.group);
    entry.deliver(entry.handle, reply, entry.closeConnection);
  }

  private retireIfEmpty(group: Group): void {
    if (group.members.size > 0) return;
    group.cancelWatch?.();
    group.cancelWatch = undefined;
    this.live.delete(group);
    if (group.key !== undefined && this.shared.get(group.key) === group) this.shared.delete(group.key);
  }
}

/** A read that must wait: the transport attaches what it needs to answer it later. */
export class Parked {
  constructor(
    private readonly queries: BlockingQueries,
    private readonly req: ApiRequest,
    readonly read: WatchedRead,
    readonly params: BlockingParams,
  ) {}

  /** The request path (logged with an error that answers the parked read). */
  get path(): string {
    return this.req.head.path;
  }

  /** Parks with a transport handle; returns the detach to call when the client goes away. */
  attach<H>(handle: H, deliver: Deliver<H>, closeConnection: boolean): () => void {
    return detacher(this.queries, this.queries.park(this, handle, deliver, closeConnection));
  }

  /** Parks and resolves with the reply (for callers without a transport handle, and tests). */
  wait(): Promise<Reply> {
    return new Promise((resolve) => {
      const detach = this.attach(resolve, (done, reply) => done(reply), false);
      this.req.onAbort(detach);
    });
  }
}

// Outside any method so the closure holds only these two, not the request (memory per parked query).
function detacher(queries: BlockingQueries, entry: Entry): () => void {
  return () => queries.drop(entry);
}

class Group {
  readonly members = new Set<Entry>();
  cancelWatch: (() => void) | undefined;
  private rendered: { readonly index: number; readonly reply: Reply } | undefined;

  constructor(
    readonly read: WatchedRead,
    readonly key: string | undefined,
    /** The path of the request that opened the group (shared members read the same data). */
    readonly path: string,
  ) {}

  /** One render per index for the whole group; a render that throws caches nothing. */
  reply(index: number): Reply {
    if (this.rendered?.index === index) return this.rendered.reply;
    const reply = this.read.render(index);
    this.rendered = { index, reply };
    return reply;
  }
}

class Entry {
  slot: number | undefined;
  constructor(
    readonly group: Group,
    readonly handle: unknown,
    readonly deliver: Deliver<unknown>,
    readonly closeConnection: boolean,
    readonly minIndex: number,
    readonly deadline: number,
  ) {}
}

/** Deadlines bucketed by WHEEL_RESOLUTION_MS behind one timer for the earliest bucket. */
class TimeoutWheel {
  private readonly slots = new Map<number, Set<Entry>>();
  private readonly order: number[] = [];
  private timer: TimerHandle | undefined;
  private timerAt = Infinity;

  constructor(
    private readonly clock: Clock,
    private readonly onExpire: (entry: Entry) => void,
  ) {}

  add(entry: Entry): void {
    const slot = Math.ceil(entry.deadline / WHEEL_RESOLUTION_MS) * WHEEL_RESOLUTION_MS;
    entry.slot = slot;
    let set = this.slots.get(slot);
    if (set === undefined) {
      set = new Set();
      this.slots.set(slot, set);
      this.order.splice(lowerBound(this.order, slot), 0, slot);
    }
    set.add(entry);
    if (slot < this.timerAt) this.schedule(slot);
  }

  remove(entry: Entry): void {
    const slot = entry.slot;
    if (slot === undefined) return;
    entry.slot = undefined;
    const set = this.slots.get(slot);
    if (set === undefined) return;
    set.delete(entry);
    if (set.size === 0) this.dropSlot(slot);
  }

  private dropSlot(slot: number): void {
    this.slots.delete(slot);
    const at = lowerBound(this.order, slot);
    if (this.order[at] === slot) this.order.splice(at, 1);
    if (this.order.length === 0) {
      this.timer?.cancel();
      this.timer = undefined;
      this.timerAt = Infinity;
    }
  }

  private schedule(slot: number): void {
    this.timer?.cancel();
    this.timerAt = slot;
    this.timer = this.clock.setTimer(Math.max(0, slot - this.clock.now()), () => this.fire());
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = this.clock.now();
    while (this.order.length > 0 && (this.order[0] as number) <= now) {
      const slot = this.order[0] as number;
      for (const entry of [...(this.slots.get(slot) ?? [])]) this.onExpire(entry);
      if (this.slots.has(slot)) this.dropSlot(slot);
    }
    const next = this.order[0];
    if (next !== undefined) this.schedule(next);
  }
}

function lowerBound(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((sorted[mid] as number) < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
