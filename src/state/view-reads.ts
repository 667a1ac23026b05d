// The read path (`read`, `changedAfter`) of a table held in a local view, the same for the embedded
// store and the etcd store's view: the rows at once, the target's own index (docs/decisions.md D6),
// and a one-shot watch from a revision on the view's watch hub.
import type { MemoryTables } from './memory-tables.js';
import type { RangeTarget, ReadResult, Row, WatchTarget } from './types.js';
import type { WatchHub } from './watch-hub.js';

export function readView<V>(tables: MemoryTables, target: RangeTarget): ReadResult<V> {
  let rows: Row<V>[];
  let own: number;
  if ('key' in target) {
    const row = tables.get(target.table, target.key) as Row<V> | undefined;
    rows = row === undefined ? [] : [row];
    own = tables.keyIndex(target.table, target.key);
  } else {
    rows = tables.list(target.table, target.prefix) as Row<V>[];
    own = tables.prefixIndex(target.table, target.prefix);
  }
  // Nothing under the target was ever written: Consul reports the table's index (rather than 0).
  return { rows, index: own > 0 ? own : tables.tableIndex(target.table), revision: tables.index };
}

export function viewChangedAfter(
  tables: MemoryTables,
  hub: WatchHub,
  target: RangeTarget,
  revision: number,
  fn: () => void,
): () => void {
  const own =
    'key' in target ? tables.keyIndex(target.table, target.key) : tables.prefixIndex(target.table, target.prefix);
  if (own <= revision) return watchView(hub, target, fn);
  // Already changed: told on a later turn, as a watch would be, never inside the caller.
  const pending = setImmediate(fn);
  return () => clearImmediate(pending);
}

export function watchView(hub: WatchHub, target: WatchTarget, fn: () => void): () => void {
  if ('key' in target) return hub.watchKey(target.table, target.key, fn);
  if ('prefix' in target) return hub.watchPrefix(target.table, target.prefix, fn);
  return hub.watchTable(target.table, fn);
}
