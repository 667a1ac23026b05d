// The read path (`read`, `changedAfter`) of a table held in a local view, the same for the embedded
// store and the etcd store's view: the rows at once, the target's own index (docs/decisions.md D6),
// and a one-shot watch from a revision on the view's watch hub. A listing's keys only, or its size
// limit, are served as a store reading through etcd serves them (etcd-read-through.ts).
import { agentError } from '../core/errors.js';
import type { MemoryTables } from './memory-tables.js';
import type { RangeTarget, ReadResult, Row, WatchTarget } from './types.js';
import type { WatchHub } from './watch-hub.js';

/** The read as the store's `read` answers it: a listing over its limit rejects, never throws. */
export function readView<V>(tables: MemoryTables, target: RangeTarget): Promise<ReadResult<V>> {
  try {
    return Promise.resolve(readViewNow<V>(tables, target));
  } catch (err) {
    return Promise.reject(err as Error);
  }
}

function readViewNow<V>(tables: MemoryTables, target: RangeTarget): ReadResult<V> {
  let rows: Row<V>[];
  if ('key' in target) {
    const row = tables.get(target.table, target.key) as Row<V> | undefined;
    rows = row === undefined ? [] : [row];
  } else {
    rows = tables.list(target.table, target.prefix) as Row<V>[];
    if (target.maxBytes !== undefined) checkListingSize(rows, target.maxBytes, target.keysOnly === true);
    if (target.keysOnly === true) rows = rows.map((r) => ({ ...r, value: null as V }));
  }
  return { rows, index: reportedIndex(tables, target), revision: tables.index };
}

/** Counts a listing as a store holding it as JSON would (etcd does): keys, and values unless keys only. */
function checkListingSize(rows: readonly Row[], maxBytes: number, keysOnly: boolean): void {
  let bytes = 0;
  for (const row of rows) {
    bytes += Buffer.byteLength(row.key);
    if (!keysOnly) bytes += Buffer.byteLength(JSON.stringify(row.value));
    if (bytes > maxBytes) throw agentError('STATE_LISTING_TOO_LARGE', { max: maxBytes });
  }
}

/**
 * Consul's blocking rule on a view: told at once when the index a read reports is already past
 * `revision`, else on the target's next change.
 */
export function viewChangedAfter(
  tables: MemoryTables,
  hub: WatchHub,
  target: RangeTarget,
  revision: number,
  fn: () => void,
): () => void {
  if (reportedIndex(tables, target) <= revision) return watchView(hub, target, fn);
  // Told on a later turn, as a watch would be, never inside the caller.
  const pending = setImmediate(fn);
  return () => clearImmediate(pending);
}

/** The target's own index, or its table's when nothing under it was ever written (as Consul reports, rather than 0). */
function reportedIndex(tables: MemoryTables, target: RangeTarget): number {
  const { table } = target;
  const own = 'key' in target ? tables.keyIndex(table, target.key) : tables.prefixIndex(table, target.prefix);
  return own > 0 ? own : tables.tableIndex(table);
}

export function watchView(hub: WatchHub, target: WatchTarget, fn: () => void): () => void {
  if ('key' in target) return hub.watchKey(target.table, target.key, fn);
  if ('prefix' in target) return hub.watchPrefix(target.table, target.prefix, fn);
  return hub.watchTable(target.table, fn);
}
