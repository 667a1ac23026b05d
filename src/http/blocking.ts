// Blocking queries (reference §2.2): `?index=N&wait=D` parks a read until what it watches has an
// index above N, or until the wait (default 5 min, capped at 10 min, plus up to wait/16 jitter)
// runs out. Wake-ups come from the store's one-shot watches, so a query wakes only when its own
// key, prefix or table changed (decision D6). Guarded by bench/http/fanout.ts.
import type { Clock, TimerHandle } from '../core/clock.js';
import { parseDuration } from '../core/duration.js';
import { invalid } from '../core/errors.js';
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
    if (parsed === undefined) throw invalid('INVALID_WAIT', 'Invalid wait time');
    waitMs = parsed;
  }
  let minIndex = 0;
  const index = query.get('index');
  if (index) {
    if (!/^\d+$/.test(index) || BigInt(index) > UINT64_MAX) throw invalid('INVALID_INDEX', 'Invalid index');
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

/** The meta headers of a blocking-capable read; the index is never 0 (reference §2.3). */
export function queryMetaHeaders(brand: BrandHeaders, index: number): Header[] {
  return [
    [brand.index, String(index > 0 ? index : 1)],
    [brand.knownLeader, 'true'],
    [brand.lastContact, '0'],
  ];
}

export interface WatchedRead {
  readonly target: WatchTarget;
  /** The index of what the read returns (its key's, its prefix's, its table's). */
  index(): number;
  /** The reply for the current data, given the index just read. */
  render(index: number): Reply;
}

export class BlockingQueries {
  private readonly parkedSet = new Set<ParkedQuery>();

  constructor(
    private readonly store: StateStore,
    private readonly clock: Clock,
  ) {}

  get parked(): number {
    return this.parkedSet.size;
  }

  /** Answers at once when the read does not block or is already past `minIndex`; else parks. */
  answer(req: ApiRequest, params: BlockingParams, read: WatchedRead): Reply | Promise<Reply> {
    const index = read.index();
    if (params.minIndex === 0 || index > params.minIndex) return read.render(index);
    return new Promise<Reply>((resolve) => {
      const parked = new ParkedQuery(this.store, this.parkedSet, read, params.minIndex, resolve);
      parked.arm(this.clock, params.timeoutMs);
      req.onAbort(() => parked.cancel());
    });
  }

  /** Answers every parked query with its current data (graceful shutdown). */
  releaseAll(): void {
    for (const parked of [...this.parkedSet]) parked.finish();
  }
}

class ParkedQuery {
  private cancelWatch: (() => void) | undefined;
  private timer: TimerHandle | undefined;

  constructor(
    private readonly store: StateStore,
    private readonly registry: Set<ParkedQuery>,
    private readonly read: WatchedRead,
    private readonly minIndex: number,
    private readonly resolve: (reply: Reply) => void,
  ) {}

  arm(clock: Clock, timeoutMs: number): void {
    this.registry.add(this);
    this.watch();
    this.timer = clock.setTimer(timeoutMs, () => {
      this.timer = undefined;
      this.finish();
    });
  }

  private watch(): void {
    this.cancelWatch = this.store.watchOnce(this.read.target, () => {
      this.cancelWatch = undefined;
      const index = this.read.index();
      // A watch fires only on a change of the target, so this re-watch is a safety net.
      if (index > this.minIndex) this.finish(index);
      else this.watch();
    });
  }

  finish(index = this.read.index()): void {
    if (!this.registry.delete(this)) return;
    this.release();
    this.resolve(this.read.render(index));
  }

  /** The client went away: drop the watch and the timer, answer nothing. */
  cancel(): void {
    if (this.registry.delete(this)) this.release();
  }

  private release(): void {
    this.cancelWatch?.();
    this.cancelWatch = undefined;
    this.timer?.cancel();
    this.timer = undefined;
  }
}
