// The materialised view every read is served from: tables of rows with create/modify indexes,
// tombstones for deleted keys (so key and prefix indexes move on deletes), and tombstone reaping
// with a per-table floor so that no index ever goes back.
import type { Row, WriteOp } from './types.js';
import { SortedByKey } from './sorted-by-key.js';

export interface Tombstone {
  readonly key: string;
  /** The index of the commit that deleted the key. */
  readonly index: number;
  /** Clock time of that commit, in ms; reaping compares it with the tombstone TTL. */
  readonly deletedAt: number;
}

/** Told about every (table, key) a commit changed, deletes included; the watch hub is one. */
export interface ChangeSink {
  changed(table: string, key: string): void;
}

export interface TableImage {
  readonly name: string;
  readonly index: number;
  readonly reapedFloor: number;
  readonly rows: readonly Row[];
  readonly tombstones: readonly Tombstone[];
}

/** A point-in-time copy of the view (rows and tombstones are immutable, so copies are shallow). */
export interface ViewImage {
  readonly index: number;
  readonly tables: readonly TableImage[];
}

/** Tombstones chosen for reaping, applied only once a snapshot without them is durable. */
export interface ReapPlan {
  readonly tables: ReadonlyMap<string, { readonly floor: number; readonly tombstones: readonly Tombstone[] }>;
  readonly count: number;
}

class Table {
  readonly rows = new Map<string, Row>();
  readonly rowOrder = new SortedByKey(this.rows);
  readonly tombstones = new Map<string, Tombstone>();
  readonly tombstoneOrder = new SortedByKey(this.tombstones);
  /** Highest index at which anything in the table changed. */
  index = 0;
  /** Highest index of any reaped tombstone: absent keys report at least this. */
  reapedFloor = 0;
}

const NO_CHANGES: ChangeSink = { changed() {} };

export class MemoryTables {
  private readonly tables = new Map<string, Table>();
  /** Index of the last applied commit (guard failures included). */
  index = 0;

  get(table: string, key: string): Row | undefined {
    return this.tables.get(table)?.rows.get(key);
  }

  list(table: string, prefix: string): Row[] {
    const t = this.tables.get(table);
    return t === undefined ? [] : t.rowOrder.withPrefix(prefix);
  }

  keyIndex(table: string, key: string): number {
    const t = this.tables.get(table);
    if (t === undefined) return 0;
    // A live row was (re)created after any tombstone of its key, so its modifyIndex is exact.
    const row = t.rows.get(key);
    if (row !== undefined) return row.modifyIndex;
    return Math.max(t.tombstones.get(key)?.index ?? 0, t.reapedFloor);
  }

  prefixIndex(table: string, prefix: string): number {
    const t = this.tables.get(table);
    if (t === undefined) return 0;
    if (prefix === '') return t.index;
    let max = t.reapedFloor;
    t.rowOrder.forEachWithPrefix(prefix, (row) => {
      if (row.modifyIndex > max) max = row.modifyIndex;
    });
    t.tombstoneOrder.forEachWithPrefix(prefix, (tomb) => {
      if (tomb.index > max) max = tomb.index;
    });
    return max;
  }

  tableIndex(table: string): number {
    return this.tables.get(table)?.index ?? 0;
  }

  get tombstoneCount(): number {
    let n = 0;
    for (const t of this.tables.values()) n += t.tombstones.size;
    return n;
  }

  /**
   * Applies one commit at `index`. Every guard is checked against the state before the commit;
   * if one fails nothing changes and the result is false, but the commit still took its index.
   * `now` is the commit's clock time (the WAL carries it so that replay rebuilds equal tombstones).
   */
  apply(index: number, ops: readonly WriteOp[], now: number, sink: ChangeSink = NO_CHANGES): boolean {
    if (index <= this.index) throw new RangeError(`commit index ${index} is not after ${this.index}`);
    for (const op of ops) {
      if (op.op === 'delete-prefix' || op.ifIndex === undefined) continue;
      const row = this.get(op.table, op.key);
      const holds = op.ifIndex === 0 ? row === undefined : row?.modifyIndex === op.ifIndex;
      if (!holds) {
        this.index = index;
        return false;
      }
    }
    for (const op of ops) {
      if (op.op === 'set') this.set(op.table, op.key, op.value, index, sink);
      else if (op.op === 'delete') this.deleteKey(this.tables.get(op.table), op.table, op.key, index, now, sink);
      else if (op.op === 'delete-prefix') this.deletePrefix(op.table, op.prefix, index, now, sink);
    }
    this.index = index;
    return true;
  }

  private set(table: string, key: string, value: unknown, index: number, sink: ChangeSink): void {
    let t = this.tables.get(table);
    if (t === undefined) {
      t = new Table();
      this.tables.set(table, t);
    }
    const old = t.rows.get(key);
    const row: Row = { key, value, createIndex: old?.createIndex ?? index, modifyIndex: index };
    t.rows.set(key, row);
    if (old !== undefined) {
      t.rowOrder.replaced(row);
    } else {
      t.rowOrder.inserted(row);
      if (t.tombstones.delete(key)) t.tombstoneOrder.removed(key);
    }
    t.index = index;
    sink.changed(table, key);
  }

  private deleteKey(
    t: Table | undefined,
    table: string,
    key: string,
    index: number,
    now: number,
    sink: ChangeSink,
  ): void {
    // Deleting an absent key changes nothing: no tombstone, no index move, no wake-up.
    if (t === undefined || !t.rows.delete(key)) return;
    t.rowOrder.removed(key);
    const tomb: Tombstone = { key, index, deletedAt: now };
    const hadTomb = t.tombstones.has(key);
    t.tombstones.set(key, tomb);
    if (hadTomb) t.tombstoneOrder.replaced(tomb);
    else t.tombstoneOrder.inserted(tomb);
    t.index = index;
    sink.changed(table, key);
  }

  private deletePrefix(table: string, prefix: string, index: number, now: number, sink: ChangeSink): void {
    const t = this.tables.get(table);
    if (t === undefined) return;
    // withPrefix copies, so deleting while walking is safe; "" covers the whole table.
    for (const row of t.rowOrder.withPrefix(prefix)) this.deleteKey(t, table, row.key, index, now, sink);
  }

  /** Chooses the tombstones deleted at or before `cutoff` (ms); nothing changes until applyReap. */
  planReap(cutoff: number): ReapPlan {
    const tables = new Map<string, { floor: number; tombstones: Tombstone[] }>();
    let count = 0;
    for (const [name, t] of this.tables) {
      let floor = 0;
      const chosen: Tombstone[] = [];
      for (const tomb of t.tombstones.values()) {
        if (tomb.deletedAt > cutoff) continue;
        chosen.push(tomb);
        if (tomb.index > floor) floor = tomb.index;
      }
      if (chosen.length > 0) {
        tables.set(name, { floor, tombstones: chosen });
        count += chosen.length;
      }
    }
    return { tables, count };
  }

  /** Drops the planned tombstones that are still current and raises the floors. */
  applyReap(plan: ReapPlan): void {
    for (const [name, planned] of plan.tables) {
      const t = this.tables.get(name);
      if (t === undefined) continue;
      for (const tomb of planned.tombstones) {
        // Identity check: a key deleted again since the plan has a newer tombstone; keep that one.
        if (t.tombstones.get(tomb.key) === tomb) {
          t.tombstones.delete(tomb.key);
          t.tombstoneOrder.removed(tomb.key);
        }
      }
      if (planned.floor > t.reapedFloor) t.reapedFloor = planned.floor;
    }
  }

  /** A shallow copy of the view as if `plan` (if given) had been applied. Synchronous on purpose. */
  capture(plan?: ReapPlan): ViewImage {
    const tables: TableImage[] = [];
    for (const [name, t] of this.tables) {
      const planned = plan?.tables.get(name);
      const reaped = planned === undefined ? undefined : new Set(planned.tombstones);
      const tombstones = Array.from(t.tombstones.values());
      tables.push({
        name,
        index: t.index,
        reapedFloor: Math.max(t.reapedFloor, planned?.floor ?? 0),
        rows: Array.from(t.rows.values()),
        tombstones: reaped === undefined ? tombstones : tombstones.filter((tomb) => !reaped.has(tomb)),
      });
    }
    return { index: this.index, tables };
  }

  /** Replaces the whole view with an image (recovery from a snapshot). */
  load(image: ViewImage): void {
    this.tables.clear();
    for (const ti of image.tables) {
      const t = new Table();
      for (const row of ti.rows) t.rows.set(row.key, row);
      for (const tomb of ti.tombstones) t.tombstones.set(tomb.key, tomb);
      t.index = ti.index;
      t.reapedFloor = ti.reapedFloor;
      this.tables.set(ti.name, t);
    }
    this.index = image.index;
  }
}
