// Config entries as stored: one row per (kind, name) of the config-entries table, holding the
// entry normalized (every field of Consul's struct, zero values included). service-intentions
// entries are not rows of it: they are their destination's rows of the intentions table
// (intentions-view.ts; docs/decisions.md#config-entries).
import { z } from 'zod';
import { agentError } from '../core/errors.js';
import { serviceResolver, serviceRouter, serviceSplitter } from './chain.js';
import { decodeStruct, goJson, type GoStruct } from './decode.js';
import { proxyDefaults, serviceDefaults } from './defaults.js';
import { serviceIntentions } from './intentions-entry.js';
import { RAFT_FIELDS, type KindSpec } from './kind.js';

export const CONFIG_ENTRIES_TABLE = 'config-entries';

export interface StoredConfigEntry {
  readonly Kind: string;
  readonly Name: string;
  /** The entry as Normalize left it, Kind and Name included. */
  readonly Entry: Readonly<Record<string, unknown>>;
}

/** A row of the config-entries table, checked wherever the store is shared (src/state/etcd/row-check.ts). */
export const storedConfigEntrySchema = z.object({
  Kind: z.string(),
  Name: z.string(),
  Entry: z.record(z.string(), z.unknown()),
}) satisfies z.ZodType<StoredConfigEntry>;

/** The kinds served, by name (Consul's MakeConfigEntry, for the kinds svc-agent has). */
export const KINDS: ReadonlyMap<string, KindSpec> = new Map(
  [serviceDefaults, proxyDefaults, serviceResolver, serviceSplitter, serviceRouter, serviceIntentions].map((spec) => [
    spec.kind,
    spec,
  ]),
);

/** The kind's spec, or Consul's refusal of an unknown kind. */
export function kindSpec(kind: string): KindSpec {
  const spec = KINDS.get(kind);
  if (spec === undefined) throw agentError('CONFIG_ENTRY_KIND', { kind });
  return spec;
}

/** The row key: a kind's entries share a prefix; the name percent-encoded so none holds the separator. */
export function entryKey(kind: string, name: string): string {
  return `${kindPrefix(kind)}${encodeURIComponent(name)}`;
}

export function kindPrefix(kind: string): string {
  return `${kind}/`;
}

/**
 * structs.DecodeConfigEntry: the kind from `Kind` (or `kind`), then the body decoded into its
 * struct; its errors in mapstructure's words, then any key no field took.
 */
export function decodeConfigEntry(raw: Readonly<Record<string, unknown>>): { spec: KindSpec; entry: GoStruct } {
  const kindValue = Object.hasOwn(raw, 'Kind') ? raw.Kind : raw.kind;
  if (kindValue === undefined)
    throw agentError('CONFIG_ENTRY_DECODE', { detail: 'Payload does not contain a kind/Kind key at the top level' });
  if (typeof kindValue !== 'string')
    throw agentError('CONFIG_ENTRY_DECODE', { detail: 'Kind value in payload is not a string' });
  const spec = KINDS.get(kindValue);
  if (spec === undefined)
    throw agentError('CONFIG_ENTRY_DECODE', { detail: `invalid config entry kind: ${kindValue}` });
  const decoded = decodeStruct(raw, [...spec.fields, ...RAFT_FIELDS], ['kind']);
  if (decoded.errors.length > 0) {
    const points = [...decoded.errors].sort().map((e) => `* ${e}`);
    throw agentError('CONFIG_ENTRY_DECODE', {
      detail: `${decoded.errors.length} error(s) decoding:\n\n${points.join('\n')}`,
    });
  }
  const unused = decoded.unused.map((k) =>
    k.toLowerCase().endsWith('namespace')
      ? `invalid config key ${JSON.stringify(k)}, namespaces are a consul enterprise feature`
      : `invalid config key ${JSON.stringify(k)}`,
  );
  if (unused.length > 0) {
    const head = unused.length === 1 ? '1 error occurred:' : `${unused.length} errors occurred:`;
    throw agentError('CONFIG_ENTRY_DECODE', {
      detail: `${head}\n\t${unused.map((u) => `* ${u}`).join('\n\t')}\n\n`,
    });
  }
  return { spec, entry: decoded.value };
}

/** Normalize then Validate, as Consul's ConfigEntry.Apply runs them; Consul's text on the first failure. */
export function normalizeAndValidate(spec: KindSpec, entry: GoStruct): void {
  const problem = spec.normalize(entry) ?? spec.validate(entry);
  if (problem !== undefined) throw agentError('CONFIG_ENTRY_INVALID', { problems: problem });
}

/** The entry as the API shows it: Go's JSON of the struct, then its raft indexes. */
export function entryJson(
  spec: KindSpec,
  entry: Readonly<GoStruct>,
  createIndex: number,
  modifyIndex: number,
): Record<string, unknown> {
  return { ...goJson(entry, spec.fields), CreateIndex: createIndex, ModifyIndex: modifyIndex };
}
