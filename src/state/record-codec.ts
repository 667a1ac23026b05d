// Record framing shared by WAL segments and snapshot files: [u32 length][u32 crc32][payload], with
// little-endian header words and a UTF-8 JSON payload, so a torn or corrupt record is detectable.
import { crc32 } from 'node:zlib';

export const FRAME_HEADER_BYTES = 8;

/** Frames one JSON payload. */
export function encodeRecord(json: string): Buffer {
  const length = Buffer.byteLength(json);
  const buf = Buffer.allocUnsafe(FRAME_HEADER_BYTES + length);
  buf.write(json, FRAME_HEADER_BYTES, 'utf8');
  buf.writeUInt32LE(length, 0);
  buf.writeUInt32LE(crc32(buf.subarray(FRAME_HEADER_BYTES)), 4);
  return buf;
}

export interface DecodedRecord {
  /** Byte offset of the record's header in the buffer. */
  readonly offset: number;
  readonly value: unknown;
}

export interface DecodeResult {
  readonly records: DecodedRecord[];
  /** Bytes covered by the valid records (where a torn tail would be cut). */
  readonly validBytes: number;
  /** The first bad record, if any: everything from `offset` on was not decoded. */
  readonly fault?: { readonly offset: number; readonly reason: string };
}

/** Decodes records from the start of `buf` up to the end or the first bad record. */
export function decodeRecords(buf: Buffer): DecodeResult {
  const records: DecodedRecord[] = [];
  let offset = 0;
  while (offset < buf.length) {
    const one = decodeAt(buf, offset);
    if (typeof one === 'string') return { records, validBytes: offset, fault: { offset, reason: one } };
    records.push({ offset, value: one.value });
    offset = one.next;
  }
  return { records, validBytes: offset };
}

/** One record at `offset`, or the reason it is not a valid record. */
export function decodeAt(buf: Buffer, offset: number): { value: unknown; next: number } | string {
  if (buf.length - offset < FRAME_HEADER_BYTES) return 'short header';
  const length = buf.readUInt32LE(offset);
  const start = offset + FRAME_HEADER_BYTES;
  if (length > buf.length - start) return 'short payload';
  const payload = buf.subarray(start, start + length);
  if (crc32(payload) !== buf.readUInt32LE(offset + 4)) return 'checksum mismatch';
  try {
    return { value: JSON.parse(payload.toString('utf8')), next: start + length };
  } catch {
    return 'invalid JSON';
  }
}
