// Whether an archive's row is a row of its table, by the schema the agent registers for the table
// (src/agent/tables.ts): a restore refuses the whole archive for one row that is not.
import type { TableSchema } from '../state/types.js';

/** Why `value` is not a row of its table under `key`; undefined when it is one or the table has no schema. */
export function rowProblem(schema: TableSchema | undefined, key: string, value: unknown): string | undefined {
  if (schema === undefined) return undefined;
  const zod = 'byKey' in schema ? (Object.hasOwn(schema.byKey, key) ? schema.byKey[key] : undefined) : schema;
  if (zod === undefined) return `no row of this table has the key ${JSON.stringify(key)}`;
  const checked = zod.safeParse(value);
  if (checked.success) return undefined;
  const issue = checked.error.issues[0];
  const path = issue === undefined || issue.path.length === 0 ? '' : `${issue.path.join('.')}: `;
  return `${path}${issue?.message ?? 'invalid'}`;
}
