// The contract every state backend implements: the embedded store today, an etcd-backed store
// later. Reads are synchronous against a local materialised view (the hot paths never await a
// read); writes are commands that take the next index of the one index clock and resolve once
// they are durable and applied.

export interface Row<V = unknown> {
  readonly key: string;
  readonly value: V;
  readonly createIndex: number;
  readonly modifyIndex: number;
}

/**
 * One write command. `ifIndex` is a check-and-set guard: 0 means "only if the key does not
 * exist", N > 0 means "only if the key's ModifyIndex is N" (for delete: the key exists at N).
 */
export type WriteOp =
  | { readonly op: 'set'; readonly table: string; readonly key: string; readonly value: unknown; readonly ifIndex?: number }
  | { readonly op: 'delete'; readonly table: string; readonly key: string; readonly ifIndex?: number }
  | { readonly op: 'delete-prefix'; readonly table: string; readonly prefix: string };

export interface CommitResult {
  /** False when a guard failed; then no op of the commit was applied. */
  readonly ok: boolean;
  /** The index the commit took (taken even when a guard failed, as a raft index would be). */
  readonly index: number;
}

export type WatchTarget =
  | { readonly table: string; readonly key: string }
  | { readonly table: string; readonly prefix: string }
  | { readonly table: string };

/** A key, or every key under a prefix, of one table. */
export type RangeTarget = { readonly table: string; readonly key: string } | { readonly table: string; readonly prefix: string };

/** How fresh a read-through read must be: Consul's `?stale` and `?consistent`. */
export type ReadConsistency = 'default' | 'stale' | 'consistent';

export interface ReadThroughResult<V = unknown> {
  /** Rows of the target sorted by key: none or one for a key. */
  readonly rows: Row<V>[];
  /** The index to report: the key's ModifyIndex when it exists, else the store's revision of the read. */
  readonly index: number;
  /** The store's revision the read saw (nothing in the target changed after it as of the read). */
  readonly revision: number;
}

/**
 * Tables kept out of the local view (a large KV): every read asks the backend, and blocking
 * reads learn of changes from a watch opened for as long as someone waits (docs/decisions.md D15).
 */
export interface ReadThroughTables {
  has(table: string): boolean;
  read<V>(target: RangeTarget, consistency: ReadConsistency): Promise<ReadThroughResult<V>>;
  /**
   * One-shot: `fn` runs once something in the target changes after `revision` (at once when a
   * change is already past it, or when the backend forgot that revision). Returns the cancel.
   */
  changedAfter(target: RangeTarget, revision: number, fn: () => void): () => void;
}

export interface StateStore {
  /** Set when some tables are read through (the etcd store's KV); their get/list are not served. */
  readonly readThrough?: ReadThroughTables | undefined;

  /** Index of the last applied commit; 0 only for a store that has never been written. */
  readonly index: number;

  get<V>(table: string, key: string): Row<V> | undefined;
  /** Rows whose key starts with `prefix`, sorted by key (byte order). */
  list<V>(table: string, prefix: string): Row<V>[];

  /**
   * Highest index at which this key was set or deleted; 0 if never touched. Once old delete
   * tombstones are reaped, an absent key reports at least the highest reaped index of its table,
   * so the value never goes back.
   */
  keyIndex(table: string, key: string): number;
  /** Highest index at which any key under `prefix` was set or deleted (same reaping rule). */
  prefixIndex(table: string, prefix: string): number;
  /** Highest index at which anything in the table changed. */
  tableIndex(table: string): number;

  /** Applies the ops atomically (all or none) at the next index; resolves once durable. */
  commit(ops: readonly WriteOp[]): Promise<CommitResult>;

  /**
   * One-shot watch: `fn` runs once, after the first later commit that changes what the target
   * covers. Callbacks are deferred (one setImmediate per applied batch), never run inside
   * `commit`'s caller. Returns a cancel function; cancelling is O(1).
   */
  watchOnce(target: WatchTarget, fn: () => void): () => void;

  /** Number of watches currently registered (for metrics and leak tests). */
  readonly watchCount: number;

  /** Flushes pending writes and releases files. Later commits reject. */
  close(): Promise<void>;
}
