// The local view behind the etcd store: the same MemoryTables and WatchHub as the embedded store,
// fed by watch events one revision at a time, and by full reads (start-up, and resync after the
// watch's revision was compacted) that are diffed against the view so that exactly the watchers
// whose rows changed wake up. Revisions only move forward. Every value is checked against its
// table's schema on the way in (row-check.ts): a bad one is left out, and a key whose value turns
// bad keeps its last good value with the bad revision's indexes, so that a guarded write can
// replace it and no index goes back. While a snapshot restore's fence is up, the watch's events are
// held back and applied together with its removal (etcd-snapshot.ts).
import type { Clock } from '../../core/clock.js';
import type { Logger } from '../../core/log.js';
import type { EtcdKeyValue, EtcdRangeResult, EtcdWatchEvent } from './etcd-client.js';
import type { EtcdKeyLayout } from './etcd-keys.js';
import { MemoryTables } from '../memory-tables.js';
import type { TableImage, Tombstone, ViewImage } from '../memory-tables.js';
import type { Row, TableSchemas, WriteOp } from '../types.js';
import { WatchHub } from '../watch-hub.js';
import { rowProblem, RowDecoder, type BadRows } from './row-check.js';
import { restoreFenceKey } from './etcd-snapshot.js';

interface Waiter {
  readonly revision: number;
  readonly resolve: () => void;
}

export class EtcdView {
  readonly tables = new MemoryTables();
  readonly hub: WatchHub;
  /**
   * The etcd revision the view is complete up to: every change under the prefix at or below it is
   * applied. Moves on events, progress notifications and full reads, never on a watch's creation
   * (its header revision comes before the catch-up events).
   */
  revision = 0;
  /** Commits waiting for the view to reach their revision, in revision order. */
  private waiters: Waiter[] = [];
  private nextReapAt: number;
  /** The view last kept on disk, until the first full read: where a key read bad finds its last good value. */
  private lastKept: Map<string, Row> | undefined;
  /**
   * Events held back while a snapshot restore's fence is up (from its put), applied together with
   * its delete, so that readers see the old state or the restored one, never a mix (etcd-snapshot.ts).
   */
  private held: EtcdWatchEvent[] | undefined;
  private readonly fenceKey: string;
  private readonly decoder: RowDecoder;

  constructor(
    private readonly layout: EtcdKeyLayout,
    private readonly log: Logger,
    private readonly clock: Clock,
    private readonly tombstoneTtlMs: number,
    private readonly schemas: TableSchemas,
    private readonly badRows: BadRows,
  ) {
    this.hub = new WatchHub(log);
    this.nextReapAt = clock.now() + tombstoneTtlMs;
    this.fenceKey = restoreFenceKey(layout);
    this.decoder = new RowDecoder(schemas);
  }

  /** Whether a snapshot restore's fence is up: the view holds its steps back until the last. */
  get restoring(): boolean {
    return this.held !== undefined;
  }

  /** Resolves once the view has applied `revision` (read-your-writes for the store's own commits). */
  reached(revision: number): Promise<void> {
    if (revision <= this.revision) return Promise.resolve();
    return new Promise((resolve) => {
      const waiters = this.waiters;
      let at = waiters.length;
      while (at > 0 && (waiters[at - 1] as Waiter).revision > revision) at--;
      waiters.splice(at, 0, { revision, resolve });
    });
  }

  /** Resolves every waiter now (the store is closing and will never see their revisions). */
  releaseWaiters(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w.resolve();
  }

  /** One watch response: events in revision order, or none (a progress notification at `headerRevision`). */
  applyEvents(all: readonly EtcdWatchEvent[], headerRevision: number): void {
    const now = this.clock.now();
    const events = this.held === undefined && !all.some((e) => e.kv.key === this.fenceKey) ? all : this.holdBack(all);
    let i = 0;
    while (i < events.length) {
      const revision = (events[i] as EtcdWatchEvent).kv.modRevision;
      const ops: WriteOp[] = [];
      for (; i < events.length && (events[i] as EtcdWatchEvent).kv.modRevision === revision; i++) {
        const op = this.opOf(events[i] as EtcdWatchEvent);
        if (op !== undefined) ops.push(op);
      }
      // A revision already in the view came in again (a resumed watch overlapping a full read).
      if (revision <= this.tables.index) continue;
      this.tables.apply(revision, ops, now, this.hub);
      if (revision > this.revision) this.revision = revision;
    }
    if (all.length === 0 && this.held === undefined && headerRevision > this.revision) this.revision = headerRevision;
    this.hub.flush();
    this.maybeReap(now);
    this.releaseReached();
  }

  /** The events to apply now: none from a fence's put on, then every one held with its delete. */
  private holdBack(events: readonly EtcdWatchEvent[]): readonly EtcdWatchEvent[] {
    const ready: EtcdWatchEvent[] = [];
    for (const event of events) {
      const fence = event.kv.key === this.fenceKey;
      if (this.held === undefined) {
        if (fence && event.type === 'put') this.held = [event];
        else ready.push(event);
        continue;
      }
      this.held.push(event);
      if (fence && event.type === 'delete') {
        for (const e of this.held) ready.push(e);
        this.held = undefined;
      }
    }
    return ready;
  }

  /** A full read found the fence up with the state before it gone: hold every event back until it goes. */
  holdUntilFenceDown(): void {
    this.held ??= [];
  }

  /** Replaces the view with a full read, waking the watchers of every row that differs. */
  load(read: EtcdRangeResult): void {
    const now = this.clock.now();
    // The watch after a full read starts past it: events held before are sent again, the fence's put with them.
    this.held = undefined;
    const fresh = new Map<string, Map<string, Row>>();
    const floors = new Map<string, number>();
    let top = 0;
    for (const kv of read.kvs) {
      if (kv.modRevision > top) top = kv.modRevision;
      const parsed = this.layout.parse(kv.key);
      if (parsed?.kind === 'table') floors.set(parsed.table, kv.modRevision);
      if (parsed?.kind !== 'row') continue;
      const value = this.decode(kv, parsed.table, parsed.key);
      if (value === undefined) continue;
      let rows = fresh.get(parsed.table);
      if (rows === undefined) fresh.set(parsed.table, (rows = new Map()));
      rows.set(parsed.key, {
        key: parsed.key,
        value: value.json,
        createIndex: kv.createRevision,
        modifyIndex: kv.modRevision,
      });
    }

    const old = this.tables.capture();
    const oldByName = new Map(old.tables.map((t) => [t.name, t]));
    const names = new Set([...oldByName.keys(), ...fresh.keys(), ...floors.keys()]);
    const changed: [string, string][] = [];
    const images: TableImage[] = [];
    for (const name of names) {
      const before = oldByName.get(name);
      const rows = fresh.get(name) ?? new Map<string, Row>();
      const tombstones = new Map<string, Tombstone>();
      for (const tomb of before?.tombstones ?? []) if (!rows.has(tomb.key)) tombstones.set(tomb.key, tomb);
      for (const row of before?.rows ?? []) {
        const current = rows.get(row.key);
        if (current === undefined) {
          // Deleted while we were not watching: etcd no longer knows when, so at the read's revision.
          tombstones.set(row.key, { key: row.key, index: read.revision, deletedAt: now });
          changed.push([name, row.key]);
        } else if (current.modifyIndex !== row.modifyIndex) {
          changed.push([name, row.key]);
        }
      }
      const known = new Set(before?.rows.map((r) => r.key));
      for (const key of rows.keys()) if (!known.has(key)) changed.push([name, key]);
      // Deletes never seen (before this view existed, or compacted away) are below the table's mark.
      const floor = Math.max(before?.reapedFloor ?? 0, floors.get(name) ?? 0);
      let index = Math.max(before?.index ?? 0, floor);
      for (const row of rows.values()) if (row.modifyIndex > index) index = row.modifyIndex;
      for (const tomb of tombstones.values()) if (tomb.index > index) index = tomb.index;
      images.push({ name, index, reapedFloor: floor, rows: [...rows.values()], tombstones: [...tombstones.values()] });
    }
    this.tables.load({ index: Math.max(old.index, top), tables: images });
    this.lastKept = undefined;
    if (read.revision > this.revision) this.revision = read.revision;
    for (const [table, key] of changed) this.hub.changed(table, key);
    this.hub.flush();
    this.releaseReached();
  }

  /**
   * A view kept on disk, as load() would take it from etcd: rows that fail their schema (a file
   * written before they were checked) are left out.
   */
  loadImage(image: ViewImage): void {
    const tables = image.tables.map((t) => ({ ...t, rows: t.rows.filter((row) => this.goodOnDisk(t.name, row)) }));
    this.tables.load({ index: image.index, tables });
    this.revision = image.index;
  }

  /** Rows of the view kept on disk, consulted only for keys the first full read finds bad. */
  rememberKept(image: ViewImage): void {
    this.lastKept = new Map();
    for (const t of image.tables)
      for (const row of t.rows)
        if (this.goodOnDisk(t.name, row)) this.lastKept.set(this.layout.rowKey(t.name, row.key), row);
  }

  private goodOnDisk(table: string, row: Row): boolean {
    const problem = rowProblem(this.schemas.get(table), row.key, row.value);
    if (problem !== undefined) this.badRows.report(this.layout.rowKey(table, row.key), row.modifyIndex, problem);
    return problem === undefined;
  }

  private opOf(event: EtcdWatchEvent): WriteOp | undefined {
    const parsed = this.layout.parse(event.kv.key);
    if (parsed?.kind !== 'row') return undefined;
    if (event.type === 'delete') return { op: 'delete', table: parsed.table, key: parsed.key };
    const value = this.decode(event.kv, parsed.table, parsed.key);
    return value === undefined ? undefined : { op: 'set', table: parsed.table, key: parsed.key, value: value.json };
  }

  /** The row's value, or undefined when it is bad and the view holds no earlier value of the key (then it stays out). */
  private decode(kv: EtcdKeyValue, table: string, key: string): { json: unknown } | undefined {
    const checked = this.decoder.decode(table, key, kv.value);
    if (checked.ok) return { json: checked.value };
    this.badRows.report(kv.key, kv.modRevision, checked.problem);
    const last = this.tables.get(table, key) ?? this.lastKept?.get(kv.key);
    return last === undefined ? undefined : { json: last.value };
  }

  private releaseReached(): void {
    const waiters = this.waiters;
    let n = 0;
    while (n < waiters.length && (waiters[n] as Waiter).revision <= this.revision) n++;
    if (n === 0) return;
    const due = waiters.splice(0, n);
    for (const w of due) w.resolve();
  }

  /** Tombstones older than the TTL go, raising the table floors (as in the embedded memory store). */
  private maybeReap(now: number): void {
    if (now < this.nextReapAt) return;
    this.tables.applyReap(this.tables.planReap(now - this.tombstoneTtlMs));
    this.nextReapAt = now + this.tombstoneTtlMs;
  }
}
