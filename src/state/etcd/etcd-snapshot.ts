// The etcd store's side of a snapshot (docs/decisions.md#snapshots). Export: one paged range read of
// the whole prefix at one revision, so the mesh tables, the read-through KV and the private range
// (CA keys, token secrets) are all of one point. Restore: the private entries are put first (an
// extra one is harmless), then the tables are replaced: in one transaction when the archive fits
// one (etcd --max-txn-ops and --max-request-bytes), else in steps under a restore fence (every row
// put, then every row the archive lacks deleted, the last step taking the fence down), so that
// every agent's readers see the old state until the last step and the restored one from it; then
// the private entries the archive lacks are deleted. Each step is idempotent: a restore that
// stopped part way leaves the fence up (readers on the old state, writes refused), and running a
// restore again completes it.
import { agentError, isAgentError } from '../../core/errors.js';
import type { Logger } from '../../core/log.js';
import type { ImageRow, PrivateEntry, Row, StoreImage, TableSchemas, WriteOp } from '../types.js';
import type { EtcdConnection, EtcdKeyValue, EtcdRangeResult, EtcdTxn, EtcdTxnOp } from './etcd-client.js';
import { prefixEnd } from './etcd-client.js';
import { etcdError } from './etcd-errors.js';
import type { EtcdKeyLayout } from './etcd-keys.js';
import { commitTxn, reachesView } from './etcd-txn.js';
import { canonicalOps } from '../write-ops.js';
import { decodeRow } from './row-check.js';

/**
 * The most bytes of rows one restore transaction carries: etcd's default --max-request-bytes is
 * 1.5 MiB, and keys, markers and framing need room beside the values.
 */
const TXN_BYTES_BUDGET = 1024 * 1024;
/** A snapshot's reads and private writes: a whole prefix may take longer than a view read. */
const SNAPSHOT_DEADLINE_MS = 60_000;
/**
 * Rows of one page of the export's read, its bytes bounded at 2 MiB as every read's (etcd-client.ts):
 * etcd counts the rest of the range for every page, so 110,000 rows in pages of 1,000 cost etcd
 * about 4 s of a 6.5 s save (bench/sizing/snapshot.ts); pages as large as the byte bound allows
 * (about 12,000 of the bench's rows) cut that tenfold.
 */
const SNAPSHOT_PAGE_ROWS = 50_000;
/**
 * Restore transactions sent at once: one at a time, a step is an etcd round trip and a raft
 * commit, and 100,000 rows are 800 steps of 128 operations (bench/sizing/snapshot.ts); etcd
 * batches the proposals in flight into one raft round, as it does the store's commits.
 */
const RESTORE_IN_FLIGHT = 8;
/** One restore transaction: at most 1 MiB of rows, which etcd takes in well under a second; a dead etcd fails the step sooner. */
const STEP_DEADLINE_MS = 10_000;

export interface EtcdSnapshotDeps {
  readonly connection: EtcdConnection;
  readonly layout: EtcdKeyLayout;
  readonly schemas: TableSchemas;
  readonly log: Logger;
  readonly maxTxnOps: number;
  /** The tables the view holds now. */
  readonly viewTables: () => readonly string[];
  /** The view's row of a view table (undefined for one read through, or absent). */
  readonly viewRow: (table: string, key: string) => Row | undefined;
  readonly readThroughTables: readonly string[];
  /** Resolves once the local view has applied the revision. */
  readonly reached: (revision: number) => Promise<void>;
}

/**
 * The restore fence (docs/decisions.md#snapshots): up from a staged restore's first step to its last,
 * inside the view's range so that every view sees it in revision order. While it is up, views hold
 * the watch's events back (etcd-view.ts), reads through are served at the revision before it
 * (etcd-read-through.ts: its create revision less one) and commits are refused (etcd-store.ts).
 */
export function restoreFenceKey(layout: EtcdKeyLayout): string {
  return `${layout.prefix}meta/restore`;
}

/**
 * A full read of the view's range as readers are to see it: while a fence is up, the range at the
 * revision before it (the watch from there brings the fence and the restore's steps, held back).
 * `fenced`: the fence is up and that revision is compacted away, so the read is the one given,
 * partly restored: the view must hold back every event until the fence goes.
 */
export async function readBeforeFence(
  connection: EtcdConnection,
  layout: EtcdKeyLayout,
  read: EtcdRangeResult,
  deadlineMs: number,
  log: Logger,
): Promise<{ read: EtcdRangeResult; fenced: boolean }> {
  const key = restoreFenceKey(layout);
  const fence = read.kvs.find((kv) => kv.key === key);
  if (fence === undefined) return { read, fenced: false };
  try {
    const before = fence.createRevision - 1;
    return {
      read: await connection.rangeKeys(layout.viewStart, layout.viewEnd, deadlineMs, { revision: before }),
      fenced: false,
    };
  } catch (err) {
    if (!compacted(err)) throw err;
    log.warn(
      { fence: key, revision: fence.createRevision },
      'a snapshot restore is under way and the state before it is compacted away: this view starts part restored',
    );
    return { read, fenced: true };
  }
}

/** What a commit says while the fence is up. */
export const RESTORE_REFUSES_WRITES =
  'writes are refused until it completes (one whose restorer stopped part way completes when the restore is run again)';

/** What a read through says when the state before a restore under way is no longer in etcd. */
export const BEFORE_RESTORE_COMPACTED = 'the state before it is compacted away in etcd: read again once it completes';

/** etcd no longer holds the revision asked for. */
export function compacted(err: unknown): boolean {
  return err instanceof Error && /required revision has been compacted/.test(err.message);
}

/**
 * Every row and private entry under the prefix, read at one revision in pages (each page decoded as
 * it comes, so one page of etcd's answer is held at a time). A view table's row whose revision the
 * view holds is taken from the view, already decoded and checked; the others are decoded and
 * checked here. etcd answers keys in byte order, so each table's rows come sorted: only the tables
 * are put in order. Guarded by bench/sizing/snapshot.ts.
 */
export async function exportEtcd(d: EtcdSnapshotDeps): Promise<StoreImage> {
  const bulk = `${d.layout.prefix}bulk/`;
  const byTable = new Map<string, ImageRow[]>();
  const privateEntries: PrivateEntry[] = [];
  const take = (kvs: readonly EtcdKeyValue[]): void => {
    for (const kv of kvs) {
      const parsed = d.layout.parse(kv.key);
      let row: { table: string; key: string } | undefined;
      if (parsed?.kind === 'row') row = parsed;
      else if (kv.key.startsWith(bulk)) row = splitRow(kv.key.slice(bulk.length));
      if (row !== undefined) {
        const value = rowValue(d, row.table, row.key, kv);
        if (value === undefined) continue;
        let rows = byTable.get(row.table);
        if (rows === undefined) byTable.set(row.table, (rows = []));
        rows.push({ table: row.table, key: row.key, value: value.json });
        continue;
      }
      if (kv.key.startsWith(d.layout.privateRoot)) {
        privateEntries.push({ path: kv.key.slice(d.layout.privateRoot.length), value: parseJson(kv.value) });
      }
    }
  };
  const readAt = (revision?: number): Promise<EtcdRangeResult> => {
    byTable.clear();
    privateEntries.length = 0;
    const at = revision === undefined ? { guard: Buffer.from(restoreFenceKey(d.layout)) } : { revision };
    return d.connection.rangeKeys(d.layout.root, prefixEnd(d.layout.root), SNAPSHOT_DEADLINE_MS, {
      onPage: take,
      pageRows: SNAPSHOT_PAGE_ROWS,
      ...at,
    });
  };
  let read;
  try {
    read = await readAt();
    // A restore under way: the state is the one before it, as every reader sees it.
    if (read.guard !== undefined) read = await readAt(read.guard.createRevision - 1);
  } catch (err) {
    if (compacted(err)) throw agentError('STATE_RESTORE_IN_PROGRESS', { detail: BEFORE_RESTORE_COMPACTED });
    throw etcdError(err);
  }
  const rows: ImageRow[] = [];
  // A loop, not push(...rows): a table of 100,000 rows is past what one call's arguments can hold.
  for (const table of [...byTable.keys()].sort(compare))
    for (const row of byTable.get(table) as ImageRow[]) rows.push(row);
  return { index: read.revision, rows, privateEntries };
}

/**
 * The row's value, or undefined when it is bad (then it is no part of the state, and left out). The
 * view's row of the same revision is the same value, decoded and checked when the view took it.
 */
function rowValue(d: EtcdSnapshotDeps, table: string, key: string, kv: EtcdKeyValue): { json: unknown } | undefined {
  const held = d.viewRow(table, key);
  if (held !== undefined && held.modifyIndex === kv.modRevision) return { json: held.value };
  const checked = decodeRow(d.schemas, table, key, kv.value);
  if (checked.ok) return { json: checked.value };
  d.log.warn({ table, key, problem: checked.problem }, 'snapshot: a bad row left out');
  return undefined;
}

/**
 * Replaces the tables and the private range with the image's; resolves to the revision at which
 * the local view holds the restored state. Every transaction is built (and so every op validated)
 * before anything is written: an image the store refuses changes nothing.
 */
export async function replaceEtcd(d: EtcdSnapshotDeps, image: Omit<StoreImage, 'index'>): Promise<number> {
  const tables = new Set([...d.viewTables(), ...d.readThroughTables, ...image.rows.map((r) => r.table)]);
  const whole: WriteOp[] = [...tables].sort(compare).map((table) => ({ op: 'delete-prefix', table, prefix: '' }));
  for (const row of image.rows) whole.push(setOp(row));
  const one = oneTxn(d, whole);
  const puts = one === undefined ? batches(image.rows.map(setOp), d.maxTxnOps).map((ops) => txnOf(d, ops)) : [];
  await putPrivate(d, image.privateEntries);
  // The one transaction also takes down the fence of a staged restore that stopped part way.
  const index = one !== undefined ? await send(d, withFenceDown(d, one)) : await stagedReplace(d, image.rows, puts);
  await prunePrivate(d, image.privateEntries);
  // A staged restore's last step deletes the fence, inside the view's range; one transaction of
  // read-through tables alone writes nothing there, and no view event would come.
  if (one === undefined || reachesView(d.layout, whole)) await d.reached(index);
  return index;
}

/** The commit's transaction, with room for the fence's delete; undefined when it is over etcd's limits. */
function oneTxn(d: EtcdSnapshotDeps, ops: readonly WriteOp[]): EtcdTxn | undefined {
  if (bytesOf(ops) > TXN_BYTES_BUDGET) return undefined;
  try {
    return txnOf(d, ops, d.maxTxnOps - 1);
  } catch (err) {
    if (isAgentError(err) && err.code === 'STATE_COMMIT_TOO_LARGE') return undefined;
    throw err;
  }
}

/** A commit's transaction, its ops validated as the store's commit validates them (rows are checked by Snapshots). */
function txnOf(d: EtcdSnapshotDeps, ops: readonly WriteOp[], maxTxnOps = d.maxTxnOps): EtcdTxn {
  return commitTxn(d.layout, canonicalOps(ops).ops, maxTxnOps);
}

/**
 * Under the fence (put first, or found from a restore that stopped part way): every row put, then
 * every row etcd holds that the image lacks deleted, the last of them with the fence's delete.
 */
async function stagedReplace(
  d: EtcdSnapshotDeps,
  rows: readonly ImageRow[],
  puts: readonly EtcdTxn[],
): Promise<number> {
  const wanted = new Map<string, Set<string>>();
  for (const row of rows) {
    let keys = wanted.get(row.table);
    if (keys === undefined) wanted.set(row.table, (keys = new Set()));
    keys.add(row.key);
  }
  let done = 0;
  let total = puts.length + 1;
  let index = 0;
  const step = async (txn: EtcdTxn): Promise<void> => {
    try {
      index = Math.max(index, await send(d, txn));
    } catch (err) {
      const detail = err instanceof Error ? err.message : String(err);
      d.log.error({ err, done, total }, 'snapshot restore stopped part way; readers keep the state before it');
      throw agentError('SNAPSHOT_RESTORE_INCOMPLETE', { done, total, detail, cause: err });
    }
    done++;
  };
  await raiseFence(d, rows.length);
  await inFlight(puts, step);
  // The deletes are listed once every row is in: a row written meanwhile and not in the image goes too.
  const deletes: WriteOp[] = [];
  for (const [table, keys] of await storedKeys(d)) {
    const keep = wanted.get(table);
    for (const key of keys) if (keep?.has(key) !== true) deletes.push({ op: 'delete', table, key });
  }
  const deleteTxns = batches(deletes, d.maxTxnOps - 1).map((ops) => txnOf(d, ops));
  total = puts.length + Math.max(1, deleteTxns.length);
  const last = deleteTxns.pop() ?? { compares: [], success: [], failure: [] };
  await inFlight(deleteTxns, step);
  await step(withFenceDown(d, last));
  d.log.info({ steps: total, rows: rows.length, deleted: deletes.length }, 'snapshot restored in steps');
  return index;
}

/**
 * Runs `step` over the transactions, RESTORE_IN_FLIGHT at a time (under the fence their order is
 * seen by no reader); after a failure no more are started, and the first failure is thrown once
 * the ones in flight have settled.
 */
async function inFlight(txns: readonly EtcdTxn[], step: (txn: EtcdTxn) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: { err: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (failure === undefined && next < txns.length) {
      const txn = txns[next++] as EtcdTxn;
      await step(txn).catch((err: unknown) => {
        failure ??= { err };
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(RESTORE_IN_FLIGHT, txns.length) }, worker));
  if (failure !== undefined) throw failure.err;
}

/** Puts the fence unless one is up (a restore that stopped part way: this one completes it). */
async function raiseFence(d: EtcdSnapshotDeps, rows: number): Promise<void> {
  const key = Buffer.from(restoreFenceKey(d.layout));
  const value = Buffer.from(JSON.stringify({ Rows: rows }));
  let res;
  try {
    res = await d.connection.txn(
      { compares: [{ key, target: 'create', equals: 0 }], success: [{ op: 'put', key, value }], failure: [] },
      STEP_DEADLINE_MS,
    );
  } catch (err) {
    throw etcdError(err);
  }
  if (!res.succeeded)
    d.log.warn({ fence: key.toString() }, 'snapshot restore: completing a restore that stopped part way');
}

function withFenceDown(d: EtcdSnapshotDeps, txn: EtcdTxn): EtcdTxn {
  const fence: EtcdTxnOp = { op: 'delete', key: Buffer.from(restoreFenceKey(d.layout)) };
  return { ...txn, success: [...txn.success, fence] };
}

/** One restore transaction, straight to etcd: the store's commit would wait for a view that holds it back. */
async function send(d: EtcdSnapshotDeps, txn: EtcdTxn): Promise<number> {
  try {
    return (await d.connection.txn(txn, STEP_DEADLINE_MS)).revision;
  } catch (err) {
    throw etcdError(err);
  }
}

/** Every row key etcd holds now, by table: the view's tables and the ones read through. */
async function storedKeys(d: EtcdSnapshotDeps): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  const collect = (
    kvs: readonly EtcdKeyValue[],
    split: (key: string) => { table: string; key: string } | undefined,
  ) => {
    for (const kv of kvs) {
      const row = split(kv.key);
      if (row === undefined) continue;
      let keys = out.get(row.table);
      if (keys === undefined) out.set(row.table, (keys = []));
      keys.push(row.key);
    }
  };
  const data = Buffer.from(`${d.layout.prefix}data/`);
  const parse = (key: string) => {
    const parsed = d.layout.parse(key);
    return parsed?.kind === 'row' ? parsed : undefined;
  };
  try {
    await d.connection.rangeKeys(data, prefixEnd(data), SNAPSHOT_DEADLINE_MS, {
      keysOnly: true,
      pageRows: SNAPSHOT_PAGE_ROWS,
      onPage: (kvs) => collect(kvs, parse),
    });
    for (const table of d.readThroughTables) {
      const root = d.layout.rowRoot(table);
      const from = Buffer.from(root);
      await d.connection.rangeKeys(from, prefixEnd(from), SNAPSHOT_DEADLINE_MS, {
        keysOnly: true,
        pageRows: SNAPSHOT_PAGE_ROWS,
        onPage: (kvs) => collect(kvs, (key) => ({ table, key: key.slice(root.length) })),
      });
    }
  } catch (err) {
    throw etcdError(err);
  }
  return out;
}

/** Ops cut into commits that each fit one transaction: ops plus one table marker per table, and the bytes budget. */
function batches(ops: readonly WriteOp[], maxTxnOps: number): WriteOp[][] {
  const out: WriteOp[][] = [];
  let batch: WriteOp[] = [];
  let tables = new Set<string>();
  let bytes = 0;
  for (const op of ops) {
    const size = bytesOf([op]);
    const newTable = tables.has(op.table) ? 0 : 1;
    if (
      batch.length > 0 &&
      (batch.length + 1 + tables.size + newTable > maxTxnOps || bytes + size > TXN_BYTES_BUDGET)
    ) {
      out.push(batch);
      batch = [];
      tables = new Set();
      bytes = 0;
    }
    batch.push(op);
    tables.add(op.table);
    bytes += size;
  }
  if (batch.length > 0) out.push(batch);
  return out;
}

async function putPrivate(d: EtcdSnapshotDeps, entries: readonly PrivateEntry[]): Promise<void> {
  const ops: EtcdTxnOp[] = entries.map((e) => ({
    op: 'put',
    key: Buffer.from(`${d.layout.privateRoot}${e.path}`),
    value: Buffer.from(JSON.stringify(e.value)),
  }));
  await rawBatches(d, ops);
}

async function prunePrivate(d: EtcdSnapshotDeps, entries: readonly PrivateEntry[]): Promise<void> {
  const root = Buffer.from(d.layout.privateRoot);
  let read;
  try {
    read = await d.connection.rangeKeys(root, prefixEnd(root), SNAPSHOT_DEADLINE_MS, { keysOnly: true });
  } catch (err) {
    throw etcdError(err);
  }
  const keep = new Set(entries.map((e) => e.path));
  const ops: EtcdTxnOp[] = read.kvs
    .filter((kv) => !keep.has(kv.key.slice(root.length)))
    .map((kv) => ({ op: 'delete', key: Buffer.from(kv.key) }));
  await rawBatches(d, ops);
}

/** Private-range writes, outside the tables: plain transactions within etcd's limits. */
async function rawBatches(d: EtcdSnapshotDeps, ops: readonly EtcdTxnOp[]): Promise<void> {
  let batch: EtcdTxnOp[] = [];
  let bytes = 0;
  const send = async (): Promise<void> => {
    if (batch.length === 0) return;
    try {
      await d.connection.txn({ compares: [], success: batch, failure: [] }, SNAPSHOT_DEADLINE_MS);
    } catch (err) {
      throw etcdError(err);
    }
    batch = [];
    bytes = 0;
  };
  for (const op of ops) {
    const size = op.key.length + (op.op === 'put' ? op.value.length : 0);
    if (batch.length >= d.maxTxnOps || (batch.length > 0 && bytes + size > TXN_BYTES_BUDGET)) await send();
    batch.push(op);
    bytes += size;
  }
  await send();
}

function setOp(row: ImageRow): WriteOp {
  return {
    op: 'set',
    table: row.table,
    key: row.key,
    value: row.value,
    ...(row.lease === undefined ? {} : { lease: row.lease }),
  };
}

/** Bytes the ops' keys and values take in a transaction, roughly. */
function bytesOf(ops: readonly WriteOp[]): number {
  let n = 0;
  for (const op of ops) {
    n += op.table.length + ('key' in op ? op.key.length : op.prefix.length) + 16;
    if (op.op === 'set') n += JSON.stringify(op.value).length;
  }
  return n;
}

function splitRow(rest: string): { table: string; key: string } | undefined {
  const slash = rest.indexOf('/');
  // `bulk/<table>` alone is the table's marker, not a row.
  return slash <= 0 ? undefined : { table: rest.slice(0, slash), key: rest.slice(slash + 1) };
}

function parseJson(value: Buffer): unknown {
  try {
    return JSON.parse(value.toString('utf8'));
  } catch {
    return value.toString('utf8');
  }
}

function compare(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}
