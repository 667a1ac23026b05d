// The event loop's longest stall, split by the scheduler's own account: how much of it the thread
// ran (work: JavaScript, GC) and how much it was runnable but waited for a CPU (other threads, the
// hypervisor). A 1 ms timer reads /proc/thread-self/schedstat at every turn; Linux only.
import { closeSync, openSync, readSync } from 'node:fs';
import { parseSchedstat, type ThreadSched } from './proc-stats.js';

export interface Stall {
  /** Longest gap between two probe turns beyond the 1 ms asked for. */
  readonly gapMs: number;
  /** Of that gap, time the event loop's thread ran. */
  readonly cpuMs: number;
  /** Of that gap, time the thread was runnable but not running. */
  readonly waitMs: number;
}

const PROBE_MS = 1;
const NO_STALL: Stall = { gapMs: 0, cpuMs: 0, waitMs: 0 };

/** Starts probing; the returned function stops and gives the longest stall (zeros off Linux). */
export function watchStalls(): () => Stall {
  let fd: number;
  try {
    fd = openSync('/proc/thread-self/schedstat', 'r');
  } catch {
    return () => NO_STALL;
  }
  // Read through one open descriptor: the probe runs every millisecond.
  const buf = Buffer.alloc(64);
  const sched = (): ThreadSched => parseSchedstat(buf.toString('latin1', 0, readSync(fd, buf, 0, buf.length, 0)));
  let longest = NO_STALL;
  let last = performance.now();
  let before = sched();
  const probe = (): void => {
    const now = performance.now();
    const after = sched();
    const gapMs = now - last - PROBE_MS;
    if (gapMs > longest.gapMs)
      longest = { gapMs, cpuMs: after.cpuMs - before.cpuMs, waitMs: after.waitMs - before.waitMs };
    last = now;
    before = after;
  };
  const timer = setInterval(probe, PROBE_MS);
  return () => {
    clearInterval(timer);
    closeSync(fd);
    return longest;
  };
}
