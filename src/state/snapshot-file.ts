// The snapshot file: the whole view (rows, tombstones, reap floors, table indexes) as of one index,
// in framed records closed by an end record that carries the record count and a CRC of the file.
// Written to a temp file, fsynced, renamed into place, and the directory fsynced.
import { open, readFile, rename, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { agentError, type AgentError } from '../core/errors.js';
import type { Row } from './types.js';
import type { TableImage, Tombstone, ViewImage } from './memory-tables.js';
import { decodeRecords, encodeRecord } from './record-codec.js';
import { SNAPSHOT_FILE, SNAPSHOT_TEMP_FILE, fsyncDir } from './state-files.js';
import { PRIVATE_FILE_MODE } from '../core/private-files.js';

const FORMAT_VERSION = 1;
/** Rows per record are cut at about this many JSON characters, keeping each stringify short. */
const RECORD_TARGET_CHARS = 256 * 1024;
/** Buffered bytes per write(); each write is an await, so other work runs in between. */
const WRITE_CHUNK_BYTES = 1024 * 1024;

type SnapshotRecord =
  | { kind: 'snapshot'; version: number; index: number }
  | { kind: 'table'; name: string; index: number; reapedFloor: number }
  | { kind: 'rows'; table: string; rows: [key: string, value: unknown, createIndex: number, modifyIndex: number][] }
  | { kind: 'tombstones'; table: string; tombstones: [key: string, index: number, deletedAt: number][] }
  | { kind: 'end'; records: number; crc: number };

/** Writes `image` durably as the directory's snapshot; returns the file size. */
export async function writeSnapshot(dir: string, image: ViewImage): Promise<number> {
  const tempPath = join(dir, SNAPSHOT_TEMP_FILE);
  const out = new SnapshotWriter(await open(tempPath, 'w', PRIVATE_FILE_MODE));
  try {
    await out.record({ kind: 'snapshot', version: FORMAT_VERSION, index: image.index });
    for (const table of image.tables) {
      await out.record({ kind: 'table', name: table.name, index: table.index, reapedFloor: table.reapedFloor });
      await writeChunked(out, table.name, 'rows', table.rows, (r) =>
        JSON.stringify([r.key, r.value, r.createIndex, r.modifyIndex]),
      );
      await writeChunked(out, table.name, 'tombstones', table.tombstones, (t) =>
        JSON.stringify([t.key, t.index, t.deletedAt]),
      );
    }
    const size = await out.finish();
    await rename(tempPath, join(dir, SNAPSHOT_FILE));
    await fsyncDir(dir);
    return size;
  } catch (err) {
    await out.abandon();
    await unlink(tempPath).catch(() => undefined);
    throw err;
  }
}

async function writeChunked<T>(
  out: SnapshotWriter,
  table: string,
  kind: 'rows' | 'tombstones',
  items: readonly T[],
  encode: (item: T) => string,
): Promise<void> {
  let parts: string[] = [];
  let chars = 0;
  const emit = async (): Promise<void> => {
    // Assembled by hand so each item is stringified once.
    await out.raw(`{"kind":"${kind}","table":${JSON.stringify(table)},"${kind}":[${parts.join(',')}]}`);
    parts = [];
    chars = 0;
  };
  for (const item of items) {
    const json = encode(item);
    parts.push(json);
    chars += json.length;
    if (chars >= RECORD_TARGET_CHARS) await emit();
  }
  if (parts.length > 0) await emit();
}

class SnapshotWriter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private position = 0;
  private records = 0;
  private crc = 0;

  constructor(private readonly handle: FileHandle) {}

  record(value: SnapshotRecord): Promise<void> {
    return this.raw(JSON.stringify(value));
  }

  async raw(json: string): Promise<void> {
    const buf = encodeRecord(json);
    this.crc = crc32(buf, this.crc);
    this.records++;
    this.pending.push(buf);
    this.pendingBytes += buf.length;
    if (this.pendingBytes >= WRITE_CHUNK_BYTES) await this.flush();
  }

  /** Appends the end record, fsyncs and closes; returns the file size. */
  async finish(): Promise<number> {
    const end: SnapshotRecord = { kind: 'end', records: this.records, crc: this.crc };
    this.pending.push(encodeRecord(JSON.stringify(end)));
    await this.flush();
    await this.handle.sync();
    await this.handle.close();
    return this.position;
  }

  async abandon(): Promise<void> {
    await this.handle.close().catch(() => undefined);
  }

  private async flush(): Promise<void> {
    const buf = Buffer.concat(this.pending);
    this.pending = [];
    this.pendingBytes = 0;
    let done = 0;
    while (done < buf.length) {
      const { bytesWritten } = await this.handle.write(buf, done, buf.length - done, this.position + done);
      done += bytesWritten;
    }
    this.position += buf.length;
  }
}

/** Reads the directory's snapshot; undefined if there is none; AgentError if it is damaged. */
export async function readSnapshot(dir: string): Promise<ViewImage | undefined> {
  const path = join(dir, SNAPSHOT_FILE);
  let buf: Buffer;
  try {
    buf = await readFile(path);
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ENOENT') return undefined;
    throw err;
  }
  const corrupt = (why: string): AgentError => agentError('STATE_SNAPSHOT_CORRUPT', { path, why });

  const decoded = decodeRecords(buf);
  if (decoded.fault !== undefined) throw corrupt(`${decoded.fault.reason} at byte ${decoded.fault.offset}`);
  const records = decoded.records;
  const last = records[records.length - 1];
  const end = last?.value as SnapshotRecord | undefined;
  if (last === undefined || end?.kind !== 'end') throw corrupt('no end record');
  if (end.records !== records.length - 1 || end.crc !== crc32(buf.subarray(0, last.offset)))
    throw corrupt('end record does not match the content');
  const header = records[0]?.value as SnapshotRecord | undefined;
  if (header?.kind !== 'snapshot' || header.version !== FORMAT_VERSION) throw corrupt('unknown header or version');

  const tables: (TableImage & { rows: Row[]; tombstones: Tombstone[] })[] = [];
  const byName = new Map<string, (typeof tables)[number]>();
  for (let i = 1; i < records.length - 1; i++) {
    const rec = (records[i] as { value: unknown }).value as SnapshotRecord;
    if (rec.kind === 'table') {
      const table = { name: rec.name, index: rec.index, reapedFloor: rec.reapedFloor, rows: [], tombstones: [] };
      tables.push(table);
      byName.set(rec.name, table);
    } else if (rec.kind === 'rows' || rec.kind === 'tombstones') {
      const table = byName.get(rec.table);
      if (table === undefined) throw corrupt(`${rec.kind} before their table ${rec.table}`);
      if (rec.kind === 'rows') {
        for (const [key, value, createIndex, modifyIndex] of rec.rows)
          table.rows.push({ key, value, createIndex, modifyIndex });
      } else {
        for (const [key, index, deletedAt] of rec.tombstones) table.tombstones.push({ key, index, deletedAt });
      }
    } else {
      throw corrupt(`unexpected ${String((rec as { kind?: unknown }).kind)} record`);
    }
  }
  return { index: header.index, tables };
}
