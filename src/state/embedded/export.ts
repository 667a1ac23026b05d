// The embedded store's side of a snapshot: the image of its view at the last applied index (taken
// synchronously, so it is one point), and the one commit that replaces every table with an
// image's: each table emptied and every row set, applied through the WAL as any commit is
// (docs/decisions.md#snapshots). Restored rows take that commit's index, past every earlier one.
import { agentError } from '../../core/errors.js';
import type { MemoryTables } from '../memory-tables.js';
import type { ImageRow, StoreImage, WriteOp } from '../types.js';

/** Every row of the view, sorted by table and key, at the view's index. */
export function imageOf(tables: MemoryTables): StoreImage {
  const names = tables
    .capture()
    .tables.map((t) => t.name)
    .sort(byteOrder);
  const rows: ImageRow[] = [];
  for (const table of names) {
    for (const row of tables.list(table, '')) rows.push({ table, key: row.key, value: row.value });
  }
  return { index: tables.index, rows, privateEntries: [] };
}

/** The ops of the one commit that makes the view hold exactly the image's rows. */
export function replaceOps(tables: MemoryTables, image: Omit<StoreImage, 'index'>): WriteOp[] {
  if (image.privateEntries.length > 0) {
    throw agentError('SNAPSHOT_BACKEND_MISMATCH', { archive: 'etcd', agent: 'embedded' });
  }
  const names = new Set(tables.capture().tables.map((t) => t.name));
  for (const row of image.rows) names.add(row.table);
  const ops: WriteOp[] = [...names].sort(byteOrder).map((table) => ({ op: 'delete-prefix', table, prefix: '' }));
  for (const row of image.rows) ops.push({ op: 'set', table: row.table, key: row.key, value: row.value });
  return ops;
}

function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}
