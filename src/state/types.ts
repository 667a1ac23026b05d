// The contract every state backend implements: the embedded store (embedded/) and the etcd store
// (etcd/). Reads of the tables held in a local view are synchronous (the hot paths never await a
// read); `read` is the one async path for a table that a backend may read through; writes are
// commands that take the next index of the one index clock and resolve once durable and applied.
import type { ZodType } from 'zod';

export interface Row<V = unknown> {
  readonly key: string;
  readonly value: V;
  readonly createIndex: number;
  readonly modifyIndex: number;
}

/**
 * One write command. `ifIndex` is a check-and-set guard: 0 means "only if the key does not
 * exist", N > 0 means "only if the key's ModifyIndex is N" (for delete: the key exists at N).
 * `check` is a guard alone: the commit applies only if its key is as `ifIndex` says, and it
 * writes nothing (a lock taken only while its session's row is still there: sessions/locks.ts).
 */
export type WriteOp =
  | {
      readonly op: 'set';
      readonly table: string;
      readonly key: string;
      readonly value: unknown;
      readonly ifIndex?: number;
      /**
       * A lease the row goes with: etcd deletes the row when the lease ends (sessions/leases.ts).
       * The embedded store has no leases and ignores it: there the lease's owner deletes the row.
       */
      readonly lease?: string;
    }
  | { readonly op: 'delete'; readonly table: string; readonly key: string; readonly ifIndex?: number }
  | { readonly op: 'delete-prefix'; readonly table: string; readonly prefix: string }
  | { readonly op: 'check'; readonly table: string; readonly key: string; readonly ifIndex: number };

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
export type RangeTarget =
  { readonly table: string; readonly key: string } | ({ readonly table: string; readonly prefix: string } & Listing);

/** How a prefix is listed; a change notice (`changedAfter`) ignores both. */
export interface Listing {
  /** Keys only: every row's `value` is null (a store reading through asks its source for no values). */
  readonly keysOnly?: boolean;
  /**
   * The most bytes the listing may hold, counted as stored (each key, and each value as JSON): a
   * larger one fails with STATE_LISTING_TOO_LARGE, which names this limit.
   */
  readonly maxBytes?: number;
}

/** How fresh a read must be: Consul's `?stale` and `?consistent` (a local view is what it is). */
export type ReadConsistency = 'default' | 'stale' | 'consistent';

/** What `read` answers, whichever way the backend serves the table. */
export interface ReadResult<V = unknown> {
  /** Rows of the target sorted by key: none or one for a key; values null for a keys-only listing. */
  readonly rows: Row<V>[];
  /**
   * The index to report: the key's ModifyIndex when it exists, else one at or past every change of
   * the target (a local view: the target's own index, or its table's when nothing under it was
   * ever written, as Consul reports; a table read through: the backend's revision of the read).
   */
  readonly index: number;
  /** The store's index as of the read: nothing in the target changed after it. */
  readonly revision: number;
  /** Keys of the target whose stored value fails the table's schema: left out of `rows` (docs/cluster-security.md). */
  readonly unreadable?: readonly string[];
}

/**
 * What a table's rows must be (zod): one schema for every row, or one per key (a table of
 * singletons, as the CA's). A store shared with other writers checks every row it reads against
 * it and leaves out the rows that fail, and checks every row it writes the same way.
 */
export type TableSchema = ZodType | { readonly byKey: Readonly<Record<string, ZodType>> };

/** The schema of each table, by table name; a table without one is not checked. */
export type TableSchemas = ReadonlyMap<string, TableSchema>;

/** Whether the state backend can be reached (backend-health.ts). */
export interface BackendHealth {
  /** False while the backend cannot be reached (etcd down); reads then come from a stale view. */
  readonly connected: boolean;
}

/** A store's health: its reachability and when its backend last answered. */
export interface StoreHealth extends BackendHealth {
  /** Clock time (ms) of the backend's last answer; meaningful only while not connected. */
  readonly lastContact: number;
}

/** What opening the embedded store found on disk, for the start-up log line. */
export interface RecoveryStats {
  /** Index of the snapshot loaded; 0 without one. */
  readonly snapshotIndex: number;
  /** WAL records applied after the snapshot. */
  readonly replayedRecords: number;
  /** Bytes cut off a torn tail of the last segment. */
  readonly truncatedBytes: number;
}

export interface EmbeddedStoreStats {
  readonly backend: 'embedded';
  /** Commits applied (guard failures included). */
  readonly commits: number;
  /** WAL batches made durable: one write and one fdatasync each (0 in memory mode). */
  readonly walBatches: number;
  /** Snapshots written (disk) or tombstone reaps run (memory). */
  readonly compactions: number;
  /** The index the durable mark holds (-1 before its first write; memory mode: -1). */
  readonly durableMark: number;
  readonly recovery: RecoveryStats;
}

export interface EtcdStoreStats {
  readonly backend: 'etcd';
  /** Commits etcd acknowledged for this agent (guard failures included). */
  readonly commits: number;
  /** Full re-reads since opening, beyond the first (a compaction, a broken watch, a view opened from disk). */
  readonly resyncs: number;
  /** Events the view's watch delivered: only the mesh tables' writes (a read-through table's reach no view). */
  readonly viewEvents: number;
  /** Rows read from etcd that failed their table's schema, counted once per bad revision of a key. */
  readonly badRows: number;
}

/** Each backend's counters, told apart by `backend`. */
export type StoreStats = EmbeddedStoreStats | EtcdStoreStats;

export interface StateStore {
  /** Index of the last applied commit; 0 only for a store that has never been written. */
  readonly index: number;

  /**
   * The one read path of a table that may live outside the local view: a key or a prefix, with the
   * index to report. A backend serves it from its view, or asks its source for a table it reads
   * through (the cluster's KV: docs/decisions.md D15); callers never tell the two apart.
   */
  read<V>(target: RangeTarget, consistency: ReadConsistency): Promise<ReadResult<V>>;
  /**
   * One-shot: `fn` runs once something in the target changed after `revision` (soon, never inside
   * this call, when a change is already past it or the backend forgot that revision; a local view
   * also when the index its read reports is past it, as Consul's blocking rule). Returns the
   * cancel. With `read`, what a blocking read of any table waits on. `changedAt`, when the backend
   * knows it: the revision of the change, which a read must have reached to see it.
   */
  changedAfter(target: RangeTarget, revision: number, fn: (changedAt?: number) => void): () => void;

  /**
   * Resolves once the local view holds every change up to `index` (at once for the embedded store,
   * which is its own view): a row read through at a revision, and the view's rows, then agree.
   */
  reached(index: number): Promise<void>;

  /** Reachability: always connected for the embedded store. */
  readonly health: StoreHealth;
  readonly stats: StoreStats;

  /** A row of a table held in the local view (a table read through is absent from it: use `read`). */
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

/** One row of a store image (snapshots: src/snapshot/); `lease` only on a row restored under a new lease. */
export interface ImageRow {
  readonly table: string;
  readonly key: string;
  readonly value: unknown;
  readonly lease?: string;
}

/** A value a backend keeps beside its tables, by path: etcd's private range (the CA keys, token secrets). */
export interface PrivateEntry {
  readonly path: string;
  readonly value: unknown;
}

/** Every shared row, and every private entry, at one point of the store. */
export interface StoreImage {
  /** The index (etcd: the revision) the image was taken at. */
  readonly index: number;
  /** Sorted by table, then key. */
  readonly rows: readonly ImageRow[];
  /** Empty for the embedded store, whose rows hold everything. */
  readonly privateEntries: readonly PrivateEntry[];
}

/** What a snapshot asks of a store: an image at one point, and replacing everything with one. */
export interface StoreSnapshots {
  /** Which backend took the image: an archive is restored into the same kind only. */
  readonly backend: StoreStats['backend'];
  exportImage(): Promise<StoreImage>;
  /**
   * Replaces every table (and private entry) with the image's. Restored rows take new indexes,
   * after every index handed out before, so each blocking query wakes. Resolves to the index at
   * which the local view holds the restored state.
   */
  replaceWith(image: Omit<StoreImage, 'index'>): Promise<number>;
}
