// Names and small file-system helpers for the state directory: WAL segments `wal-<firstIndex>.log`
// (zero-padded so `ls` order is index order), the snapshot, and directory fsync.
import { open, readdir } from 'node:fs/promises';
import { join } from 'node:path';

export const SNAPSHOT_FILE = 'snapshot.bin';
export const SNAPSHOT_TEMP_FILE = 'snapshot.tmp';
export const LOCK_FILE = 'LOCK';
export const DURABLE_MARK_FILE = 'durable-index';

const SEGMENT_NAME = /^wal-(\d{20})\.log$/;

export interface SegmentFile {
  readonly path: string;
  /** Index of the first record the segment holds (or will hold, while empty). */
  readonly firstIndex: number;
}

export function segmentPath(dir: string, firstIndex: number): string {
  return join(dir, `wal-${String(firstIndex).padStart(20, '0')}.log`);
}

/** The segments in `dir`, oldest first. */
export async function listSegments(dir: string): Promise<SegmentFile[]> {
  const segments: SegmentFile[] = [];
  for (const name of await readdir(dir)) {
    const match = SEGMENT_NAME.exec(name);
    if (match?.[1] !== undefined) segments.push({ path: join(dir, name), firstIndex: Number(match[1]) });
  }
  return segments.sort((a, b) => a.firstIndex - b.firstIndex);
}

/** Makes creations, renames and unlinks in `dir` durable (a file's fsync does not cover its name). */
export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
