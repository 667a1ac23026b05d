// Where the store's rows live in etcd, under the configured prefix:
//   <prefix>data/<table>/<key>   a row; the value is the row's JSON (the same JSON the WAL holds)
//   <prefix>bulk/<table>/<key>   a row of a read-through table (KV): outside the view, each read
//                                goes to etcd (docs/decisions.md D15)
//   <prefix>meta/tables/<table>  written by every commit that touches the table: a newly started
//                                view takes its mod revision as the table's floor for deletes it
//                                never saw (etcd keeps no record of a deleted key)
//   <prefix>bulk/<table>         the same marker for a read-through table, outside the view's range
//                                so that its writes reach no view; its reads need no floor (each
//                                reports the revision it read at)
//   <prefix>meta/clock           written when a commit writes nothing else (a failed guard, no ops),
//                                so that every commit takes a revision, as a raft index would
// The view reads and watches only [<prefix>data/, <prefix>meta0): keys elsewhere under the prefix
// are not shared with every agent. `<prefix>private/` holds what only server agents may read (the
// CA keys; etcd RBAC enforces it, docs/cluster-security.md) and `<prefix>sign/` the leaf signing
// requests of client agents and the servers' responses.
import { agentError } from '../../core/errors.js';

export type ParsedKey =
  | { readonly kind: 'row'; readonly table: string; readonly key: string }
  | { readonly kind: 'table'; readonly table: string }
  | { readonly kind: 'clock' };

export class EtcdKeyLayout {
  readonly root: Buffer;
  private readonly data: string;
  private readonly bulk: string;
  private readonly tables: string;
  readonly clock: string;

  readonly prefix: string;
  /** The range the shared view reads and watches: [viewStart, viewEnd). */
  readonly viewStart: Buffer;
  readonly viewEnd: Buffer;
  /** Server agents only: the CA's private material. */
  readonly privateRoot: string;
  /** Leaf signing requests (`requests/<id>`), claims and responses (`responses/<id>`). */
  readonly signRoot: string;

  /** `readThrough`: tables whose rows live under `bulk/`, never in the shared view. */
  constructor(
    prefix: string,
    private readonly readThrough: ReadonlySet<string> = new Set(),
  ) {
    // Always a whole path segment: meshes at `/svc` and `/svc2` must not read each other's keys.
    const p = prefix.endsWith('/') ? prefix : `${prefix}/`;
    this.prefix = p;
    this.root = Buffer.from(p, 'utf8');
    this.data = `${p}data/`;
    // 'b' sorts before 'data/': outside the view's range.
    this.bulk = `${p}bulk/`;
    this.tables = `${p}meta/tables/`;
    this.clock = `${p}meta/clock`;
    this.viewStart = Buffer.from(this.data, 'utf8');
    // '0' follows '/': the end covers every key under `meta/` and nothing after it.
    this.viewEnd = Buffer.from(`${p}meta0`, 'utf8');
    this.privateRoot = `${p}private/`;
    this.signRoot = `${p}sign/`;
  }

  rowKey(table: string, key: string): string {
    return `${this.rowRoot(table)}${key}`;
  }

  /** Where the rows of `table` start: every row key is this plus the row's key. */
  rowRoot(table: string): string {
    return `${this.readThrough.has(table) ? this.bulk : this.data}${checkTable(table)}/`;
  }

  isReadThrough(table: string): boolean {
    return this.readThrough.has(table);
  }

  /** The key every commit touching `table` writes, so that each takes a revision (a read-through table's: outside the view). */
  tableKey(table: string): string {
    return this.readThrough.has(table) ? `${this.bulk}${checkTable(table)}` : `${this.tables}${checkTable(table)}`;
  }

  /** What a key read from etcd is; undefined for keys under the prefix this store did not write. */
  parse(full: string): ParsedKey | undefined {
    if (full.startsWith(this.data)) {
      const slash = full.indexOf('/', this.data.length);
      if (slash <= this.data.length) return undefined;
      return { kind: 'row', table: full.slice(this.data.length, slash), key: full.slice(slash + 1) };
    }
    if (full.startsWith(this.tables) && full.length > this.tables.length)
      return { kind: 'table', table: full.slice(this.tables.length) };
    if (full === this.clock) return { kind: 'clock' };
    return undefined;
  }
}

function checkTable(table: string): string {
  // The table is the path segment before the row key, so it cannot hold the separator.
  if (table.includes('/'))
    throw agentError('STATE_INVALID_OP', { detail: `table name ${JSON.stringify(table)} contains "/"` });
  return table;
}
