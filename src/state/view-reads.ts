// The read path (`read`, `changedAfter`) of a table held in a local view, the same for the embedded
// store and the etcd store's view: the rows at once, the target's own index (docs/decisions.md D6),
// and a one-shot watch from a revision on the view's watch hub.
import type { MemoryTables } from './memory-tables.js';
import type { RangeTarget, ReadResult, Row, WatchTarget } from './types.js';
import type { WatchHub } from './watch-hub.js';

export function readView<V>(tables: MemoryTables, target: RangeTarget): ReadResult<V> {
  let rows: Row<V>[];
  if ('key' in target) {
    const row = tables.get(target.table, target.key) as Row<V> | undefined;
    rows = row === undefined ? [] : [row];
  } else {
    rows = tables.list(target.table, target.prefix) as Row<V>[];
  }
  return { rows, index: reportedIndex(tables, target), revision: tables.index };
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
