// Startup recovery of the state directory: load the snapshot, replay the WAL segments after it,
// cut a torn tail off the last segment (logged), and refuse to start on damage anywhere else.
import { readFile, truncate, unlink, open } from 'node:fs/promises';
import { join } from 'node:path';
import { agentError, type AgentError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import type { MemoryTables } from './memory-tables.js';
import { decodeRecords } from './record-codec.js';
import { readSnapshot } from './snapshot-file.js';
import type { SegmentFile } from './state-files.js';
import { SNAPSHOT_TEMP_FILE, fsyncDir, listSegments } from './state-files.js';
import { asCommitRecord, commitRecordFollows } from './wal-record.js';

export interface RecoveryStats {
  /** Index of the snapshot loaded; 0 without one. */
  readonly snapshotIndex: number;
  /** WAL records applied after the snapshot. */
  readonly replayedRecords: number;
  /** Bytes cut off a torn tail of the last segment. */
  readonly truncatedBytes: number;
}

export interface Recovered extends RecoveryStats {
  /** Highest index recovered (the snapshot's or the last replayed record's). */
  readonly lastIndex: number;
  /** Segments still needed, oldest first; the last is the one to append to. */
  readonly segments: SegmentFile[];
  /** Valid bytes of the last segment (0 without segments). */
  readonly activeBytes: number;
}

/** Rebuilds `tables` from `dir`. */
export async function recoverState(dir: string, tables: MemoryTables, log: Logger): Promise<Recovered> {
  // A temp snapshot is one whose writer died before the rename: never trusted.
  await unlink(join(dir, SNAPSHOT_TEMP_FILE)).catch(() => undefined);

  const image = await readSnapshot(dir);
  if (image !== undefined) tables.load(image);
  const snapshotIndex = image?.index ?? 0;

  const all = await listSegments(dir);
  // A segment whose successor starts at or below snapshotIndex + 1 holds nothing newer than the
  // snapshot: left over from a compaction killed before it deleted it.
  const obsolete = all.filter((seg, i) => {
    const next = all[i + 1];
    return next !== undefined && next.firstIndex - 1 <= snapshotIndex;
  });
  const segments = all.slice(obsolete.length);
  for (const seg of obsolete) await unlink(seg.path);
  if (obsolete.length > 0) await fsyncDir(dir);

  const first = segments[0];
  if (first !== undefined && first.firstIndex > snapshotIndex + 1) {
    throw walError('STATE_WAL_GAP', `WAL starts at index ${first.firstIndex} but the snapshot ends at ${snapshotIndex}; records are missing`);
  }

  let expected = first?.firstIndex ?? snapshotIndex + 1;
  let replayedRecords = 0;
  let truncatedBytes = 0;
  let activeBytes = 0;
  for (let s = 0; s < segments.length; s++) {
    const seg = segments[s] as SegmentFile;
    const isLast = s === segments.length - 1;
    if (seg.firstIndex !== expected) {
      throw walError('STATE_WAL_GAP', `segment ${seg.path} starts at index ${seg.firstIndex}, expected ${expected}`);
    }
    const buf = await readFile(seg.path);
    const decoded = decodeRecords(buf);
    if (decoded.fault !== undefined) {
      const { offset, reason } = decoded.fault;
      if (!isLast || commitRecordFollows(buf, offset)) {
        throw walError('STATE_WAL_CORRUPT', `segment ${seg.path} is damaged at byte ${offset} (${reason}) with acknowledged records after it`);
      }
      const dropped = buf.length - offset;
      await truncateDurably(seg.path, offset);
      truncatedBytes += dropped;
      log.warn({ segment: seg.path, offset, droppedBytes: dropped, reason }, 'truncated a torn record at the end of the WAL');
    }
    for (const { offset, value } of decoded.records) {
      const rec = asCommitRecord(value);
      if (rec === undefined || rec.i !== expected) {
        throw walError('STATE_WAL_CORRUPT', `segment ${seg.path} holds an unexpected record at byte ${offset} (want index ${expected})`);
      }
      expected++;
      if (rec.i <= snapshotIndex) continue;
      tables.apply(rec.i, rec.ops, rec.t);
      replayedRecords++;
    }
    if (isLast) activeBytes = decoded.validBytes;
  }
  if (segments.length > 0 && expected - 1 < snapshotIndex) {
    // Every remaining record is older than the snapshot (its later segments are gone): appending
    // index snapshotIndex + 1 here would break continuity, so the log restarts after the snapshot.
    for (const seg of segments) await unlink(seg.path);
    await fsyncDir(dir);
    return { snapshotIndex, replayedRecords, truncatedBytes, lastIndex: snapshotIndex, segments: [], activeBytes: 0 };
  }
  return { snapshotIndex, replayedRecords, truncatedBytes, lastIndex: Math.max(snapshotIndex, expected - 1), segments, activeBytes };
}

async function truncateDurably(path: string, length: number): Promise<void> {
  await truncate(path, length);
  const handle = await open(path, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function walError(code: 'STATE_WAL_GAP' | 'STATE_WAL_CORRUPT', detail: string): AgentError {
  return agentError(code, { detail });
}
