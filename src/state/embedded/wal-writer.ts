// The write-ahead log's appender: group commit (every commit that arrives while a write+fdatasync
// is in flight joins the next batch: one write and one fdatasync per batch), segment rotation at
// batch boundaries, and removal of segments a durable snapshot has made obsolete.
import { open, statfs, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { agentError, type AgentError } from '../../core/errors.js';
import type { Logger } from '../../core/log.js';
import type { SegmentFile } from '../state-files.js';
import { fsyncDir, segmentPath } from '../state-files.js';
import { PRIVATE_FILE_MODE } from '../../core/private-files.js';

/** One commit on its way to disk. `record` is its framed WAL record. */
export interface PendingWrite {
  readonly index: number;
  readonly record: Buffer;
}

export interface WalWriterOptions<W extends PendingWrite> {
  readonly dir: string;
  /** Segments oldest first; the last one is appended to, from byte `activeBytes` on. */
  readonly segments: readonly SegmentFile[];
  readonly activeBytes: number;
  /** Index of the last record already in the log (appends continue after it). */
  readonly lastIndex: number;
  readonly log: Logger;
  /** Called synchronously once a batch is durable, in index order; never for a failed batch. */
  readonly onDurable: (batch: W[]) => void;
  /** Called with every write of a batch that failed to become durable. */
  readonly onFailed: (batch: W[], error: AgentError) => void;
  /** Called when the disk has room again and appends continue after `lastIndex`. */
  readonly onResumed?: (lastIndex: number) => void;
  /** How often a full disk is checked for room again (default 1 s). */
  readonly diskRetryMs?: number;
  /** Told how long each batch took to write and fdatasync. */
  readonly onSynced?: ((seconds: number) => void) | undefined;
}

/** Free space (as `df` shows it) below which the disk counts as full: at start-up, and to resume. */
export const DISK_FULL_BELOW_BYTES = 1024 * 1024;
const DEFAULT_DISK_RETRY_MS = 1000;
const DISK_FULL_CODES = new Set(['ENOSPC', 'EDQUOT']);

/** Whether the file system holding `dir` has less room than the log needs to go on. */
export async function diskIsFull(dir: string): Promise<boolean> {
  const fs = await statfs(dir);
  return fs.bavail * fs.bsize < DISK_FULL_BELOW_BYTES;
}

export class WalWriter<W extends PendingWrite> {
  private queue: W[] = [];
  private running: Promise<void> | undefined;
  private rotations: { atBoundary: (lastIndex: number) => void; done: () => void; fail: (err: unknown) => void }[] = [];
  private segments: SegmentFile[];
  private active: SegmentFile;
  private activeBytes: number;
  private lastIndex: number;
  private failure: AgentError | undefined;
  private diskFull: { since: number; refused: number; timer: NodeJS.Timeout | undefined } | undefined;
  private closed = false;
  /** WAL batches made durable, each one write and one fdatasync. */
  batches = 0;

  private constructor(
    private handle: FileHandle,
    private readonly options: WalWriterOptions<W>,
  ) {
    this.segments = options.segments.slice();
    this.active = options.segments[options.segments.length - 1] as SegmentFile;
    this.activeBytes = options.activeBytes;
    this.lastIndex = options.lastIndex;
  }

  /** Opens the last segment for appending, or creates the first one after `lastIndex`. */
  static async open<W extends PendingWrite>(options: WalWriterOptions<W>): Promise<WalWriter<W>> {
    const last = options.segments[options.segments.length - 1];
    if (last !== undefined) {
      return new WalWriter(await open(last.path, 'r+'), options);
    }
    const first = { path: segmentPath(options.dir, options.lastIndex + 1), firstIndex: options.lastIndex + 1 };
    const handle = await open(first.path, 'wx', PRIVATE_FILE_MODE);
    await fsyncDir(options.dir);
    return new WalWriter(handle, { ...options, segments: [first], activeBytes: 0 });
  }

  /** Size of the segment being appended to. */
  get segmentBytes(): number {
    return this.activeBytes;
  }

  /**
   * Set once a write or fsync failed: every later write is refused. A full disk is retried until
   * it has room again; any other failure stops the log until restart (fail-stop).
   */
  get failed(): AgentError | undefined {
    return this.failure;
  }

  /** Counts a write refused while the disk is full, for the line logged when writes resume. */
  noteRefused(): void {
    if (this.diskFull !== undefined) this.diskFull.refused++;
  }

  /** Refuses writes until the disk has room (an agent starting on a full disk starts read-only). */
  startReadOnly(): void {
    this.enterDiskFull('the disk is full at start-up');
  }

  append(write: W): void {
    this.queue.push(write);
    this.kick();
  }

  /**
   * At the next batch boundary, starts a new segment and calls `atBoundary` synchronously with the
   * last index of the older segments (when the view has applied exactly up to it).
   */
  rotate(atBoundary: (lastIndex: number) => void): Promise<void> {
    return new Promise((done, fail) => {
      this.rotations.push({ atBoundary, done, fail });
      this.kick();
    });
  }

  /** Deletes the segments whose records all have indexes <= `index` (a durable snapshot holds them). */
  async removeSegmentsThrough(index: number): Promise<void> {
    const keep: SegmentFile[] = [];
    const drop: SegmentFile[] = [];
    this.segments.forEach((seg, i) => {
      const next = this.segments[i + 1];
      if (next !== undefined && next.firstIndex - 1 <= index) drop.push(seg);
      else keep.push(seg);
    });
    this.segments = keep;
    for (const seg of drop) await unlink(seg.path);
    if (drop.length > 0) await fsyncDir(this.options.dir);
  }

  /** Resolves once nothing is queued or being written. */
  async drain(): Promise<void> {
    while (this.running !== undefined) await this.running;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.diskFull?.timer);
    await this.drain();
    await this.handle.close();
  }

  private kick(): void {
    // Started from a microtask so that commits issued in the same tick share the first batch.
    this.running ??= Promise.resolve().then(() => this.run());
  }

  private async run(): Promise<void> {
    try {
      while (this.failure === undefined && (this.queue.length > 0 || this.rotations.length > 0)) {
        if (this.queue.length > 0) await this.writeBatch();
        if (this.failure === undefined && this.rotations.length > 0) await this.rotateNow();
      }
      if (this.failure !== undefined) this.rejectAll(this.failure);
    } finally {
      this.running = undefined;
    }
  }

  private async writeBatch(): Promise<void> {
    const batch = this.queue;
    this.queue = [];
    const buf = batch.length === 1 ? (batch[0] as W).record : Buffer.concat(batch.map((w) => w.record));
    const started = performance.now();
    try {
      let done = 0;
      while (done < buf.length) {
        const { bytesWritten } = await this.handle.write(buf, done, buf.length - done, this.activeBytes + done);
        done += bytesWritten;
      }
      await this.handle.datasync();
    } catch (cause) {
      // The tail of the file is now unknown: a full disk truncates it back before resuming, and
      // recovery truncates a torn record on the next start.
      const code = (cause as { code?: unknown }).code;
      if (typeof code === 'string' && DISK_FULL_CODES.has(code)) {
        this.enterDiskFull(`${code} writing ${this.active.path}`);
      } else {
        this.failure = agentError('STATE_WAL_WRITE_FAILED', { cause });
        this.options.log.error(
          { err: cause, segment: this.active.path },
          'WAL write failed; refusing further writes until restart',
        );
      }
      this.options.onFailed(batch, this.failure as AgentError);
      return;
    }
    this.options.onSynced?.((performance.now() - started) / 1000);
    this.activeBytes += buf.length;
    this.lastIndex = (batch[batch.length - 1] as W).index;
    this.batches++;
    this.options.onDurable(batch);
  }

  private async rotateNow(): Promise<void> {
    const waiting = this.rotations;
    this.rotations = [];
    try {
      if (this.activeBytes > 0) {
        const next = { path: segmentPath(this.options.dir, this.lastIndex + 1), firstIndex: this.lastIndex + 1 };
        const handle = await open(next.path, 'wx', PRIVATE_FILE_MODE);
        try {
          // The new name must be durable before a record in it is acknowledged.
          await fsyncDir(this.options.dir);
        } catch (err) {
          // Appends stay in the old segment; a stray empty segment would break recovery's
          // index continuity check, so it goes.
          await handle.close().catch(() => undefined);
          await unlink(next.path).catch(() => undefined);
          throw err;
        }
        const old = this.handle;
        this.handle = handle;
        this.segments.push(next);
        this.active = next;
        this.activeBytes = 0;
        // Everything in it is already fdatasynced; a failing close loses nothing.
        await old
          .close()
          .catch((err: unknown) =>
            this.options.log.warn({ err, segment: next.path }, 'closing the previous WAL segment failed'),
          );
      }
    } catch (err) {
      for (const r of waiting) r.fail(err);
      return;
    }
    for (const r of waiting) {
      try {
        r.atBoundary(this.lastIndex);
        r.done();
      } catch (err) {
        r.fail(err);
      }
    }
  }

  private enterDiskFull(reason: string): void {
    this.failure = agentError('STATE_DISK_FULL', { dir: this.options.dir });
    this.diskFull = { since: Date.now(), refused: 0, timer: undefined };
    const everyMs = this.options.diskRetryMs ?? DEFAULT_DISK_RETRY_MS;
    this.options.log.warn(
      { dir: this.options.dir, reason, retryEveryMs: everyMs },
      'disk full: the state store is read-only until space is freed (reads are served)',
    );
    this.scheduleDiskRetry();
  }

  private scheduleDiskRetry(): void {
    const outage = this.diskFull;
    if (outage === undefined || this.closed) return;
    outage.timer = setTimeout(() => void this.retryDisk(), this.options.diskRetryMs ?? DEFAULT_DISK_RETRY_MS);
    outage.timer.unref();
  }

  /** Resumes once the disk has room: the active segment is cut back to its durable bytes first. */
  private async retryDisk(): Promise<void> {
    const outage = this.diskFull;
    if (outage === undefined || this.closed) return;
    try {
      if (await diskIsFull(this.options.dir)) throw new Error('still full');
      await this.handle.truncate(this.activeBytes);
      await this.handle.datasync();
    } catch {
      this.scheduleDiskRetry();
      return;
    }
    this.diskFull = undefined;
    this.failure = undefined;
    const seconds = ((Date.now() - outage.since) / 1000).toFixed(1);
    this.options.log.info(
      { dir: this.options.dir, refusedWrites: outage.refused, readOnlySeconds: Number(seconds) },
      'disk has room again: state store writes resumed',
    );
    this.options.onResumed?.(this.lastIndex);
  }

  private rejectAll(error: AgentError): void {
    const queued = this.queue;
    this.queue = [];
    if (queued.length > 0) this.options.onFailed(queued, error);
    const waiting = this.rotations;
    this.rotations = [];
    for (const r of waiting) r.fail(error);
  }
}
