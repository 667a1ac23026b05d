// How a signing thread shares the CPU with the event loop. It enters Linux's SCHED_IDLE policy:
// it then runs only on a core nothing else wants, and a waking event loop takes the core back at
// once (a nice value alone does not do that: the scheduler lets a running thread finish its slice,
// milliseconds, whatever its weight). Node has no binding for sched_setscheduler(2), so this asks
// util-linux's chrt, present on every Debian; the thread identifies itself through
// /proc/thread-self. And it pauses within a batch, so that a core it was given over a busy event
// loop comes back within a millisecond.
import { execFileSync } from 'node:child_process';
import { readlinkSync } from 'node:fs';

/** `'idle'` when the thread now runs under SCHED_IDLE, otherwise why not. */
export function enterIdleScheduling(): string {
  if (process.platform !== 'linux') return `not on ${process.platform}`;
  let tid: string;
  try {
    tid = readlinkSync('/proc/thread-self').split('/').pop() ?? '';
  } catch (err) {
    return `no thread id: ${(err as Error).message}`;
  }
  try {
    execFileSync('chrt', ['--idle', '--pid', '0', tid], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 5000 });
    return 'idle';
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    return `chrt failed: ${stderr !== undefined && stderr !== '' ? stderr : (err as Error).message}`;
  }
}

export interface YieldOptions {
  /** Work that may run between two pauses, in ms. */
  readonly everyMs: number;
  readonly now: () => number;
  /** Gives up the CPU for a moment. */
  readonly pause: () => void;
}

const PAUSE_CELL = new Int32Array(new SharedArrayBuffer(4));
/** Asked-for sleep; the kernel's timer slack makes it ~50-100 us. Any sleep dequeues the thread. */
const PAUSE_MS = 0.01;

/**
 * Runs `work` over `items`, pausing whenever `everyMs` of it has run since the last pause. A
 * scheduler picks a waiting idle-class thread now and then even over a busy event loop, and then
 * lets it keep the core until the next tick (4 ms at HZ=250): pausing bounds that to `everyMs`.
 */
export function runYielding<T, R>(items: readonly T[], work: (item: T) => R, options: Partial<YieldOptions> = {}): R[] {
  const { everyMs = 1, now = () => performance.now(), pause = () => Atomics.wait(PAUSE_CELL, 0, 0, PAUSE_MS) } = options;
  let since = now();
  return items.map((item) => {
    if (now() - since >= everyMs) {
      pause();
      since = now();
    }
    return work(item);
  });
}
