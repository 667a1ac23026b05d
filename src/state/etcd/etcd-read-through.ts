// Tables read through from etcd instead of held in every agent's view (the KV, docs/decisions.md D15).
// A read is one range request: linearizable by default and with `?consistent`, served by the
// member asked with `?stale`. A blocking read waits on an etcd watch of its key or prefix from the
// revision it last saw, so it wakes only when its own rows changed (docs/decisions.md D6), however
// many other writes move the store's revision meanwhile. etcd catches a watch from a past revision
// up in a loop that runs every 100 ms: a write landing while a wait's watch is being created can
// take that long to arrive (bench/sizing/cluster.ts waits for the watch before it writes). A value
// that fails its table's schema is left out of the rows and named in `unreadable`, so that one bad
// value never fails a listing (row-check.ts). A listing is read in pages bounded in bytes
// (etcd-client.ts), keys only when asked (etcd sends no values), and stops once past its limit.
// Each read's first page comes with a snapshot restore's fence, at the same revision: while it is
// up, the rows are read at the revision before it (etcd-snapshot.ts).
import type { Clock, TimerHandle } from '../../core/clock.js';
import { agentError, type AgentError } from '../../core/errors.js';
import { backoffDelay, type Backoff } from '../../core/backoff.js';
import type { EtcdConnection, EtcdRangeOptions, EtcdWatch } from './etcd-client.js';
import { EtcdRangeTooLarge, prefixEnd } from './etcd-client.js';
import type { EtcdKeyLayout } from './etcd-keys.js';
import type { RangeTarget, ReadConsistency, ReadResult, Row, TableSchemas } from '../types.js';
import { decodeRow, type BadRows } from './row-check.js';
import { BEFORE_RESTORE_COMPACTED, compacted, restoreFenceKey } from './etcd-snapshot.js';

export interface EtcdReadThroughOptions {
  readonly connection: EtcdConnection;
  readonly layout: EtcdKeyLayout;
  readonly clock: Clock;
  readonly readTimeoutMs: number;
  readonly backoff: Backoff;
  readonly random: () => number;
  /** Maps an etcd error to the store's error (`No cluster leader` when etcd is unreachable). */
  readonly failure: (err: unknown) => AgentError;
  /** Tells the store that etcd just answered (KnownLeader, LastContact). */
  readonly contact: () => void;
  readonly schemas: TableSchemas;
  readonly badRows: BadRows;
}

/** The store's `read` and `changedAfter` for the tables it reads through. */
export class EtcdReadThrough {
  /** Watches etcd has created and not yet ended: a write lands on them at once (metrics, benches). */
  liveWatches = 0;

  /** A snapshot restore's fence, read with every read's first page. */
  private readonly fence: Buffer;

  constructor(private readonly options: EtcdReadThroughOptions) {
    this.fence = Buffer.from(restoreFenceKey(options.layout));
  }

  has(table: string): boolean {
    return this.options.layout.isReadThrough(table);
  }

  async read<V>(target: RangeTarget, consistency: ReadConsistency): Promise<ReadResult<V>> {
    const { connection, layout } = this.options;
    const [start, end] = this.bounds(target);
    const root = layout.rowRoot(target.table).length;
    const keysOnly = 'prefix' in target && target.keysOnly === true;
    const options: EtcdRangeOptions = {
      serializable: consistency === 'stale',
      keysOnly,
      ...('prefix' in target && target.maxBytes !== undefined
        ? { maxBytes: target.maxBytes, keyRootBytes: Buffer.byteLength(layout.rowRoot(target.table)) }
        : {}),
    };
    let result;
    try {
      result = await connection.rangeKeys(start, end, this.options.readTimeoutMs, { ...options, guard: this.fence });
      if (result.guard !== undefined) {
        // A snapshot restore is under way: its steps are seen all at once, with its last (etcd-snapshot.ts).
        const at = { ...options, revision: result.guard.createRevision - 1 };
        result = {
          revision: result.revision,
          kvs: (await connection.rangeKeys(start, end, this.options.readTimeoutMs, at)).kvs,
        };
      }
    } catch (err) {
      if (err instanceof EtcdRangeTooLarge) throw agentError('STATE_LISTING_TOO_LARGE', { max: err.maxBytes });
      if (compacted(err)) throw agentError('STATE_RESTORE_IN_PROGRESS', { detail: BEFORE_RESTORE_COMPACTED });
      throw this.options.failure(err);
    }
    this.options.contact();
    const rows: Row<V>[] = [];
    const unreadable: string[] = [];
    for (const kv of result.kvs) {
      const key = kv.key.slice(root);
      if (keysOnly) {
        // No value to check: the key exists whatever its value holds.
        rows.push({ key, value: null as V, createIndex: kv.createRevision, modifyIndex: kv.modRevision });
        continue;
      }
      const checked = decodeRow(this.options.schemas, target.table, key, kv.value);
      if (checked.ok) {
        rows.push({ key, value: checked.value as V, createIndex: kv.createRevision, modifyIndex: kv.modRevision });
      } else {
        this.options.badRows.report(kv.key, kv.modRevision, checked.problem);
        unreadable.push(key);
      }
    }
    const found = result.kvs[0];
    const index = 'key' in target && found !== undefined ? found.modRevision : result.revision;
    return unreadable.length === 0
      ? { rows, index, revision: result.revision }
      : { rows, index, revision: result.revision, unreadable };
  }

  changedAfter(target: RangeTarget, revision: number, fn: (changedAt?: number) => void): () => void {
    const { connection, clock, backoff, random } = this.options;
    const [start, end] = this.bounds(target);
    let watch: EtcdWatch | undefined;
    let retryTimer: TimerHandle | undefined;
    let attempts = 0;
    let done = false;
    let live = false;
    const setLive = (now: boolean): void => {
      if (live !== now) this.liveWatches += now ? 1 : -1;
      live = now;
    };
    const stop = (): void => {
      done = true;
      setLive(false);
      watch?.cancel();
      watch = undefined;
      retryTimer?.cancel();
      retryTimer = undefined;
    };
    const fire = (changedAt?: number): void => {
      if (done) return;
      stop();
      fn(changedAt);
    };
    const open = (): void => {
      retryTimer = undefined;
      if (done) return;
      watch = connection.watchRange(start, end, revision + 1, {
        connected: () => {
          attempts = 0;
          setLive(true);
          this.options.contact();
        },
        events: (events) => {
          this.options.contact();
          if (events.length > 0) fire(Math.max(...events.map((e) => e.kv.modRevision)));
        },
        // etcd gone: keep waiting, and resume from the same revision once it is back, so a change
        // made meanwhile still wakes the read.
        disconnected: () => {
          watch = undefined;
          setLive(false);
          if (done) return;
          retryTimer = clock.setTimer(backoffDelay(backoff, attempts++, random), open);
        },
        // Most often the revision was compacted away: the reader re-reads and sees for itself.
        cancelled: () => fire(),
      });
    };
    open();
    return stop;
  }

  private bounds(target: RangeTarget): [Buffer, Buffer] {
    const layout = this.options.layout;
    if ('key' in target) {
      const key = Buffer.from(layout.rowKey(target.table, target.key), 'utf8');
      return [key, Buffer.concat([key, ZERO])];
    }
    const start = Buffer.from(layout.rowKey(target.table, target.prefix), 'utf8');
    return [start, prefixEnd(start)];
  }
}

const ZERO = Buffer.from([0]);
