// The durable mark: a 12-byte file holding an index the WAL had made durable (8 bytes) and a CRC of
// it (4 bytes). Recovery compares what the log still holds with it, so a deleted segment or a cut
// far before the last acknowledged commit is seen as a loss, not as a torn tail.
// See docs/decisions.md D17. It is rewritten in place, off the commit path, a few times a second at
// most: it may lag the log by that much, never lead it.
import { open, readFile } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { Logger } from '../../core/log.js';
import { DURABLE_MARK_FILE, fsyncDir } from '../state-files.js';
import { PRIVATE_FILE_MODE } from '../../core/private-files.js';

const MARK_BYTES = 12;
/** How long a durable index may wait before it is marked: the window a cut can go unnoticed. */
export const DEFAULT_MARK_EVERY_MS = 200;

export type MarkReading =
  { readonly kind: 'none' } | { readonly kind: 'damaged' } | { readonly kind: 'index'; readonly index: number };

/** What the directory's mark says; `none` without one (a directory from before the mark existed). */
export async function readDurableMark(dir: string): Promise<MarkReading> {
  let buf: Buffer;
  try {
    buf = await readFile(join(dir, DURABLE_MARK_FILE));
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ENOENT') return { kind: 'none' };
    throw err;
  }
  if (buf.length !== MARK_BYTES || buf.readUInt32BE(8) !== crc32(buf.subarray(0, 8))) return { kind: 'damaged' };
  return { kind: 'index', index: Number(buf.readBigUInt64BE(0)) };
}

function encodeMark(index: number): Buffer {
  const buf = Buffer.alloc(MARK_BYTES);
  buf.writeBigUInt64BE(BigInt(index), 0);
  buf.writeUInt32BE(crc32(buf.subarray(0, 8)), 8);
  return buf;
}

/**
 * Keeps the mark up to date: `advance(index)` after each durable batch, written at most every
 * `everyMs`; `flush()` writes what is pending now (close, and after recovery).
 */
export class DurableMarkWriter {
  private marked: number;
  private wanted: number;
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> | undefined;
  private warned = false;

  private constructor(
    private readonly handle: FileHandle,
    private readonly log: Logger,
    private readonly everyMs: number,
    index: number,
  ) {
    this.marked = -1;
    this.wanted = index;
  }

  /** Opens (creating if needed) the directory's mark, to be set to `index` by the first flush. */
  static async open(
    dir: string,
    index: number,
    log: Logger,
    everyMs = DEFAULT_MARK_EVERY_MS,
  ): Promise<DurableMarkWriter> {
    const path = join(dir, DURABLE_MARK_FILE);
    let handle: FileHandle;
    try {
      handle = await open(path, 'r+');
    } catch (err) {
      if ((err as { code?: unknown }).code !== 'ENOENT') throw err;
      handle = await open(path, 'wx', PRIVATE_FILE_MODE);
      await fsyncDir(dir);
    }
    return new DurableMarkWriter(handle, log, everyMs, index);
  }

  /** The index last written durably (-1 before the first write). */
  get index(): number {
    return this.marked;
  }

  advance(index: number): void {
    if (index <= this.wanted) return;
    this.wanted = index;
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.everyMs).unref();
  }

  /** Writes the wanted index now (after any write in flight); never throws: a failed mark only weakens the check. */
  async flush(): Promise<void> {
    while (this.writing !== undefined) await this.writing;
    if (this.wanted === this.marked) return;
    const index = this.wanted;
    this.writing = this.write(index).finally(() => {
      this.writing = undefined;
    });
    await this.writing;
  }

  async close(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush();
    await this.handle.close().catch(() => undefined);
  }

  private async write(index: number): Promise<void> {
    try {
      // One write of 12 bytes at offset 0 stays within a sector; the CRC still catches a torn one.
      await this.handle.write(encodeMark(index), 0, MARK_BYTES, 0);
      await this.handle.datasync();
      this.marked = index;
    } catch (err) {
      if (!this.warned)
        this.log.warn(
          { err: { code: (err as { code?: unknown }).code, message: String(err) } },
          'writing the durable mark failed; recovery checks against an older mark',
        );
      this.warned = true;
    }
  }
}
