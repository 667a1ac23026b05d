// Startup recovery of the state directory: load the snapshot, replay the WAL segments after it,
// cut a torn tail off the last segment (logged), and refuse to start on damage anywhere else or on
// acknowledged writes that are gone: a missing segment, or a log that ends before the durable mark
// (docs/decisions.md D17). Nothing is deleted or cut until the whole directory has been judged.
import { readFile, truncate, unlink, open } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { agentError, type AgentError } from '../../core/errors.js';
import type { Logger } from '../../core/log.js';
import type { MemoryTables } from '../memory-tables.js';
import type { RecoveryStats } from '../types.js';
import { readDurableMark, type MarkReading } from './durable-mark.js';
import { decodeRecords } from '../record-codec.js';
import { readSnapshot } from '../snapshot-file.js';
import type { SegmentFile } from '../state-files.js';
import {
  DURABLE_MARK_FILE,
  SNAPSHOT_FILE,
  SNAPSHOT_TEMP_FILE,
  fsyncDir,
  listSegments,
  segmentPath,
} from '../state-files.js';
import { asCommitRecord, commitRecordFollows } from './wal-record.js';

export interface Recovered extends RecoveryStats {
  /** Highest index recovered (the snapshot's or the last replayed record's). */
  readonly lastIndex: number;
  /** Segments still needed, oldest first; the last is the one to append to. */
  readonly segments: SegmentFile[];
  /** Valid bytes of the last segment (0 without segments). */
  readonly activeBytes: number;
}

export interface RecoveryOptions {
  /** Start from what is left when acknowledged writes are gone (the operator's -accept-state-loss). */
  readonly acceptLoss?: boolean | undefined;
}

interface TornTail {
  readonly path: string;
  readonly offset: number;
  readonly dropped: number;
  readonly reason: string;
}

/** Rebuilds `tables` from `dir`. */
export async function recoverState(
  dir: string,
  tables: MemoryTables,
  log: Logger,
  options: RecoveryOptions = {},
): Promise<Recovered> {
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
  let segments = all.slice(obsolete.length);

  const first = segments[0];
  if (first !== undefined && first.firstIndex > snapshotIndex + 1) {
    throw walError(
      'STATE_WAL_GAP',
      `WAL starts at index ${first.firstIndex} but the snapshot ends at ${snapshotIndex}; records are missing`,
    );
  }

  let expected = first?.firstIndex ?? snapshotIndex + 1;
  let replayedRecords = 0;
  let activeBytes = 0;
  let torn: TornTail | undefined;
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
        throw walError(
          'STATE_WAL_CORRUPT',
          `segment ${seg.path} is damaged at byte ${offset} (${reason}) with acknowledged records after it`,
        );
      }
      torn = { path: seg.path, offset, dropped: buf.length - offset, reason };
    }
    for (const { offset, value } of decoded.records) {
      const rec = asCommitRecord(value);
      if (rec === undefined || rec.i !== expected) {
        throw walError(
          'STATE_WAL_CORRUPT',
          `segment ${seg.path} holds an unexpected record at byte ${offset} (want index ${expected})`,
        );
      }
      expected++;
      if (rec.i <= snapshotIndex) continue;
      tables.apply(rec.i, rec.ops, rec.t);
      replayedRecords++;
    }
    if (isLast) activeBytes = decoded.validBytes;
  }
  const lastIndex = Math.max(snapshotIndex, expected - 1);

  const mark = await readDurableMark(dir);
  if (mark.kind === 'damaged')
    log.warn(
      { file: join(dir, DURABLE_MARK_FILE) },
      'the durable mark is damaged; recovery cannot check for a cut WAL this time',
    );
  const losses = findLosses(dir, mark, { snapshotIndex, lastIndex, segments, torn });
  if (losses.length > 0) {
    const detail = losses.join('; ');
    if (options.acceptLoss !== true) throw agentError('STATE_LOSS_DETECTED', { detail, index: lastIndex });
    log.warn({ dir, continueFrom: lastIndex }, `accepting lost state (-accept-state-loss): ${detail}`);
  }

  for (const seg of obsolete) await unlink(seg.path);
  if (obsolete.length > 0) await fsyncDir(dir);
  if (torn !== undefined) {
    await truncateDurably(torn.path, torn.offset);
    log.warn(
      { segment: torn.path, offset: torn.offset, droppedBytes: torn.dropped, reason: torn.reason },
      'truncated a torn record at the end of the WAL',
    );
  }
  const truncatedBytes = torn?.dropped ?? 0;
  if (segments.length > 0 && expected - 1 < snapshotIndex) {
    // Every remaining record is older than the snapshot (its later segments are gone, a loss
    // accepted above): the log restarts after the snapshot.
    for (const seg of segments) await unlink(seg.path);
    await fsyncDir(dir);
    segments = [];
    activeBytes = 0;
  }
  return { snapshotIndex, replayedRecords, truncatedBytes, lastIndex, segments, activeBytes };
}

interface Judged {
  readonly snapshotIndex: number;
  readonly lastIndex: number;
  readonly segments: readonly SegmentFile[];
  readonly torn: TornTail | undefined;
}

/** What acknowledged writes the directory no longer holds, each said with the files concerned. */
function findLosses(dir: string, mark: MarkReading, j: Judged): string[] {
  const losses: string[] = [];
  // Rotation makes the segment after a snapshot durable before the snapshot is written, so a
  // snapshot with neither that segment nor records after it means the segment was removed.
  const continues = j.lastIndex > j.snapshotIndex || j.segments.some((seg) => seg.firstIndex === j.snapshotIndex + 1);
  if (j.snapshotIndex > 0 && !continues) {
    losses.push(
      `${SNAPSHOT_FILE} ends at index ${j.snapshotIndex} but the segment that continues it, ${basename(segmentPath(dir, j.snapshotIndex + 1))}, is missing`,
    );
  }
  if (mark.kind === 'index' && mark.index > j.lastIndex) {
    const last = j.segments[j.segments.length - 1];
    const where =
      j.torn !== undefined
        ? `${basename(j.torn.path)} ends with a damaged record at byte ${j.torn.offset}`
        : last !== undefined
          ? `${basename(last.path)} ends`
          : 'the log ends';
    losses.push(
      `${where} at index ${j.lastIndex}, but ${DURABLE_MARK_FILE} records index ${mark.index} as acknowledged: indexes ${j.lastIndex + 1}-${mark.index} are lost`,
    );
  }
  return losses;
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
