// The etcd store's last view kept on disk (when the agent has a data_dir): a snapshot file
// (snapshot-file.ts: temp file, fsync, rename) whose index is the view's etcd revision, rewritten at
// most once per interval (longer for a view slow to write) while the revision moves. An agent
// restarting while etcd is unreachable starts from it and serves stale reads instead of failing.
import { stat } from 'node:fs/promises';
import { makeDir } from '../../core/make-dir.js';
import { join } from 'node:path';
import type { Clock, TimerHandle } from '../../core/clock.js';
import type { Logger } from '../../core/log.js';
import type { ViewImage } from '../memory-tables.js';
import { readSnapshot, writeSnapshot } from '../snapshot-file.js';
import { SNAPSHOT_FILE } from '../state-files.js';

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

export interface StoredView {
  /** `index` is the etcd revision the view was complete up to. */
  readonly image: ViewImage;
  /** When it was written (the file's mtime, epoch ms): the last contact with etcd it reflects. */
  readonly savedAt: number;
}

export interface ViewSource {
  /** The revision the view is complete up to; the file is rewritten when it moves. */
  revision(): number;
  /** The view as an image whose index is that revision. */
  capture(): ViewImage;
}

export class EtcdViewFile {
  private timer: TimerHandle | undefined;
  private savedRevision = -1;
  private writing: Promise<void> | undefined;
  private stopped = false;
  private lastWriteMs = 0;

  private constructor(
    readonly dir: string,
    private readonly source: ViewSource,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly intervalMs: number,
  ) {}

  static async open(dataDir: string, source: ViewSource, clock: Clock, log: Logger, intervalMs = DEFAULT_SAVE_INTERVAL_MS): Promise<EtcdViewFile> {
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
    return { image, savedAt: Math.floor(mtimeMs) };
  }

  /** Starts saving the view whenever its revision has moved, once per interval. */
  startSaving(): void {
    if (this.stopped) return;
    this.timer ??= this.clock.setTimer(Math.max(this.intervalMs, WRITE_TIME_FACTOR * this.lastWriteMs), () => {
      this.timer = undefined;
      void this.save().finally(() => {
        if (!this.stopped) this.startSaving();
      });
    });
  }

  /** Stops the timer and writes the view one last time if it moved. */
  async close(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = undefined;
    await this.save();
  }

  /** Writes the view now if its revision moved since the last write (one write at a time). */
  async save(): Promise<void> {
    while (this.writing !== undefined) await this.writing;
    const revision = this.source.revision();
    if (revision === this.savedRevision || revision === 0) return;
    const started = this.clock.now();
    const image = this.source.capture();
    this.writing = writeSnapshot(this.dir, image).then(
      () => {
        this.savedRevision = revision;
        this.lastWriteMs = this.clock.now() - started;
      },
      (err: unknown) => this.log.warn({ err, dir: this.dir, revision }, 'could not write the etcd view to disk; retrying'),
    );
    try {
      await this.writing;
    } finally {
      this.writing = undefined;
    }
  }
}
