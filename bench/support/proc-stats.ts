// Reads a process's resident memory (VmRSS) and CPU time from /proc, so benches can report what
// the server under test cost, not only what the client saw. Linux only, as the bench machine is.
import { readdirSync, readFileSync } from 'node:fs';

/** Kernel clock ticks per second for /proc/<pid>/stat times; 100 on every Linux we run on. */
const CLK_TCK = 100;

/** VmRSS of `pid` in KiB, or undefined once the process is gone. */
export function readRssKiB(pid: number): number | undefined {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
  return match?.[1] === undefined ? undefined : Number(match[1]);
}

/** utime, stime, cutime, cstime of /proc/<pid>/stat in seconds, or undefined once it is gone. */
function readTimes(pid: number | 'self'): [number, number, number, number] | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // utime, stime, cutime, cstime are fields 14-17 of the whole line, 12-15 after the name.
  const times = fieldsAfterName(stat)
    .slice(11, 15)
    .map((t) => Number(t) / CLK_TCK);
  const [utime, stime, cutime, cstime] = times;
  if (utime === undefined || stime === undefined || cutime === undefined || cstime === undefined) return undefined;
  return [utime, stime, cutime, cstime];
}

/** User + system CPU seconds `pid` has used so far, or undefined once the process is gone. */
export function readCpuSeconds(pid: number): number | undefined {
  const t = readTimes(pid);
  return t === undefined ? undefined : t[0] + t[1];
}

/**
 * The scheduler's own account of one thread so far, in nanosecond resolution: milliseconds it ran
 * on a CPU, and milliseconds it was runnable but waited for one (behind other threads, or while
 * the hypervisor ran something else).
 */
export interface ThreadSched {
  readonly cpuMs: number;
  readonly waitMs: number;
}

/** A `/proc/.../schedstat` line (run ns, wait ns, timeslices) as ThreadSched. */
export function parseSchedstat(line: string): ThreadSched {
  const [cpu, wait] = line.split(' ');
  return { cpuMs: Number(cpu) / 1e6, waitMs: Number(wait) / 1e6 };
}

/** ThreadSched of the main thread of `pid` (its event loop), or undefined once it is gone. */
export function readMainThreadSched(pid: number): ThreadSched | undefined {
  try {
    return parseSchedstat(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** CPU milliseconds of a node process's threads so far, grouped by what they do. */
export interface ThreadGroupsCpu {
  /** The main thread: the event loop. */
  readonly mainMs: number;
  /** Threads at a positive nice: the agent's signing pool (at its default signing_priority). */
  readonly loweredMs: number;
  /** The rest: V8's GC and compiler helpers above all, libuv's pool, the inspector's signal thread. */
  readonly otherMs: number;
}

/** ThreadGroupsCpu of `pid`'s live threads (exited ones are not counted), or undefined once it is gone. */
export function readThreadGroupsCpu(pid: number): ThreadGroupsCpu | undefined {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return undefined;
  }
  const threads = tids.flatMap((tid) => {
    try {
      const { cpuMs } = parseSchedstat(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8'));
      const fields = fieldsAfterName(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8'));
      return [{ tid: Number(tid), cpuMs, lowered: Number(fields[NICE_FIELD]) > 0 }];
    } catch {
      return []; // The thread exited between the listing and the read.
    }
  });
  const sum = (group: (t: (typeof threads)[number]) => boolean): number =>
    threads.filter(group).reduce((ms, t) => ms + t.cpuMs, 0);
  return {
    mainMs: sum((t) => t.tid === pid),
    loweredMs: sum((t) => t.tid !== pid && t.lowered),
    otherMs: sum((t) => t.tid !== pid && !t.lowered),
  };
}

/** nice (field 19 of a `/proc/.../stat` line) and policy (field 41), as indexes after the name. */
export const NICE_FIELD = 19 - 3;
export const POLICY_FIELD = 41 - 3;

/** Nice value and scheduling policy (0 is SCHED_OTHER) of each live thread of `pid`. */
export function readThreadPriorities(
  pid: number | 'self',
): { readonly tid: number; readonly nice: number; readonly policy: number }[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((tid) => {
    try {
      const fields = fieldsAfterName(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8'));
      return [{ tid: Number(tid), nice: Number(fields[NICE_FIELD]), policy: Number(fields[POLICY_FIELD]) }];
    } catch {
      return [];
    }
  });
}

/**
 * The fields of a `/proc/.../stat` line after the command name (field 2), from field 3 on: the
 * name may hold spaces and parentheses, so it ends at the line's last ')'.
 */
function fieldsAfterName(statLine: string): string[] {
  return statLine.slice(statLine.lastIndexOf(')') + 2).split(' ');
}

/**
 * CPU seconds of this process plus its children that have exited and been reaped: a load
 * generator's whole run is in here once its 'close' event has fired.
 */
export function readSelfAndReapedCpuSeconds(): number {
  const t = readTimes('self');
  return t === undefined ? Number.NaN : t[0] + t[1] + t[2] + t[3];
}

/** CPU seconds the whole machine has been busy (all cores; idle, iowait and steal excluded). */
export function readMachineBusySeconds(): number {
  const cpu = /^cpu\s+(.*)$/m.exec(readFileSync('/proc/stat', 'utf8'))?.[1]?.split(/\s+/).map(Number) ?? [];
  // user nice system idle iowait irq softirq steal ...
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0] = cpu;
  return (user + nice + system + irq + softirq) / CLK_TCK;
}

/**
 * Brackets a measured run to tell how much CPU went to anything but the server and the bench's
 * own processes (other jobs on a shared 2-core machine). A high figure marks a row as noisy.
 */
export function startCpuWatch(serverPid: number): () => { serverPct: number; otherPct: number } {
  const t0 = performance.now();
  const machine0 = readMachineBusySeconds();
  const server0 = readCpuSeconds(serverPid) ?? Number.NaN;
  const self0 = readSelfAndReapedCpuSeconds();
  return () => {
    const elapsed = (performance.now() - t0) / 1000;
    const server = (readCpuSeconds(serverPid) ?? Number.NaN) - server0;
    const self = readSelfAndReapedCpuSeconds() - self0;
    const machine = readMachineBusySeconds() - machine0;
    return { serverPct: (server / elapsed) * 100, otherPct: Math.max(0, ((machine - server - self) / elapsed) * 100) };
  };
}

export interface SettleOptions {
  intervalMs: number;
  /** RSS counts as settled once `stableSamples` consecutive samples stay within this many KiB. */
  toleranceKiB: number;
  stableSamples: number;
  timeoutMs: number;
}

const DEFAULT_SETTLE: SettleOptions = { intervalMs: 200, toleranceKiB: 256, stableSamples: 5, timeoutMs: 10_000 };

/**
 * Samples RSS until it stops moving (allocation after a burst of work lags the work itself) and
 * returns the last sample; after the timeout it returns what it has, with `settled: false`.
 */
export async function waitRssSettled(
  pid: number,
  options: Partial<SettleOptions> = {},
): Promise<{ rssKiB: number; settled: boolean }> {
  const o = { ...DEFAULT_SETTLE, ...options };
  const deadline = Date.now() + o.timeoutMs;
  const window: number[] = [];
  for (;;) {
    const rss = readRssKiB(pid);
    if (rss === undefined) throw new Error(`process ${pid} is gone`);
    window.push(rss);
    if (window.length > o.stableSamples) window.shift();
    const spread = Math.max(...window) - Math.min(...window);
    if (window.length === o.stableSamples && spread <= o.toleranceKiB) return { rssKiB: rss, settled: true };
    if (Date.now() > deadline) return { rssKiB: rss, settled: false };
    await new Promise((r) => setTimeout(r, o.intervalMs));
  }
}

/** The soft open-files limit of this process (children inherit it), from /proc/self/limits. */
export function openFilesLimit(): number | undefined {
  try {
    const limits = readFileSync('/proc/self/limits', 'utf8');
    const soft = /^Max open files\s+(\d+|unlimited)/m.exec(limits)?.[1];
    return soft === undefined ? undefined : soft === 'unlimited' ? Number.POSITIVE_INFINITY : Number(soft);
  } catch {
    return undefined;
  }
}
