// Notices when the process runs out of file descriptors and when it has enough again, and says
// so once each way (docs/decisions.md#descriptor-exhaustion). Out of descriptors, new connections
// wait in the kernel's queue, and connections and parked queries already open are kept.
import type { Logger } from './log.js';
import type { DescriptorProbe } from './open-files.js';

/** Checked 4 times a second: a check is one open and close of /dev/null, a few microseconds, and the uWS transport spins until one notices. */
export const CHECK_INTERVAL_MS = 250;

/**
 * Free descriptors that end an exhaustion: 1/16 of the limit, at least 32 (64 of 1,024), so that a
 * flood still arriving does not log an end and a start at every check.
 */
export function enoughFree(free: number, limit: number): boolean {
  return free >= Math.max(32, Math.ceil(limit / 16));
}

export class DescriptorWatch {
  private out = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly descriptors: DescriptorProbe,
    private readonly log: Logger,
    /** Told at each change (the uWS transport paces its accept retries meanwhile). */
    private readonly onChange: (exhausted: boolean) => void = () => undefined,
  ) {}

  /** True from a check that found no descriptor left until one that found enough free. */
  get exhausted(): boolean {
    return this.out;
  }

  start(): this {
    this.timer ??= setInterval(() => this.check(), CHECK_INTERVAL_MS).unref();
    return this;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  check(): void {
    if (!this.out) {
      if (!this.descriptors.exhausted()) return;
      this.out = true;
      this.log.warn({ openFiles: this.descriptors.free()?.limit }, OUT_OF_DESCRIPTORS);
      this.onChange(true);
      return;
    }
    if (this.descriptors.exhausted()) return;
    const count = this.descriptors.free();
    if (count !== undefined && !enoughFree(count.free, count.limit)) return;
    this.out = false;
    this.log.info({ free: count?.free }, 'file descriptors available again: accepting connections');
    this.onChange(false);
  }
}

const OUT_OF_DESCRIPTORS =
  'out of file descriptors: new connections wait until some are free, existing ones are kept (raise the open-files limit, see the line logged at start-up)';
