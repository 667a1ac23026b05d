// The etcd store's last view kept on disk (when the agent has a data_dir): a snapshot file
// (snapshot-file.ts: temp file, fsync, rename) whose index is the view's etcd revision, rewritten at
// most once per interval (longer for a view slow to write) while the revision moves, and beside it
// when that view was last known current (etcd's last answer), kept fresh while the revision stands
// still. An agent restarting while etcd is unreachable starts from it and serves stale reads
// instead of failing, saying how old they are.
import { readFile, rename, stat, writeFile } from 'node:fs/promises';
import { makeDir } from '../../core/make-dir.js';
import { join } from 'node:path';
import type { Clock, TimerHandle } from '../../core/clock.js';
import type { Logger } from '../../core/log.js';
import type { ViewImage } from '../memory-tables.js';
import { readSnapshot, writeSnapshot } from '../snapshot-file.js';
import { SNAPSHOT_FILE } from '../state-files.js';
import { PRIVATE_FILE_MODE } from '../../core/private-files.js';

/** Beside the embedded store's `state/`, so the two never read each other's snapshot. */
export const ETCD_VIEW_DIR = 'etcd-view';
/**
 * A busy mesh changes every few ms; one rewrite a second bounds the disk work, and a view up to a
 * second older than etcd's is what an outage would serve anyway.
 */
const DEFAULT_SAVE_INTERVAL_MS = 1_000;
/**
 * A large view takes long to write (the embedded store's 48 MB snapshot takes about 0.3 s): the
 * next write waits at least this many times the last one took, so disk work stays under ~10 %.
 */
const WRITE_TIME_FACTOR = 10;
/** `{ revision, currentAt }`: the snapshot of that revision matched etcd at `currentAt` (epoch ms). */
const CURRENT_AT_FILE = 'current-at.json';
const CURRENT_AT_TEMP_FILE = 'current-at.tmp';
/**
 * While etcd answers and nothing changes, the time is rewritten this often (a small file, not
 * fsynced): an agent killed in a quiet spell reports its view at most this much older than it is.
 */
const CURRENT_AT_REFRESH_MS = 5_000;

export interface StoredView {
  /** `index` is the etcd revision the view was complete up to. */
  readonly image: ViewImage;
  /** When it was last known current (epoch ms): the agent's last contact with etcd before it stopped. */
  readonly savedAt: number;
}

export interface ViewSource {
  /** The revision the view is complete up to; the file is rewritten when it moves. */
  revision(): number;
  /** The view as an image whose index is that revision. */
  capture(): ViewImage;
  /** When the view last matched etcd (epoch ms): now while etcd answers; the time of writing by default. */
  currentAt?(): number;
}

export class EtcdViewFile {
  private timer: TimerHandle | undefined;
  private savedRevision = -1;
  private writing: Promise<void> | undefined;
  private stopped = false;
  private lastWriteMs = 0;
  /** The time last recorded beside the snapshot. */
  private recordedAt = 0;

  private constructor(
    readonly dir: string,
    private readonly source: ViewSource,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly intervalMs: number,
  ) {}

  static async open(
    dataDir: string,
    source: ViewSource,
    clock: Clock,
    log: Logger,
    intervalMs = DEFAULT_SAVE_INTERVAL_MS,
  ): Promise<EtcdViewFile> {
    const dir = join(dataDir, ETCD_VIEW_DIR);
    await makeDir(dir);
    return new EtcdViewFile(dir, source, clock, log, intervalMs);
  }

  /** The view last written, or undefined when there is none; throws if the file is damaged. */
  async load(): Promise<StoredView | undefined> {
    const image = await readSnapshot(this.dir);
    if (image === undefined) return undefined;
    const { mtimeMs } = await stat(join(this.dir, SNAPSHOT_FILE));
    this.savedRevision = image.index;
    // The mtime is when the file was written; the record beside it (this revision's), when it was last current.
    const current = await this.readCurrentAt();
    const savedAt = Math.max(Math.floor(mtimeMs), current?.revision === image.index ? current.currentAt : 0);
    this.recordedAt = savedAt;
    return { image, savedAt };
  }

  private async readCurrentAt(): Promise<{ revision: number; currentAt: number } | undefined> {
    try {
      const parsed = JSON.parse(await readFile(join(this.dir, CURRENT_AT_FILE), 'utf8')) as {
        revision?: unknown;
        currentAt?: unknown;
      };
      if (typeof parsed.revision === 'number' && typeof parsed.currentAt === 'number')
        return { revision: parsed.revision, currentAt: parsed.currentAt };
    } catch {
      // Missing (a view written before it was kept) or torn: the snapshot's mtime answers.
    }
    return undefined;
  }

  /** Starts saving the view whenever its revision has moved (and when it was current), once per interval. */
  startSaving(): void {
    if (this.stopped) return;
    this.timer ??= this.clock.setTimer(Math.max(this.intervalMs, WRITE_TIME_FACTOR * this.lastWriteMs), () => {
      this.timer = undefined;
      void this.save().finally(() => {
        if (!this.stopped) this.startSaving();
      });
    });
  }

  /** Stops the timer and writes the view one last time if it moved, with when it was last current. */
  async close(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = undefined;
    await this.save(0);
  }

  /**
   * Writes the view now if its revision moved since the last write (one write at a time), and the
   * time it was current if that moved by `refreshMs`.
   */
  async save(refreshMs = CURRENT_AT_REFRESH_MS): Promise<void> {
    while (this.writing !== undefined) await this.writing;
    const revision = this.source.revision();
    if (revision === 0) return;
    // Read before the capture: the image matches etcd at least as of this time.
    const currentAt = this.source.currentAt?.() ?? this.clock.now();
    let write: Promise<void>;
    if (revision === this.savedRevision) {
      if (currentAt - this.recordedAt < refreshMs || currentAt <= this.recordedAt) return;
      write = this.recordCurrentAt(revision, currentAt);
    } else {
      const started = this.clock.now();
      const image = this.source.capture();
      write = writeSnapshot(this.dir, image).then(
        async () => {
          this.savedRevision = revision;
          this.lastWriteMs = this.clock.now() - started;
          await this.recordCurrentAt(revision, currentAt);
        },
        (err: unknown) =>
          this.log.warn({ err, dir: this.dir, revision }, 'could not write the etcd view to disk; retrying'),
      );
    }
    this.writing = write;
    try {
      await write;
    } finally {
      this.writing = undefined;
    }
  }

  /** A temp file renamed into place: a torn write leaves the last record, or none (then the mtime answers). */
  private async recordCurrentAt(revision: number, currentAt: number): Promise<void> {
    try {
      const temp = join(this.dir, CURRENT_AT_TEMP_FILE);
      await writeFile(temp, JSON.stringify({ revision, currentAt }), { mode: PRIVATE_FILE_MODE });
      await rename(temp, join(this.dir, CURRENT_AT_FILE));
      this.recordedAt = currentAt;
    } catch (err) {
      this.log.warn({ err, dir: this.dir }, 'could not record when the etcd view was last current');
    }
  }
}
