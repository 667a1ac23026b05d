// The WAL's record for one commit: `{"i":<index>,"t":<clock ms>,"ops":[...]}`, framed by the record
// codec. The clock time travels with the ops so that replay rebuilds tombstones of the same age.
import type { WriteOp } from '../types.js';
import { FRAME_HEADER_BYTES, decodeAt, encodeRecord } from '../record-codec.js';

export interface CommitRecord {
  readonly i: number;
  readonly t: number;
  readonly ops: readonly WriteOp[];
}

/** Every commit payload starts with these bytes; recovery searches for them past a bad record. */
const PAYLOAD_START = Buffer.from('{"i":');

/** Frames a commit; `opsJson` is the JSON of its (already validated) ops. */
export function encodeCommitRecord(index: number, time: number, opsJson: string): Buffer {
  return encodeRecord(`{"i":${index},"t":${time},"ops":${opsJson}}`);
}

export function asCommitRecord(value: unknown): CommitRecord | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const rec = value as Partial<CommitRecord>;
  return Number.isSafeInteger(rec.i) && typeof rec.t === 'number' && Array.isArray(rec.ops)
    ? (rec as CommitRecord)
    : undefined;
}

/**
 * Whether any valid commit record starts after the bad one at `offset`. A torn write only leaves
 * garbage at the very end, so a good record behind a bad one means damage in the middle, which
 * must not be cut. Searching for the payload's first bytes (rather than trusting the bad record's
 * length field) also catches a damaged length. Runs only on a fault, over the tail after it.
 */
export function commitRecordFollows(buf: Buffer, offset: number): boolean {
  for (let at = buf.indexOf(PAYLOAD_START, offset + 1); at !== -1; at = buf.indexOf(PAYLOAD_START, at + 1)) {
    const start = at - FRAME_HEADER_BYTES;
    if (start <= offset) continue;
    const one = decodeAt(buf, start);
    if (typeof one !== 'string' && asCommitRecord(one.value) !== undefined) return true;
  }
  return false;
}
