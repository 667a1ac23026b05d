// KV entries as stored and as Consul's API shows them (docs/decisions.md#kv-api): values kept
// base64 so the log and snapshots stay JSON; flags are uint64, exact beyond 2^53.
import { z } from 'zod';
import type { Row } from '../state/types.js';
import { Uint64 } from '../core/go-json.js';

export const KV_TABLE = 'kv';

/**
 * The most one KV listing (`?recurse`, `?keys`) may hold, keys and values as stored (values base64):
 * 20 MB of values is 27 MB stored and answered as about as much JSON, served with a fifth to spare.
 * The answer is built whole (the rows, their JSON, its bytes), so a listing at the limit holds about
 * 130 MB of heap while it is answered; larger is refused with STATE_LISTING_TOO_LARGE.
 */
export const KV_LISTING_MAX_BYTES = 32 * 1024 * 1024;

export interface StoredKv {
  /** Flags as a number when it is a safe integer, else its decimal digits. */
  readonly Flags: number | string;
  /** Base64 of the value; null for an empty value (as Go's nil byte slice). */
  readonly Value: string | null;
  /**
   * Set when the write also changed the key's lock row, in the same commit (sessions/locks.ts): a
   * read of the entry then waits for the view to hold that revision, so its lock half agrees.
   */
  readonly LockWrite?: true | undefined;
}

const UINT64_MAX = 2n ** 64n - 1n;

/** A KV row as stored (src/state/etcd/row-check.ts checks every value read from etcd against it). */
export const storedKvSchema = z.object({
  Flags: z.union([
    z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
    z
      .string()
      // One check: zod runs a refine even after a failed regex, and BigInt throws on non-digits.
      .refine((digits) => /^\d{1,20}$/.test(digits) && BigInt(digits) <= UINT64_MAX, 'expected uint64 decimal digits'),
  ]),
  // A string, not checked as base64: on a 512 KB value that check costs 5-12 ms per read against
  // JSON.parse's 0.7 ms, and a value that is not base64 harms only its own key's readers.
  Value: z.string().nullable(),
  LockWrite: z.literal(true).optional(),
}) satisfies z.ZodType<StoredKv>;

export interface KvEntryJson {
  LockIndex: number;
  Key: string;
  Flags: number | Uint64;
  Value: string | null;
  /** The session holding the key's lock; absent while none does (Go's omitempty). */
  Session?: string;
  CreateIndex: number;
  ModifyIndex: number;
}

/** The lock half of an entry: the key's lock row (sessions/model.ts StoredLock). */
export interface KvLockHalf {
  readonly LockIndex: number;
  readonly Session?: string | undefined;
}

/** An entry as Consul shows it, its lock's half from the key's lock row. */
export function toEntryJson(row: Row<StoredKv>, lock?: KvLockHalf): KvEntryJson {
  const flags = row.value.Flags;
  return {
    LockIndex: lock?.LockIndex ?? 0,
    Key: row.key,
    Flags: typeof flags === 'number' ? flags : new Uint64(flags),
    Value: row.value.Value,
    ...(lock?.Session === undefined ? {} : { Session: lock.Session }),
    CreateIndex: row.createIndex,
    ModifyIndex: row.modifyIndex,
  };
}

export function storedKv(flags: bigint, body: Buffer): StoredKv {
  return {
    Flags: flags <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(flags) : flags.toString(),
    Value: body.length > 0 ? body.toString('base64') : null,
  };
}

/** Key names under `prefix`, rolled up after the first `separator` past it (KVS.ListKeys). */
export function listKeys(rows: readonly Row<unknown>[], prefix: string, separator: string): string[] {
  if (separator === '') return rows.map((r) => r.key);
  const keys: string[] = [];
  let previous = '';
  for (const { key } of rows) {
    const at = key.indexOf(separator, prefix.length);
    if (at === -1) {
      keys.push(key);
      continue;
    }
    const folder = key.slice(0, at + separator.length);
    if (folder !== previous) {
      keys.push(folder);
      previous = folder;
    }
  }
  return keys;
}
