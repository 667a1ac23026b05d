// `-log-file`: log lines also go to a file, rotated as Consul rotates its own (log_rotate_bytes,
// log_rotate_duration, log_rotate_max_files): the live file keeps its name, a rotated one gets
// the time of rotation in its name (`agent-1764082800000.log`), and the oldest beyond the limit
// are deleted. Writes are synchronous, as pino's own destination writes, so a crash loses nothing.
import { closeSync, fstatSync, openSync, readdirSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';

export interface LogFileOptions {
  readonly path: string;
  /** Rotate before a write would take the file past this many bytes; 0: no size limit. */
  readonly maxBytes: number;
  /** Rotate a file this old; 0: never by age. */
  readonly maxAgeMs: number;
  /** Rotated files kept: 0 keeps all, -1 keeps none. */
  readonly maxFiles: number;
  readonly now?: () => number;
}

export class RotatingLogFile {
  private fd: number;
  private bytes: number;
  private openedAt: number;
  private readonly now: () => number;

  constructor(private readonly o: LogFileOptions) {
    this.now = o.now ?? Date.now;
    this.fd = openSync(o.path, 'a', 0o640);
    this.bytes = fstatSync(this.fd).size;
    this.openedAt = this.now();
  }

  write(line: string): void {
    const size = Buffer.byteLength(line);
    const full = this.o.maxBytes > 0 && this.bytes > 0 && this.bytes + size > this.o.maxBytes;
    const old = this.o.maxAgeMs > 0 && this.now() - this.openedAt >= this.o.maxAgeMs && this.bytes > 0;
    if (full || old) this.rotate();
    writeSync(this.fd, line);
    this.bytes += size;
  }

  close(): void {
    closeSync(this.fd);
  }

  private rotate(): void {
    closeSync(this.fd);
    const ext = extname(this.o.path);
    const stem = basename(this.o.path, ext);
    // The live file is open again whatever fails here, so a failed rename costs one rotation, not the log.
    try {
      renameSync(this.o.path, join(dirname(this.o.path), `${stem}-${this.now()}${ext}`));
      this.prune(stem, ext);
    } finally {
      this.fd = openSync(this.o.path, 'a', 0o640);
      this.bytes = fstatSync(this.fd).size;
      this.openedAt = this.now();
    }
  }

  private prune(stem: string, ext: string): void {
    if (this.o.maxFiles === 0) return;
    const keep = Math.max(this.o.maxFiles, 0);
    const pattern = new RegExp(`^${escape(stem)}-(\\d+)${escape(ext)}$`);
    const rotated = readdirSync(dirname(this.o.path))
      .map((name) => ({ name, at: Number(pattern.exec(name)?.[1] ?? NaN) }))
      .filter((f) => !Number.isNaN(f.at))
      .sort((a, b) => b.at - a.at);
    for (const f of rotated.slice(keep)) unlinkSync(join(dirname(this.o.path), f.name));
  }
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
