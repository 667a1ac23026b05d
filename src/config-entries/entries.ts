// Config entries over the state store: read one, list a kind, write (with ?cas), delete (with
// ?cas). service-intentions entries are read from and written to the intentions table through the
// IntentionStore, so /v1/connect/intentions, authorize and /v1/config share one set of rows and
// one index (docs/decisions.md#config-entries). Every other kind is a row of the config-entries table.
import type { StoredIntention } from '../connect/intentions/model.js';
import { INTENTIONS_TABLE } from '../connect/intentions/model.js';
import type { IntentionStore } from '../connect/intentions/store.js';
import { agentError } from '../core/errors.js';
import type { Row, StateStore, WatchTarget } from '../state/types.js';
import type { GoStruct } from './decode.js';
import { entryIntentions } from './intentions-entry.js';
import { destinations, intentionsEntry } from './intentions-view.js';
import { SERVICE_INTENTIONS, type KindSpec } from './kind.js';
import { CONFIG_ENTRIES_TABLE, entryKey, kindPrefix, kindSpec, type StoredConfigEntry } from './model.js';

/** An entry as read: its kind, its struct, its raft indexes. */
export interface EntryView {
  readonly spec: KindSpec;
  readonly entry: Readonly<GoStruct>;
  readonly createIndex: number;
  readonly modifyIndex: number;
}

/** A write without ?cas lost its guarded commit this many times in a row: give up rather than spin. */
const MAX_WRITE_ATTEMPTS = 5;

export class ConfigEntries {
  constructor(
    private readonly store: StateStore,
    private readonly intentions: IntentionStore,
  ) {}

  /** The entry of `kind` named `name` (service-intentions: in `namespace`), or undefined. */
  get(kind: string, name: string, namespace: string): EntryView | undefined {
    const spec = kindSpec(kind);
    if (kind === SERVICE_INTENTIONS) {
      const made = intentionsEntry(namespace, name, this.intentions.destinationRows(namespace, name));
      if (made === undefined) return undefined;
      return {
        spec,
        entry: made.entry,
        createIndex: made.createIndex,
        modifyIndex: this.intentions.destinationIndex(namespace, name),
      };
    }
    const row = this.store.get<StoredConfigEntry>(CONFIG_ENTRIES_TABLE, entryKey(kind, name));
    return row === undefined ? undefined : view(spec, row);
  }

  /** A kind's entries, sorted by name (then namespace). */
  list(kind: string): EntryView[] {
    const spec = kindSpec(kind);
    if (kind === SERVICE_INTENTIONS) {
      const all = this.intentions.current().all.map((e) => e.row);
      return destinations(all).flatMap(({ namespace, name }) => {
        const one = this.get(kind, name, namespace);
        return one === undefined ? [] : [one];
      });
    }
    return this.store
      .list<StoredConfigEntry>(CONFIG_ENTRIES_TABLE, kindPrefix(kind))
      .map((row) => view(spec, row))
      .sort((a, b) => compare(a.entry.Name as string, b.entry.Name as string));
  }

  /** What a blocking read of one entry waits on, and the index it reports. */
  entryWatch(kind: string, name: string, namespace: string): { target: WatchTarget; index: () => number } {
    kindSpec(kind);
    if (kind === SERVICE_INTENTIONS) {
      return {
        target: { table: INTENTIONS_TABLE },
        index: () => this.intentions.destinationIndex(namespace, name) || this.store.tableIndex(INTENTIONS_TABLE),
      };
    }
    const key = entryKey(kind, name);
    return {
      target: { table: CONFIG_ENTRIES_TABLE, key },
      index: () => this.store.keyIndex(CONFIG_ENTRIES_TABLE, key) || this.store.tableIndex(CONFIG_ENTRIES_TABLE),
    };
  }

  /** What a blocking list of a kind waits on, and the index it reports. */
  listWatch(kind: string): { target: WatchTarget; index: () => number } {
    kindSpec(kind);
    if (kind === SERVICE_INTENTIONS)
      return { target: { table: INTENTIONS_TABLE }, index: () => this.store.tableIndex(INTENTIONS_TABLE) };
    const prefix = kindPrefix(kind);
    return {
      target: { table: CONFIG_ENTRIES_TABLE, prefix },
      index: () => this.store.prefixIndex(CONFIG_ENTRIES_TABLE, prefix) || this.store.tableIndex(CONFIG_ENTRIES_TABLE),
    };
  }

  /**
   * Upserts a normalized, valid entry. With `cas`: only if the entry's ModifyIndex is `cas` (0:
   * only if there is none), answering whether it was written, as Consul's upsert-cas.
   */
  async apply(spec: KindSpec, entry: Readonly<GoStruct>, cas?: number): Promise<boolean> {
    const name = entry.Name as string;
    if (spec.kind === SERVICE_INTENTIONS) {
      const namespace = entry.Namespace as string;
      const candidates = entryIntentions(entry);
      return this.writeIntentions(namespace, name, cas, (rows) =>
        this.intentions.replaceDestination(namespace, name, candidates, rows),
      );
    }
    const key = entryKey(spec.kind, name);
    const value: StoredConfigEntry = { Kind: spec.kind, Name: name, Entry: entry };
    if (cas === undefined) {
      await this.store.commit([{ op: 'set', table: CONFIG_ENTRIES_TABLE, key, value }]);
      return true;
    }
    const row = this.store.get<StoredConfigEntry>(CONFIG_ENTRIES_TABLE, key);
    if ((row?.modifyIndex ?? 0) !== cas) return false;
    return (await this.store.commit([{ op: 'set', table: CONFIG_ENTRIES_TABLE, key, value, ifIndex: cas }])).ok;
  }

  /** Deletes the entry (a missing one is no error). With `cas`: only if its ModifyIndex is `cas`. */
  async delete(kind: string, name: string, namespace: string, cas?: number): Promise<boolean> {
    kindSpec(kind);
    if (kind === SERVICE_INTENTIONS) {
      return this.writeIntentions(namespace, name, cas, (rows) =>
        // A CAS delete of no entry deletes nothing: false, as Consul's delete-cas.
        cas !== undefined && rows.length === 0
          ? Promise.resolve(false)
          : this.intentions.replaceDestination(namespace, name, [], rows),
      );
    }
    const key = entryKey(kind, name);
    if (cas === undefined) {
      await this.store.commit([{ op: 'delete', table: CONFIG_ENTRIES_TABLE, key }]);
      return true;
    }
    const row = this.store.get(CONFIG_ENTRIES_TABLE, key);
    if (row === undefined || row.modifyIndex !== cas) return false;
    return (await this.store.commit([{ op: 'delete', table: CONFIG_ENTRIES_TABLE, key, ifIndex: cas }])).ok;
  }

  /** A write of a destination's intentions, guarded by the rows read; retried unless it is a CAS. */
  private async writeIntentions(
    namespace: string,
    name: string,
    cas: number | undefined,
    write: (rows: Row<StoredIntention>[]) => Promise<boolean>,
  ): Promise<boolean> {
    for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS; attempt++) {
      const rows = this.intentions.destinationRows(namespace, name);
      if (cas !== undefined) {
        const current = rows.length === 0 ? 0 : this.intentions.destinationIndex(namespace, name);
        if (current !== cas) return false;
      }
      if (await write(rows)) return true;
      if (cas !== undefined) return false;
    }
    throw agentError('CONFIG_ENTRY_RACE');
  }
}

function view(spec: KindSpec, row: Row<StoredConfigEntry>): EntryView {
  return { spec, entry: row.value.Entry, createIndex: row.createIndex, modifyIndex: row.modifyIndex };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
