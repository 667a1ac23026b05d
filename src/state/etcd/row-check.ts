// Rows read from etcd are checked against their table's schema before anything uses them, and rows
// written are checked the same way (docs/cluster-security.md#bad-rows): any agent with etcd
// credentials can write any value, and one bad value must cost only its own row. A bad row is left
// out, with one warning naming its key per bad revision (not per read) and one count.
import { Counter } from '../../core/metrics.js';
import type { Logger } from '../../core/log.js';
import type { TableSchema, TableSchemas } from '../types.js';

export type RowCheck =
  { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly problem: string };

/** Why `value` is not a row of its table under `key`; undefined when it is one, or the table has no schema. */
export function rowProblem(schema: TableSchema | undefined, key: string, value: unknown): string | undefined {
  if (schema === undefined) return undefined;
  const zod = 'byKey' in schema ? (Object.hasOwn(schema.byKey, key) ? schema.byKey[key] : undefined) : schema;
  if (zod === undefined) return `no row of this table has the key ${JSON.stringify(key)}`;
  let checked;
  try {
    checked = zod.safeParse(value);
  } catch (err) {
    // A schema's own check that throws must cost this row, not the view.
    return `unreadable: ${err instanceof Error ? err.message : String(err)}`;
  }
  if (checked.success) return undefined;
  const issue = checked.error.issues[0];
  const path = issue === undefined || issue.path.length === 0 ? '' : `${issue.path.join('.')}: `;
  return `${path}${issue?.message ?? 'invalid'}`;
}

/** A stored value (UTF-8 JSON) decoded and checked against its table's schema. */
export function decodeRow(schemas: TableSchemas, table: string, key: string, stored: Buffer): RowCheck {
  let value: unknown;
  try {
    value = JSON.parse(stored.toString('utf8'));
  } catch {
    return { ok: false, problem: 'not JSON' };
  }
  const problem = rowProblem(schemas.get(table), key, value);
  return problem === undefined ? { ok: true, value } : { ok: false, problem };
}

/**
 * decodeRow for a stream of rows (the view's watch events), with one shortcut: a value that is a
 * JSON scalar and whose bytes equal the last scalar its table took is that value again, neither
 * parsed nor checked (the same bytes under the same schema pass again; a table checked by key is
 * left out). The catalog's index and by-name rows are all `true`: 3 of the 5 rows of a service's
 * registration, 2 of the 3 of a check's flip. Objects are always parsed and checked, so no two rows
 * share one. Guarded by bench/micro/view-events.ts.
 */
export class RowDecoder {
  private readonly lastScalar = new Map<string, { readonly bytes: Buffer; readonly result: RowCheck }>();

  constructor(private readonly schemas: TableSchemas) {}

  decode(table: string, key: string, stored: Buffer): RowCheck {
    const last = this.lastScalar.get(table);
    if (last !== undefined && last.bytes.equals(stored)) return last.result;
    const checked = decodeRow(this.schemas, table, key, stored);
    if (checked.ok && (checked.value === null || typeof checked.value !== 'object')) {
      const schema = this.schemas.get(table);
      // A copy: the stored bytes may be a view of a whole gRPC message.
      if (schema === undefined || !('byKey' in schema))
        this.lastScalar.set(table, { bytes: Buffer.from(stored), result: checked });
    }
    return checked;
  }
}

/** Bad keys remembered at most: beyond it the oldest is forgotten (and would be told again). */
const MAX_REMEMBERED = 10_000;

/** Tells of bad rows: one warning and one count per bad revision of a key, however often it is read. */
export class BadRows {
  private readonly reported = new Map<string, number>();

  constructor(
    private readonly log: Logger,
    /** The agent's `svc.state.bad_rows` counter (src/core/metrics.ts). */
    readonly counter: Counter = new Counter(),
  ) {}

  /** `key`: the full etcd key, so the warning names what an operator must fix. */
  report(key: string, revision: number, problem: string): void {
    if (this.reported.get(key) === revision) return;
    this.reported.delete(key);
    if (this.reported.size >= MAX_REMEMBERED) {
      const oldest = this.reported.keys().next();
      if (oldest.done !== true) this.reported.delete(oldest.value);
    }
    this.reported.set(key, revision);
    this.counter.inc();
    this.log.warn({ key, revision, problem }, 'value in etcd is not a valid row of its table; left out');
  }

  get count(): number {
    return this.counter.count;
  }
}
