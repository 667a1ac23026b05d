// The snapshot archive (docs/decisions.md#snapshots): one gzip stream of UTF-8 lines.
//   svc-agent snapshot              the magic line: anything else is not ours
//   {"Version":1,"ID":…,…}          the metadata: format version, datacenter, backend, index, counts
//   ["<table>","<key>",<value>]     one line per row, sorted by table then key
//   {"Private":"<path>","Value":…}  one line per private entry (a cluster's CA keys, token secrets)
//   {"SHA256":"<hex>"}              the SHA-256 of every byte before this line
// A reader refuses anything whose magic, version, checksum or counts do not hold, before it is used.
import { createHash } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { z } from 'zod';
import { agentError } from '../core/errors.js';
import type { ImageRow, PrivateEntry, StoreImage } from '../state/types.js';

export const ARCHIVE_VERSION = 1;
const MAGIC = 'svc-agent snapshot\n';
/** Bounds what a damaged or hostile archive can make the reader hold (about 20 M rows of 50 bytes). */
const MAX_UNCOMPRESSED_BYTES = 1024 * 1024 * 1024;

export type ArchiveBackend = 'embedded' | 'etcd';

/** What the metadata line says. */
export interface ArchiveMeta {
  readonly Version: number;
  /** `<index>-<unix ms>`, as Consul's `<term>-<index>-<unix ms>` without a term. */
  readonly ID: string;
  readonly Datacenter: string;
  readonly Backend: ArchiveBackend;
  /** The index the image was taken at: the embedded store's index, or etcd's revision. */
  readonly Index: number;
  /** When it was taken (RFC 3339). */
  readonly Created: string;
  readonly AgentVersion: string;
  /** Rows per table. */
  readonly Tables: Readonly<Record<string, number>>;
  /** Private entries (0 for the embedded store). */
  readonly Private: number;
}

const metaSchema = z.object({
  Version: z.number().int(),
  ID: z.string(),
  Datacenter: z.string(),
  Backend: z.enum(['embedded', 'etcd']),
  Index: z.number().int().nonnegative(),
  Created: z.string(),
  AgentVersion: z.string(),
  Tables: z.record(z.string(), z.number().int().nonnegative()),
  Private: z.number().int().nonnegative(),
}) satisfies z.ZodType<ArchiveMeta>;

const privateLineSchema = z.object({ Private: z.string(), Value: z.unknown() });
const trailerSchema = z.object({ SHA256: z.string().regex(/^[0-9a-f]{64}$/) });

/** An archive read and checked: its metadata, its image, and its sizes for `inspect`. */
export interface Archive {
  readonly meta: ArchiveMeta;
  readonly image: StoreImage;
  /** Bytes of the archive as given (compressed). */
  readonly size: number;
  /** Bytes of each table's lines, uncompressed. */
  readonly tableBytes: ReadonlyMap<string, number>;
}

export interface ArchiveSource {
  readonly id: string;
  readonly datacenter: string;
  readonly backend: ArchiveBackend;
  readonly created: Date;
  readonly agentVersion: string;
}

export function encodeArchive(source: ArchiveSource, image: StoreImage): Buffer {
  const tables: Record<string, number> = {};
  for (const row of image.rows) tables[row.table] = (tables[row.table] ?? 0) + 1;
  const meta: ArchiveMeta = {
    Version: ARCHIVE_VERSION,
    ID: source.id,
    Datacenter: source.datacenter,
    Backend: source.backend,
    Index: image.index,
    Created: source.created.toISOString(),
    AgentVersion: source.agentVersion,
    Tables: tables,
    Private: image.privateEntries.length,
  };
  const lines = [MAGIC, JSON.stringify(meta), '\n'];
  for (const row of image.rows) lines.push(JSON.stringify([row.table, row.key, row.value]), '\n');
  for (const entry of image.privateEntries)
    lines.push(JSON.stringify({ Private: entry.path, Value: entry.value }), '\n');
  const body = Buffer.from(lines.join(''), 'utf8');
  const sum = createHash('sha256').update(body).digest('hex');
  return gzipSync(Buffer.concat([body, Buffer.from(`${JSON.stringify({ SHA256: sum })}\n`, 'utf8')]));
}

/** Reads and checks an archive: SNAPSHOT_DECOMPRESS, SNAPSHOT_FOREIGN, SNAPSHOT_VERSION or SNAPSHOT_UNREADABLE. */
export function decodeArchive(bytes: Buffer): Archive {
  let plain: Buffer;
  try {
    plain = gunzipSync(bytes, { maxOutputLength: MAX_UNCOMPRESSED_BYTES });
  } catch (err) {
    throw agentError('SNAPSHOT_DECOMPRESS', { detail: err instanceof Error ? err.message : String(err) });
  }
  if (!plain.subarray(0, MAGIC.length).equals(Buffer.from(MAGIC))) throw agentError('SNAPSHOT_FOREIGN');
  const metaEnd = plain.indexOf(10, MAGIC.length);
  if (metaEnd < 0) throw unreadable('the archive is cut short');
  const looseMeta = parseLine(plain.subarray(MAGIC.length, metaEnd), 'metadata');
  const version = (looseMeta as { Version?: unknown } | null)?.Version;
  if (version !== ARCHIVE_VERSION) {
    throw agentError('SNAPSHOT_VERSION', { version: JSON.stringify(version ?? null), supported: ARCHIVE_VERSION });
  }
  const bodyEnd = checkTrailer(plain);
  const metaRead = metaSchema.safeParse(looseMeta);
  if (!metaRead.success) throw unreadable(`bad metadata: ${metaRead.error.issues[0]?.message ?? 'invalid'}`);
  const meta = metaRead.data;

  const rows: ImageRow[] = [];
  const privateEntries: PrivateEntry[] = [];
  const tableBytes = new Map<string, number>();
  const counts = new Map<string, number>();
  let at = metaEnd + 1;
  while (at < bodyEnd) {
    const end = plain.indexOf(10, at);
    const line = plain.subarray(at, end);
    const value = parseLine(line, 'a row');
    if (Array.isArray(value)) {
      const [table, key, row] = value as unknown[];
      if (value.length !== 3 || typeof table !== 'string' || typeof key !== 'string' || table === '')
        throw unreadable('a row line is not [table, key, value]');
      rows.push({ table, key, value: row });
      counts.set(table, (counts.get(table) ?? 0) + 1);
      tableBytes.set(table, (tableBytes.get(table) ?? 0) + line.length + 1);
    } else {
      const entry = privateLineSchema.safeParse(value);
      if (!entry.success) throw unreadable('a line is neither a row nor a private entry');
      privateEntries.push({ path: entry.data.Private, value: entry.data.Value });
    }
    at = end + 1;
  }
  for (const [table, count] of Object.entries(meta.Tables)) {
    if ((counts.get(table) ?? 0) !== count)
      throw unreadable(`table ${table} holds ${counts.get(table) ?? 0} rows, its metadata says ${count}`);
  }
  for (const table of counts.keys())
    if (!Object.hasOwn(meta.Tables, table)) throw unreadable(`table ${table} is not in the metadata`);
  if (privateEntries.length !== meta.Private)
    throw unreadable(`${privateEntries.length} private entries, the metadata says ${meta.Private}`);
  return { meta, image: { index: meta.Index, rows, privateEntries }, size: bytes.length, tableBytes };
}

/** The offset where the trailer line starts, once the SHA-256 it carries matches every byte before it. */
function checkTrailer(plain: Buffer): number {
  if (plain[plain.length - 1] !== 10) throw unreadable('the archive is cut short');
  const start = plain.lastIndexOf(10, plain.length - 2) + 1;
  const trailer = trailerSchema.safeParse(safeJson(plain.subarray(start, plain.length - 1)));
  if (!trailer.success) throw unreadable('the archive is cut short: no checksum at its end');
  const sum = createHash('sha256').update(plain.subarray(0, start)).digest('hex');
  if (sum !== trailer.data.SHA256) throw unreadable('hash check failed: the SHA-256 of the contents does not match');
  return start;
}

function parseLine(line: Buffer, what: string): unknown {
  const value = safeJson(line);
  if (value === undefined) throw unreadable(`${what} is not JSON`);
  return value;
}

function safeJson(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

function unreadable(detail: string) {
  return agentError('SNAPSHOT_UNREADABLE', { detail });
}
