// Intentions as stored and as the API shows them (docs/decisions.md#intentions-api). One row per
// (destination, source) pair, keyed so that a destination's intentions share a key prefix. An
// intention written through the legacy ID API keeps its ID, timestamps and hash; one written
// through `/exact` has none of them, as in Consul's config-entry mode.
import { z } from 'zod';
import type { Row } from '../../state/types.js';

export const INTENTIONS_TABLE = 'intentions';

export type IntentionAction = 'allow' | 'deny';

export interface HeaderPermission {
  readonly Name: string;
  readonly Present?: boolean;
  readonly Exact?: string;
  readonly Prefix?: string;
  readonly Suffix?: string;
  readonly Regex?: string;
  readonly Invert?: boolean;
}

export interface HttpPermission {
  readonly PathExact?: string;
  readonly PathPrefix?: string;
  readonly PathRegex?: string;
  readonly Header?: readonly HeaderPermission[];
  readonly Methods?: readonly string[];
}

/** One L7 rule; an intention with any denies in authorize (docs/decisions.md#authorize-reasons). */
export interface IntentionPermission {
  readonly Action: string;
  readonly HTTP?: HttpPermission;
}

export interface StoredIntention {
  /** Legacy ID API only: the UUID, creation and update times (RFC 3339) and the replication hash. */
  readonly ID?: string;
  readonly CreatedAt?: string;
  readonly UpdatedAt?: string;
  readonly Hash?: string;
  readonly Description: string;
  readonly SourceNS: string;
  readonly SourceName: string;
  readonly DestinationNS: string;
  readonly DestinationName: string;
  readonly SourceType: 'consul';
  /** Absent when Permissions are set. */
  readonly Action?: IntentionAction;
  readonly Permissions?: readonly IntentionPermission[];
  readonly Meta?: Readonly<Record<string, string>>;
  readonly Precedence: number;
  /**
   * Where the source stands in its destination's service-intentions entry among those of equal
   * precedence (the order they were written in); absent on rows written before entries existed.
   */
  readonly Order?: number;
}

const headerPermissionSchema = z.object({
  Name: z.string(),
  Present: z.boolean().exactOptional(),
  Exact: z.string().exactOptional(),
  Prefix: z.string().exactOptional(),
  Suffix: z.string().exactOptional(),
  Regex: z.string().exactOptional(),
  Invert: z.boolean().exactOptional(),
});

const permissionSchema = z.object({
  Action: z.string(),
  HTTP: z
    .object({
      PathExact: z.string().exactOptional(),
      PathPrefix: z.string().exactOptional(),
      PathRegex: z.string().exactOptional(),
      Header: z.array(headerPermissionSchema).exactOptional(),
      Methods: z.array(z.string()).exactOptional(),
    })
    .exactOptional(),
});

/** A row of the intentions table, checked wherever the store is shared (src/state/etcd/row-check.ts). */
export const storedIntentionSchema = z.object({
  ID: z.string().exactOptional(),
  CreatedAt: z.string().exactOptional(),
  UpdatedAt: z.string().exactOptional(),
  Hash: z.string().exactOptional(),
  Description: z.string(),
  SourceNS: z.string(),
  SourceName: z.string(),
  DestinationNS: z.string(),
  DestinationName: z.string(),
  SourceType: z.literal('consul'),
  Action: z.enum(['allow', 'deny']).exactOptional(),
  Permissions: z.array(permissionSchema).exactOptional(),
  Meta: z.record(z.string(), z.string()).exactOptional(),
  Precedence: z.number(),
  Order: z.number().exactOptional(),
}) satisfies z.ZodType<StoredIntention>;

/**
 * The row key: destination first (so a destination's intentions are one prefix), each part
 * percent-encoded so no name can contain the separator.
 */
export function intentionKey(
  destinationNS: string,
  destinationName: string,
  sourceNS: string,
  sourceName: string,
): string {
  return `${destinationPrefix(destinationNS, destinationName)}${encodeURIComponent(sourceNS)}/${encodeURIComponent(sourceName)}`;
}

export function destinationPrefix(destinationNS: string, destinationName: string): string {
  return `${encodeURIComponent(destinationNS)}/${encodeURIComponent(destinationName)}/`;
}

/** The API shape, in Consul's key order; optional keys appear only when set, as Go's omitempty. */
export function intentionJson(row: Row<StoredIntention>): Record<string, unknown> {
  const x = row.value;
  const out: Record<string, unknown> = {};
  if (x.CreatedAt !== undefined) out.CreatedAt = x.CreatedAt;
  if (x.UpdatedAt !== undefined) out.UpdatedAt = x.UpdatedAt;
  if (x.ID !== undefined) out.ID = x.ID;
  if (x.Description !== '') out.Description = x.Description;
  out.SourceNS = x.SourceNS;
  out.SourceName = x.SourceName;
  out.DestinationNS = x.DestinationNS;
  out.DestinationName = x.DestinationName;
  out.SourceType = x.SourceType;
  if (x.Action !== undefined) out.Action = x.Action;
  if (x.Permissions !== undefined && x.Permissions.length > 0) out.Permissions = x.Permissions;
  if (x.Meta !== undefined && Object.keys(x.Meta).length > 0) out.Meta = sortedMeta(x.Meta);
  out.Precedence = x.Precedence;
  if (x.Hash !== undefined) out.Hash = x.Hash;
  out.CreateIndex = row.createIndex;
  out.ModifyIndex = row.modifyIndex;
  return out;
}

/** Go writes map keys sorted. */
function sortedMeta(meta: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of Object.keys(meta).sort()) out[key] = meta[key] as string;
  return out;
}

/**
 * Consul's intention string, used in authorize reasons and error texts:
 * `default/web => default/db (ID: …, Precedence: 9, Action: ALLOW)`; `ID:` only for legacy
 * intentions, `Permissions: <n>` instead of the action for L7 ones.
 */
export function intentionString(x: StoredIntention): string {
  const id = x.ID === undefined ? '' : `ID: ${x.ID}, `;
  const what =
    x.Permissions !== undefined && x.Permissions.length > 0
      ? `Permissions: ${x.Permissions.length}`
      : `Action: ${(x.Action ?? '').toUpperCase()}`;
  return `${x.SourceNS}/${x.SourceName} => ${x.DestinationNS}/${x.DestinationName} (${id}Precedence: ${x.Precedence}, ${what})`;
}

export function isL7(x: StoredIntention): boolean {
  return x.Permissions !== undefined && x.Permissions.length > 0;
}
