// One commit as one etcd transaction: `ifIndex` guards become compares (0 → create_revision == 0,
// N → mod_revision == N), the ops become the final write per key (etcd refuses a txn that writes a
// key twice, or puts a key inside a range it deletes), and a failed guard still writes the clock
// key so that it takes a revision like any other commit. A commit of read-through tables only (KV)
// writes nothing inside the view's range, its failed guard included: it reaches no agent's view
// (docs/decisions.md D15). One difference from the embedded store follows: a key deleted and set
// again by one commit keeps its createIndex (one put in etcd). A mesh table's marker is written only
// by a commit that deletes in it: a view needs the marker only for deletes it never saw, and every
// marker put is one more event to every agent (docs/decisions.md#table-markers-on-deletes).
import { agentError } from '../../core/errors.js';
import type { WriteOp } from '../types.js';
import type { EtcdCompare, EtcdTxn, EtcdTxnOp } from './etcd-client.js';
import { prefixEnd } from './etcd-client.js';
import type { EtcdKeyLayout } from './etcd-keys.js';

/** etcd's default --max-txn-ops: the most compares, and the most ops per branch, of one txn. */
export const DEFAULT_MAX_TXN_OPS = 128;

const EMPTY = Buffer.alloc(0);

/** Builds the txn for ops already validated by canonicalOps. */
export function commitTxn(layout: EtcdKeyLayout, ops: readonly WriteOp[], maxTxnOps = DEFAULT_MAX_TXN_OPS): EtcdTxn {
  const compares: EtcdCompare[] = [];
  // The last write wins per key, as when the ops are applied one after another.
  const finalWrite = new Map<string, Buffer | null>();
  const leases = new Map<string, string>();
  const deletedPrefixes: string[] = [];
  const tables = new Set<string>();
  /** The table of each key written, and the tables a prefix delete covers: where deletes land. */
  const tableOf = new Map<string, string>();
  const deletesIn = new Set<string>();
  for (const op of ops) {
    if (op.op === 'check') {
      const key = Buffer.from(layout.rowKey(op.table, op.key));
      compares.push({ key, target: op.ifIndex === 0 ? 'create' : 'mod', equals: op.ifIndex });
      continue;
    }
    tables.add(op.table);
    if (op.op === 'delete-prefix') {
      deletesIn.add(op.table);
      const start = layout.rowKey(op.table, op.prefix);
      for (const key of finalWrite.keys()) if (key.startsWith(start)) finalWrite.set(key, null);
      deletedPrefixes.push(start);
      continue;
    }
    const key = layout.rowKey(op.table, op.key);
    if (op.ifIndex !== undefined) {
      compares.push({ key: Buffer.from(key), target: op.ifIndex === 0 ? 'create' : 'mod', equals: op.ifIndex });
    }
    finalWrite.set(key, op.op === 'set' ? Buffer.from(JSON.stringify(op.value)) : null);
    tableOf.set(key, op.table);
    if (op.op === 'set' && op.lease !== undefined) leases.set(key, op.lease);
    else leases.delete(key);
  }

  const success: EtcdTxnOp[] = [];
  const puts: Buffer[] = [];
  for (const [key, value] of finalWrite) {
    const k = Buffer.from(key);
    if (value === null) {
      success.push({ op: 'delete', key: k });
      deletesIn.add(tableOf.get(key) as string);
    } else {
      success.push({ op: 'put', key: k, value, lease: leases.get(key) });
      puts.push(k);
    }
  }
  puts.sort(Buffer.compare);
  for (const prefix of deletedPrefixes) success.push(...rangeDeletesAround(Buffer.from(prefix), puts));
  const marker = (table: string): EtcdTxnOp => ({ op: 'put', key: Buffer.from(layout.tableKey(table)), value: EMPTY });
  // A read-through table's marker, outside the view's range, is written by every commit (the failed
  // guard's revision below); a mesh table's only with a delete in it. A commit that writes a mesh
  // table without one puts a row of it, which takes the revision.
  const markers = [...tables].map(marker);
  success.push(...[...tables].filter((t) => layout.isReadThrough(t) || deletesIn.has(t)).map(marker));
  const clock: EtcdTxnOp = { op: 'put', key: Buffer.from(layout.clock), value: EMPTY };
  if (tables.size === 0) success.push(clock);
  // A failed guard takes a revision too: by the clock in the view, or by the read-through markers outside it.
  const failure = tables.size > 0 && [...tables].every((table) => layout.isReadThrough(table)) ? markers : [clock];

  const needed = Math.max(compares.length, success.length);
  if (needed > maxTxnOps) {
    throw agentError('STATE_COMMIT_TOO_LARGE', { needed, max: maxTxnOps });
  }
  return { compares, success, failure };
}

/** Whether a commit of these ops writes inside the view's range (a mesh table, or only the clock). */
export function reachesView(layout: EtcdKeyLayout, ops: readonly WriteOp[]): boolean {
  const writes = ops.filter((op) => op.op !== 'check');
  return writes.length === 0 || writes.some((op) => !layout.isReadThrough(op.table));
}

/** Deletes of [prefix, prefixEnd) minus the keys put by the same txn (sorted), as disjoint ranges. */
function rangeDeletesAround(prefix: Buffer, sortedPuts: readonly Buffer[]): EtcdTxnOp[] {
  const end = prefixEnd(prefix);
  const ranges: EtcdTxnOp[] = [];
  let from = prefix;
  for (const put of sortedPuts) {
    if (!put.subarray(0, prefix.length).equals(prefix)) continue;
    if (Buffer.compare(from, put) < 0) ranges.push({ op: 'delete', key: from, end: put });
    from = Buffer.concat([put, Buffer.from([0])]);
  }
  ranges.push({ op: 'delete', key: from, end });
  return ranges;
}
