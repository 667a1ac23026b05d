// A destination's intentions read as its service-intentions entry (Consul's bridge, the other way
// round: there the entry is stored and the intentions derived from it). Each row is a source, in
// entry order: by precedence, then as written (Order), then by key for rows older than Order. The
// entry's Meta is its sources' (a write through /v1/config gives each source the entry's Meta, as
// Consul's ToIntention does); CreateIndex is its oldest row's, ModifyIndex the last change under
// its prefix (a removed source included). docs/decisions.md#config-entries.
import type { StoredIntention } from '../connect/intentions/model.js';
import type { Row } from '../state/types.js';
import type { GoStruct } from './decode.js';
import { SERVICE_INTENTIONS } from './kind.js';

/** The rows in entry order. */
export function entryOrder(rows: readonly Row<StoredIntention>[]): Row<StoredIntention>[] {
  return [...rows].sort((a, b) => {
    const x = a.value;
    const y = b.value;
    if (x.Precedence !== y.Precedence) return y.Precedence - x.Precedence;
    const ox = x.Order ?? Number.MAX_SAFE_INTEGER;
    const oy = y.Order ?? Number.MAX_SAFE_INTEGER;
    if (ox !== oy) return ox - oy;
    return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
  });
}

/** The entry the rows make, in the shape of the kind's decoded struct; undefined without rows. */
export function intentionsEntry(
  namespace: string,
  name: string,
  rows: readonly Row<StoredIntention>[],
): { entry: GoStruct; createIndex: number } | undefined {
  if (rows.length === 0) return undefined;
  const ordered = entryOrder(rows);
  const sources = ordered.map((row) => sourceOf(row.value));
  const firstConfig = ordered.find((row) => row.value.ID === undefined)?.value;
  const entry: GoStruct = {
    Kind: SERVICE_INTENTIONS,
    Name: name,
    Sources: sources,
    Namespace: namespace,
  };
  if (firstConfig?.Meta !== undefined) entry.Meta = firstConfig.Meta;
  return { entry, createIndex: Math.min(...rows.map((r) => r.createIndex)) };
}

/** One row as a source; a legacy one (written through the ID API) with its legacy fields. */
function sourceOf(x: StoredIntention): GoStruct {
  const legacy = x.ID !== undefined;
  return {
    Name: x.SourceName,
    Action: x.Action ?? '',
    Permissions: x.Permissions ?? [],
    Precedence: x.Precedence,
    LegacyID: x.ID ?? '',
    Type: x.SourceType,
    Description: x.Description,
    ...(legacy ? { LegacyMeta: x.Meta ?? {} } : {}),
    LegacyCreateTime: x.CreatedAt ?? '',
    LegacyUpdateTime: x.UpdatedAt ?? '',
    Namespace: x.SourceNS,
    Peer: '',
    SamenessGroup: '',
  };
}

/** Every destination with intentions, as (namespace, name), sorted by name then namespace. */
export function destinations(rows: readonly Row<StoredIntention>[]): { namespace: string; name: string }[] {
  const seen = new Map<string, { namespace: string; name: string }>();
  for (const row of rows) {
    const { DestinationNS: namespace, DestinationName: name } = row.value;
    seen.set(`${namespace}\u0000${name}`, { namespace, name });
  }
  return [...seen.values()].sort((a, b) =>
    a.name !== b.name ? (a.name < b.name ? -1 : 1) : a.namespace < b.namespace ? -1 : a.namespace > b.namespace ? 1 : 0,
  );
}
