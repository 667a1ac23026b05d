// The etcd store's side of a snapshot (docs/decisions.md#snapshots). Export: one range read of the
// whole prefix, so the mesh tables, the read-through KV and the private range (CA keys, token
// secrets) are all at one revision. Restore: the private entries are put first (an extra one is
// harmless), then the tables are replaced, in one transaction when the archive fits one (etcd
// --max-txn-ops and --max-request-bytes), else in steps (every row put, then every row the archive
// lacks deleted), then the private entries the archive lacks are deleted. Each step is idempotent:
// a restore that stopped half way is completed by running it again.
import { agentError, isAgentError } from '../../core/errors.js';
import type { Logger } from '../../core/log.js';
import type { CommitResult, ImageRow, PrivateEntry, StoreImage, TableSchemas, WriteOp } from '../types.js';
import type { EtcdConnection, EtcdTxnOp } from './etcd-client.js';
import { prefixEnd } from './etcd-client.js';
import { etcdError } from './etcd-errors.js';
import type { EtcdKeyLayout } from './etcd-keys.js';
import { commitTxn } from './etcd-txn.js';
import { decodeRow } from './row-check.js';

/**
 * The most bytes of rows one restore transaction carries: etcd's default --max-request-bytes is
 * 1.5 MiB, and keys, markers and framing need room beside the values.
 */
const TXN_BYTES_BUDGET = 1024 * 1024;
/** A snapshot's reads and private writes: a whole prefix may take longer than a view read. */
const SNAPSHOT_DEADLINE_MS = 60_000;

export interface EtcdSnapshotDeps {
  readonly connection: EtcdConnection;
  readonly layout: EtcdKeyLayout;
  readonly schemas: TableSchemas;
  readonly log: Logger;
  readonly maxTxnOps: number;
  /** The tables the view holds now, and their rows' keys. */
  readonly viewTables: () => readonly string[];
  readonly viewKeys: (table: string) => readonly string[];
  readonly readThroughTables: readonly string[];
  /** The store's own commit: validated, checked against the schemas, answered once the view shows it. */
  readonly commit: (ops: readonly WriteOp[]) => Promise<CommitResult>;
}

/** Every row and private entry under the prefix, read at one revision. */
export async function exportEtcd(d: EtcdSnapshotDeps): Promise<StoreImage> {
  let read;
  try {
    read = await d.connection.rangeKeys(d.layout.root, prefixEnd(d.layout.root), SNAPSHOT_DEADLINE_MS);
  } catch (err) {
    throw etcdError(err);
  }
  const bulk = `${d.layout.prefix}bulk/`;
  const rows: ImageRow[] = [];
  const privateEntries: PrivateEntry[] = [];
  for (const kv of read.kvs) {
    const parsed = d.layout.parse(kv.key);
    let row: { table: string; key: string } | undefined;
    if (parsed?.kind === 'row') row = parsed;
    else if (kv.key.startsWith(bulk)) row = splitRow(kv.key.slice(bulk.length));
    if (row !== undefined) {
      const checked = decodeRow(d.schemas, row.table, row.key, kv.value);
      // A row every view leaves out is no part of the state: it is left out of the archive too.
      if (checked.ok) rows.push({ table: row.table, key: row.key, value: checked.value });
      else d.log.warn({ table: row.table, key: row.key, problem: checked.problem }, 'snapshot: a bad row left out');
      continue;
    }
    if (kv.key.startsWith(d.layout.privateRoot)) {
      privateEntries.push({ path: kv.key.slice(d.layout.privateRoot.length), value: parseJson(kv.value) });
    }
  }
  rows.sort((a, b) => compare(a.table, b.table) || compare(a.key, b.key));
  return { index: read.revision, rows, privateEntries };
}

/** Replaces the tables and the private range with the image's; resolves to the revision of the last step. */
export async function replaceEtcd(d: EtcdSnapshotDeps, image: Omit<StoreImage, 'index'>): Promise<number> {
  await putPrivate(d, image.privateEntries);
  const tables = new Set([...d.viewTables(), ...d.readThroughTables, ...image.rows.map((r) => r.table)]);
  const whole: WriteOp[] = [...tables].sort(compare).map((table) => ({ op: 'delete-prefix', table, prefix: '' }));
  for (const row of image.rows) whole.push(setOp(row));
  const index = fitsOneTxn(d, whole) ? (await d.commit(whole)).index : await stagedReplace(d, image.rows, tables);
  await prunePrivate(d, image.privateEntries);
  return index;
}

function fitsOneTxn(d: EtcdSnapshotDeps, ops: readonly WriteOp[]): boolean {
  if (bytesOf(ops) > TXN_BYTES_BUDGET) return false;
  try {
    commitTxn(d.layout, ops, d.maxTxnOps);
    return true;
  } catch (err) {
    if (isAgentError(err) && err.code === 'STATE_COMMIT_TOO_LARGE') return false;
    throw err;
  }
}

/** Every row put (batches within etcd's limits), then every row the image lacks deleted. */
async function stagedReplace(
  d: EtcdSnapshotDeps,
  rows: readonly ImageRow[],
  tables: ReadonlySet<string>,
): Promise<number> {
  const wanted = new Map<string, Set<string>>();
  for (const row of rows) {
    let keys = wanted.get(row.table);
    if (keys === undefined) wanted.set(row.table, (keys = new Set()));
    keys.add(row.key);
  }
  const puts = batches(rows.map(setOp), d.maxTxnOps);
  let done = 0;
  let index = 0;
  const step = async (ops: readonly WriteOp[], total: number): Promise<void> => {
    try {
      index = (await d.commit(ops)).index;
    } catch (err) {
      const detail = err instanceof Error ? err.message : String(err);
      d.log.error({ err, done, total }, 'snapshot restore stopped part way');
      throw agentError('SNAPSHOT_RESTORE_INCOMPLETE', { done, total, detail, cause: err });
    }
    done++;
  };
  // The deletes are listed once every row is in: a row written meanwhile and not in the image goes too.
  let total = puts.length;
  for (const batch of puts) await step(batch, total);
  const deletes: WriteOp[] = [];
  for (const table of [...tables].sort(compare)) {
    const keep = wanted.get(table);
    for (const key of await keysOf(d, table)) {
      if (keep?.has(key) !== true) deletes.push({ op: 'delete', table, key });
    }
  }
  const deleteBatches = batches(deletes, d.maxTxnOps);
  total += deleteBatches.length;
  for (const batch of deleteBatches) await step(batch, total);
  d.log.info({ steps: total, rows: rows.length, deleted: deletes.length }, 'snapshot restored in steps');
  return index;
}

async function keysOf(d: EtcdSnapshotDeps, table: string): Promise<readonly string[]> {
  if (!d.layout.isReadThrough(table)) return d.viewKeys(table);
  const root = Buffer.from(d.layout.rowRoot(table));
  try {
    const read = await d.connection.rangeKeys(root, prefixEnd(root), SNAPSHOT_DEADLINE_MS, { keysOnly: true });
    return read.kvs.map((kv) => kv.key.slice(root.length));
  } catch (err) {
    throw etcdError(err);
  }
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
