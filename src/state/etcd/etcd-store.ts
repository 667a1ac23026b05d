// The etcd-backed StateStore: reads are synchronous against a local view (etcd-view.ts) fed by one
// watch on the prefix's shared range (etcd-keys.ts), started at R + 1 after a full read at revision
// R; the index clock is etcd's revision; a commit is one etcd transaction (etcd-txn.ts), resolved
// once etcd acknowledged it and the view applied its revision. When etcd cannot be reached, reads keep answering from the view,
// commits fail within their deadline, and the watch comes back with backoff (resuming at the view's
// revision, or re-reading everything if etcd compacted that revision away). With a data dir, the
// view is also kept on disk (etcd-view-file.ts), and opening while etcd is unreachable starts from
// it: stale reads, `health.connected` false, until a full read replaces it.
import type { Clock, TimerHandle } from '../../core/clock.js';
import { systemClock } from '../../core/clock.js';
import { agentError, type AgentError } from '../../core/errors.js';
import type { Logger } from '../../core/log.js';
import type { Counter } from '../../core/metrics.js';
import type { EtcdConnection, EtcdRangeResult, EtcdTarget, EtcdTxn, EtcdWatch } from './etcd-client.js';
import { openConnection } from './etcd-client.js';
import { etcdError } from './etcd-errors.js';
import { backoffDelay, DEFAULT_BACKOFF, type Backoff } from '../../core/backoff.js';
import { EtcdKeyLayout } from './etcd-keys.js';
import { EtcdReadThrough } from './etcd-read-through.js';
import { commitTxn, DEFAULT_MAX_TXN_OPS, reachesView } from './etcd-txn.js';
import { EtcdView } from './etcd-view.js';
import { EtcdViewFile } from './etcd-view-file.js';
import type {
  StoreHealth,
  CommitResult,
  EtcdStoreStats,
  RangeTarget,
  ReadConsistency,
  ReadResult,
  Row,
  StateStore,
  StoreImage,
  StoreSnapshots,
  TableSchemas,
  WatchTarget,
  WriteOp,
} from '../types.js';
import { readView, viewChangedAfter, watchView } from '../view-reads.js';
import { canonicalOps } from '../write-ops.js';
import { BadRows, rowProblem } from './row-check.js';
import {
  exportEtcd,
  readBeforeFence,
  replaceEtcd,
  RESTORE_REFUSES_WRITES,
  type EtcdSnapshotDeps,
} from './etcd-snapshot.js';

export interface EtcdStoreOptions {
  readonly etcd: EtcdTarget;
  /** Key prefix of this mesh in etcd (default `/svc/`); several meshes can share one etcd. */
  readonly prefix?: string | undefined;
  readonly log: Logger;
  readonly clock?: Clock | undefined;
  /**
   * A commit not acknowledged by etcd within this time fails (default 1500 ms): `No cluster leader`
   * when nothing of it was applied, STATE_WRITE_OUTCOME_UNKNOWN when it was sent and may have been.
   */
  readonly commitTimeoutMs?: number | undefined;
  /** Deadline of each read call: the start-up read and resyncs (default 5 s). */
  readonly readTimeoutMs?: number | undefined;
  /** etcd's --max-txn-ops; a commit needing more operations is refused (default 128). */
  readonly maxTxnOps?: number | undefined;
  /** Age after which delete tombstones leave the view (default 15 min, as the embedded store). */
  readonly tombstoneTtlMs?: number | undefined;
  /** Reconnect backoff: first delay and cap, in ms (default 100 ms doubling up to 5 s, ±50 % jitter). */
  readonly backoff?: Backoff | undefined;
  readonly random?: (() => number) | undefined;
  /** The agent's data_dir: the view is kept under `etcd-view/` and opened from there when etcd is unreachable. */
  readonly dataDir?: string | undefined;
  /** How often a moved view is rewritten to disk (default 1 s). */
  readonly viewSaveIntervalMs?: number | undefined;
  /** Tables kept out of the view and read through from etcd (the agent's KV: docs/decisions.md D15). */
  readonly readThroughTables?: readonly string[] | undefined;
  /** Each table's row schema: rows read that fail it are left out, commits that write one are refused (row-check.ts). */
  readonly tableSchemas?: TableSchemas | undefined;
  /** Counts the rows left out (the agent's `svc.state.bad_rows`). */
  readonly badRows?: Counter | undefined;
}

export interface EtcdStore extends StateStore, StoreSnapshots {
  /** `connected`: whether the last exchange with etcd succeeded (false while the watch is down or commits time out). */
  readonly health: StoreHealth;
  readonly stats: EtcdStoreStats;
}

export const DEFAULT_ETCD_PREFIX = '/svc/';
/** Under the 2 s a client may wait for a write to fail (the HTTP reply takes the rest). */
const DEFAULT_COMMIT_TIMEOUT_MS = 1_500;
const DEFAULT_READ_TIMEOUT_MS = 5_000;
const DEFAULT_TOMBSTONE_TTL_MS = 15 * 60 * 1000;

export async function openEtcdStore(options: EtcdStoreOptions): Promise<EtcdStore> {
  const connection = openConnection(options.etcd);
  const store = new EtcdStateStore(options, connection);
  try {
    if (options.dataDir !== undefined) await store.keepViewOnDisk(options.dataDir, options.viewSaveIntervalMs);
    await store.start();
  } catch (err) {
    connection.close();
    throw err;
  }
  return store;
}

interface QueuedCommit {
  readonly txn: EtcdTxn;
  /** The rows it writes: commits sharing one are sent one after the other, in call order. */
  readonly rows: CommitRows;
  /** Whether it writes inside the view's range: only then is it answered once the view shows it. */
  readonly viewed: boolean;
  readonly resolve: (result: CommitResult) => void;
  readonly reject: (err: unknown) => void;
}

/**
 * Commits sent to etcd at once. One at a time capped a cluster agent's KV writes at one etcd round
 * trip each (about 1,100/s against 3,300/s for a bare client on the same etcd, bench/sizing/cluster.ts);
 * etcd batches the proposals of commits in flight together into one raft round.
 */
const MAX_IN_FLIGHT = 64;

class EtcdStateStore implements EtcdStore {
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly layout: EtcdKeyLayout;
  private readonly view: EtcdView;
  private readonly commitTimeoutMs: number;
  private readonly readTimeoutMs: number;
  private readonly maxTxnOps: number;
  private readonly backoff: Backoff;
  private readonly random: () => number;
  /**
   * Commits waiting to be sent, in call order. Up to MAX_IN_FLIGHT are in flight; one that writes a
   * row an in-flight commit writes waits for it, and the ones behind it wait too, so commits
   * touching a common row take revisions in call order (disjoint ones in etcd's order).
   */
  private readonly queue: QueuedCommit[] = [];
  private readonly inFlight = new Set<QueuedCommit>();
  /** Commits accepted and not yet settled; close() waits for them. */
  private readonly unsettled = new Set<Promise<unknown>>();
  private watch: EtcdWatch | undefined;
  private viewFile: EtcdViewFile | undefined;
  private retryTimer: TimerHandle | undefined;
  private attempts = 0;
  private closing: Promise<void> | undefined;
  private closed = false;
  private readonly live = { connected: false, lastContact: 0 };
  readonly health: StoreHealth = this.live;
  private commits = 0;
  private resyncs = 0;
  private viewEvents = 0;
  private readonly readThrough: EtcdReadThrough | undefined;
  private readonly schemas: TableSchemas;
  private readonly badRows: BadRows;
  private readonly readThroughTables: readonly string[];
  readonly backend = 'etcd';

  constructor(
    options: EtcdStoreOptions,
    private readonly connection: EtcdConnection,
  ) {
    this.log = options.log.child({ component: 'state-etcd' });
    this.clock = options.clock ?? systemClock;
    this.layout = new EtcdKeyLayout(options.prefix ?? DEFAULT_ETCD_PREFIX, new Set(options.readThroughTables ?? []));
    this.schemas = options.tableSchemas ?? new Map();
    this.badRows = new BadRows(this.log, options.badRows);
    this.view = new EtcdView(
      this.layout,
      this.log,
      this.clock,
      options.tombstoneTtlMs ?? DEFAULT_TOMBSTONE_TTL_MS,
      this.schemas,
      this.badRows,
    );
    this.commitTimeoutMs = options.commitTimeoutMs ?? DEFAULT_COMMIT_TIMEOUT_MS;
    this.readTimeoutMs = options.readTimeoutMs ?? DEFAULT_READ_TIMEOUT_MS;
    this.maxTxnOps = options.maxTxnOps ?? DEFAULT_MAX_TXN_OPS;
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.random = options.random ?? Math.random;
    this.readThroughTables = options.readThroughTables ?? [];
    if (options.readThroughTables !== undefined && options.readThroughTables.length > 0) {
      this.readThrough = new EtcdReadThrough({
        connection,
        layout: this.layout,
        clock: this.clock,
        readTimeoutMs: this.readTimeoutMs,
        backoff: this.backoff,
        random: this.random,
        failure: (err) => this.failure(err),
        contact: () => this.contact(),
        schemas: this.schemas,
        badRows: this.badRows,
      });
    }
  }

  /** The first full read and the watch after it; fails if etcd cannot be read. */
  async start(): Promise<void> {
    // A key whose value in etcd is bad keeps the value last kept on disk (row-check.ts).
    const kept = await this.viewFile?.load().catch(() => undefined);
    if (kept !== undefined) this.view.rememberKept(kept.image);
    let seen;
    try {
      seen = await this.readView();
    } catch (err) {
      const failure = this.failure(err);
      if (failure.code === 'STATE_NO_LEADER' && (await this.startFromDisk())) return;
      throw failure;
    }
    const read = seen.read;
    this.view.load(read);
    if (seen.fenced) this.view.holdUntilFenceDown();
    this.contact();
    this.startWatch(read.revision + 1);
    this.viewFile?.startSaving();
    this.log.info(
      { prefix: this.layout.prefix, revision: read.revision, keys: read.kvs.length },
      'etcd state view loaded',
    );
  }

  /** Keeps the view on disk under `dataDir` from now on; called before start(). */
  async keepViewOnDisk(dataDir: string, intervalMs?: number): Promise<void> {
    const view = this.view;
    const source = {
      revision: () => view.revision,
      capture: () => ({ index: view.revision, tables: view.tables.capture().tables }),
      currentAt: () => (this.live.connected ? this.clock.now() : this.live.lastContact),
    };
    this.viewFile = await EtcdViewFile.open(dataDir, source, this.clock, this.log, intervalMs);
  }

  /**
   * etcd is unreachable at start-up: serve the view last kept on disk (stale, `connected` false,
   * `lastContact` when it was last current) and keep trying a full read, which replaces it and wakes the
   * watchers of every row that changed meanwhile. False when there is no view on disk.
   */
  private async startFromDisk(): Promise<boolean> {
    const stored = await this.viewFile?.load();
    if (stored === undefined || this.viewFile === undefined) return false;
    this.view.loadImage(stored.image);
    this.live.lastContact = stored.savedAt;
    this.log.warn(
      { revision: stored.image.index, ageMs: Math.max(0, this.clock.now() - stored.savedAt), dir: this.viewFile.dir },
      'etcd unreachable at start-up: serving a stale view from disk until etcd answers',
    );
    this.viewFile.startSaving();
    this.retry(() => void this.resync());
    return true;
  }

  get index(): number {
    return this.view.tables.index;
  }

  reached(index: number): Promise<void> {
    return this.view.reached(index);
  }

  get stats(): EtcdStoreStats {
    return {
      backend: 'etcd',
      commits: this.commits,
      resyncs: this.resyncs,
      viewEvents: this.viewEvents,
      badRows: this.badRows.count,
    };
  }

  read<V>(target: RangeTarget, consistency: ReadConsistency): Promise<ReadResult<V>> {
    if (this.readThrough?.has(target.table) === true) return this.readThrough.read<V>(target, consistency);
    return Promise.resolve(readView<V>(this.view.tables, target));
  }

  changedAfter(target: RangeTarget, revision: number, fn: (changedAt?: number) => void): () => void {
    if (this.readThrough?.has(target.table) === true) return this.readThrough.changedAfter(target, revision, fn);
    return viewChangedAfter(this.view.tables, this.view.hub, target, revision, fn);
  }

  get watchCount(): number {
    return this.view.hub.watchCount + (this.readThrough?.liveWatches ?? 0);
  }

  get<V>(table: string, key: string): Row<V> | undefined {
    return this.view.tables.get(table, key) as Row<V> | undefined;
  }

  list<V>(table: string, prefix: string): Row<V>[] {
    return this.view.tables.list(table, prefix) as Row<V>[];
  }

  keyIndex(table: string, key: string): number {
    return this.view.tables.keyIndex(table, key);
  }

  prefixIndex(table: string, prefix: string): number {
    return this.view.tables.prefixIndex(table, prefix);
  }

  tableIndex(table: string): number {
    return this.view.tables.tableIndex(table);
  }

  commit(ops: readonly WriteOp[]): Promise<CommitResult> {
    if (this.closing !== undefined) return Promise.reject(agentError('STORE_CLOSED'));
    // Its view would not show it until the restore's last step (etcd-snapshot.ts).
    if (this.view.restoring)
      return Promise.reject(agentError('STATE_RESTORE_IN_PROGRESS', { detail: RESTORE_REFUSES_WRITES }));
    let txn: EtcdTxn;
    let rows: CommitRows;
    let viewed: boolean;
    try {
      const canonical = canonicalOps(ops).ops;
      this.checkRows(canonical);
      txn = commitTxn(this.layout, canonical, this.maxTxnOps);
      rows = commitRows(this.layout, canonical);
      viewed = reachesView(this.layout, canonical);
    } catch (err) {
      return Promise.reject(err);
    }
    const result = new Promise<CommitResult>((resolve, reject) => {
      this.queue.push({ txn, rows, viewed, resolve, reject });
    });
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    this.unsettled.add(settled);
    void settled.then(() => this.unsettled.delete(settled));
    this.pump();
    return result;
  }

  /** Writes check what they write as reads check what they read: no agent writes a row every view would leave out. */
  private checkRows(ops: readonly WriteOp[]): void {
    for (const op of ops) {
      if (op.op !== 'set') continue;
      const problem = rowProblem(this.schemas.get(op.table), op.key, op.value);
      if (problem !== undefined) {
        throw agentError('STATE_INVALID_OP', {
          detail: `row ${JSON.stringify(op.key)} of table ${op.table} does not match its schema: ${problem}`,
        });
      }
    }
  }

  watchOnce(target: WatchTarget, fn: () => void): () => void {
    return watchView(this.view.hub, target, fn);
  }

  /** The whole prefix at one revision (snapshots: etcd-snapshot.ts). */
  exportImage(): Promise<StoreImage> {
    return exportEtcd(this.snapshotDeps());
  }

  replaceWith(image: Omit<StoreImage, 'index'>): Promise<number> {
    if (this.closing !== undefined) return Promise.reject(agentError('STORE_CLOSED'));
    return replaceEtcd(this.snapshotDeps(), image);
  }

  private snapshotDeps(): EtcdSnapshotDeps {
    const tables = this.view.tables;
    return {
      connection: this.connection,
      layout: this.layout,
      schemas: this.schemas,
      log: this.log,
      maxTxnOps: this.maxTxnOps,
      viewTables: () => tables.capture().tables.map((t) => t.name),
      viewRow: (table, key) => tables.get(table, key),
      readThroughTables: this.readThroughTables,
      reached: (revision) => this.view.reached(revision),
    };
  }

  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    // Commits accepted before close() are still sent (each answered within its deadline) and
    // acknowledged once the view shows them; a view that cannot catch up (watch down) is not waited
    // for longer than a read deadline: etcd has the writes.
    const giveUp = this.clock.setTimer(this.commitTimeoutMs + this.readTimeoutMs, () => this.view.releaseWaiters());
    while (this.unsettled.size > 0) await Promise.all(this.unsettled);
    giveUp.cancel();
    this.closed = true;
    this.retryTimer?.cancel();
    this.watch?.cancel();
    this.watch = undefined;
    this.view.releaseWaiters();
    await this.viewFile?.close();
    this.connection.close();
  }

  /**
   * Sends queued commits while fewer than MAX_IN_FLIGHT are in flight and the next one shares no
   * row with them. Each has the deadline commitTimeoutMs: when etcd does not answer one, every
   * queued commit fails with it, so none hangs behind a dead etcd.
   */
  private pump(): void {
    while (this.inFlight.size < MAX_IN_FLIGHT) {
      const next = this.queue[0];
      if (next === undefined || this.sharesRowInFlight(next)) return;
      this.queue.shift();
      this.send(next);
    }
  }

  private send(commit: QueuedCommit): void {
    this.inFlight.add(commit);
    this.connection.txn(commit.txn, this.commitTimeoutMs).then(
      (res) => {
        this.inFlight.delete(commit);
        this.commits++;
        this.contact();
        this.pump();
        // A guard that failed after an attempt went unanswered may have failed against that very
        // attempt: the caller is told the write may have been applied, never that it was refused.
        if (res.unsure === true) {
          commit.reject(agentError('STATE_WRITE_OUTCOME_UNKNOWN'));
          return;
        }
        // Read-your-writes: the caller hears back once the view shows the commit (a read-through
        // table's commit reaches no view: its reads go to etcd).
        const result = { ok: res.succeeded, index: res.revision };
        if (commit.viewed) void this.view.reached(res.revision).then(() => commit.resolve(result));
        else commit.resolve(result);
      },
      (err: unknown) => {
        this.inFlight.delete(commit);
        const failure = this.failure(err);
        commit.reject(failure);
        // The commits queued behind it were never sent: nothing of them was applied.
        if (etcdAway(failure)) for (const queued of this.queue.splice(0)) queued.reject(noLeader(err));
        this.pump();
      },
    );
  }

  private sharesRowInFlight(commit: QueuedCommit): boolean {
    for (const other of this.inFlight) if (overlaps(commit.rows, other.rows)) return true;
    return false;
  }

  private startWatch(from: number): void {
    if (this.closed) return;
    this.watch = this.connection.watchRange(this.layout.viewStart, this.layout.viewEnd, from, {
      connected: () => {
        this.attempts = 0;
        this.contact();
      },
      events: (events, revision) => {
        this.viewEvents += events.length;
        this.contact();
        this.view.applyEvents(events, revision);
      },
      disconnected: (err) => {
        this.lost(err, 'etcd watch disconnected; resuming with backoff');
        this.retry(() => this.startWatch(this.view.revision + 1));
      },
      cancelled: (err) => {
        // Most often the revision we need was compacted: only a full read can bring the view back.
        this.lost(err, 'etcd watch cancelled; re-reading the prefix');
        this.retry(() => void this.resync());
      },
    });
  }

  private async resync(): Promise<void> {
    if (this.closed) return;
    let seen;
    try {
      seen = await this.readView();
    } catch (err) {
      this.lost(err, 'etcd resync read failed; retrying with backoff');
      this.retry(() => void this.resync());
      return;
    }
    if (this.closed) return;
    this.resyncs++;
    const read = seen.read;
    this.view.load(read);
    if (seen.fenced) this.view.holdUntilFenceDown();
    this.contact();
    this.log.info({ revision: read.revision, keys: read.kvs.length }, 'etcd state view re-read');
    this.startWatch(read.revision + 1);
  }

  /** The view's range as readers are to see it: before a snapshot restore under way (etcd-snapshot.ts). */
  private async readView(): Promise<{ read: EtcdRangeResult; fenced: boolean }> {
    const read = await this.connection.rangeKeys(this.layout.viewStart, this.layout.viewEnd, this.readTimeoutMs);
    return readBeforeFence(this.connection, this.layout, read, this.readTimeoutMs, this.log);
  }

  private retry(fn: () => void): void {
    this.watch = undefined;
    if (this.closed) return;
    const delay = backoffDelay(this.backoff, this.attempts, this.random);
    this.attempts++;
    this.retryTimer?.cancel();
    this.retryTimer = this.clock.setTimer(delay, () => {
      this.retryTimer = undefined;
      fn();
    });
  }

  private contact(): void {
    this.live.connected = true;
    this.live.lastContact = this.clock.now();
  }

  private lost(err: unknown, message: string): void {
    if (this.live.connected) this.log.warn({ err }, message);
    this.live.connected = false;
  }

  private failure(err: unknown): AgentError {
    const failure = etcdError(err);
    if (etcdAway(failure)) this.lost(err, 'etcd unavailable');
    return failure;
  }
}

/** The row keys a commit writes, and the prefixes it deletes (full etcd keys). */
interface CommitRows {
  readonly keys: readonly string[];
  readonly prefixes: readonly string[];
}

/** Table markers and the clock key are left out: any order of two commits leaves them right. */
function commitRows(layout: EtcdKeyLayout, ops: readonly WriteOp[]): CommitRows {
  const keys: string[] = [];
  const prefixes: string[] = [];
  for (const op of ops) {
    if (op.op === 'delete-prefix') prefixes.push(layout.rowKey(op.table, op.prefix));
    else keys.push(layout.rowKey(op.table, op.key));
  }
  return { keys, prefixes };
}

function overlaps(a: CommitRows, b: CommitRows): boolean {
  for (const key of a.keys) {
    if (b.keys.includes(key) || b.prefixes.some((p) => key.startsWith(p))) return true;
  }
  for (const prefix of a.prefixes) {
    if (
      b.keys.some((key) => key.startsWith(prefix)) ||
      b.prefixes.some((p) => p.startsWith(prefix) || prefix.startsWith(p))
    )
      return true;
  }
  return false;
}

/** etcd did not answer: whether it refused the call or never answered an attempt sent. */
function etcdAway(failure: AgentError): boolean {
  return failure.code === 'STATE_NO_LEADER' || failure.code === 'STATE_WRITE_OUTCOME_UNKNOWN';
}

/** Consul's text when no server can commit: clients match on it. */
function noLeader(cause?: unknown): AgentError {
  return agentError('STATE_NO_LEADER', { cause });
}
