// How the agent's threads share the CPU. A signing thread enters Linux's SCHED_IDLE policy: it then
// runs only on a core nothing else wants, and a waking event loop takes the core back at once (a
// nice value alone does not do that: the scheduler lets a running thread finish its slice,
// milliseconds, whatever its weight); and it pauses within a batch, so that a core it was given
// over a busy event loop comes back within a millisecond. V8's platform threads (the GC and
// compiler helpers of every isolate, the signing workers' included) enter SCHED_IDLE too, for the
// same reason. The event loop asks for a short slice (EEVDF, Linux 6.12+): waking, it may then
// preempt a running thread of normal priority instead of waiting for the next tick. Node binds
// neither sched_setscheduler(2) nor sched_setattr(2): the first goes through util-linux's chrt,
// the second through perl's syscall (perl-base), both on every Debian. A thread names itself by
// /proc/thread-self.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { getPriority, release } from 'node:os';

/** `'idle'` when the thread now runs under SCHED_IDLE, otherwise why not. */
export function enterIdleScheduling(): string {
  if (process.platform !== 'linux') return `not on ${process.platform}`;
  const self = currentThreadId();
  if ('reason' in self) return self.reason;
  return setIdlePolicy(self.tid) ?? 'idle';
}

/** Puts thread `tid` of this process under SCHED_IDLE: undefined when done, otherwise why not. */
function setIdlePolicy(tid: string): string | undefined {
  try {
    execFileSync('chrt', ['--idle', '--pid', '0', tid], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 5000 });
    return undefined;
  } catch (err) {
    return `chrt failed: ${stderrOf(err)}`;
  }
}

/** A thread of this process, as /proc/self/task shows it. */
export interface TaskInfo {
  readonly tid: number;
  /** When it started, in clock ticks since boot (field 22 of /proc/self/task/<tid>/stat). */
  readonly startTicks: number;
}

/** V8's pool size when node is given no --v8-pool-size. */
export const DEFAULT_V8_POOL_SIZE = 4;

/** node's --v8-pool-size, from NODE_OPTIONS and then the command line, which overrides it. */
export function v8PoolSize(execArgv: readonly string[] = process.execArgv, nodeOptions: string = process.env.NODE_OPTIONS ?? ''): number {
  let size = DEFAULT_V8_POOL_SIZE;
  for (const args of [nodeOptions.split(/\s+/), execArgv]) {
    for (let i = 0; i < args.length; i++) {
      const match = /^--v8[-_]pool[-_]size(?:=(.*))?$/.exec(args[i] ?? '');
      if (match !== null) size = Number(match[1] ?? args[++i]);
    }
  }
  return size;
}

/**
 * V8's platform threads among a process's: node starts them before any other thread, in one burst
 * (a delayed-task thread and `poolSize` workers), so they are the first `poolSize + 1` after the
 * main thread by start time and thread id. Answers why not when the threads do not look like that.
 */
export function pickV8PlatformThreads(tasks: readonly TaskInfo[], mainTid: number, poolSize: number): { readonly tids: number[] } | { readonly reason: string } {
  if (!Number.isInteger(poolSize) || poolSize < 1) return { reason: `node sizes V8's pool itself with --v8-pool-size=${poolSize}` };
  const others = tasks.filter((t) => t.tid !== mainTid).sort((a, b) => a.startTicks - b.startTicks || a.tid - b.tid);
  const first = others.slice(0, poolSize + 1);
  if (first.length < poolSize + 1) return { reason: `expected ${poolSize + 1} V8 platform threads, found ${others.length} threads beside the main one` };
  const span = (first.at(-1)?.startTicks ?? 0) - (first[0]?.startTicks ?? 0);
  if (span > 1) return { reason: `the first ${poolSize + 1} threads did not start together (over ${span} clock ticks), as V8's platform threads do` };
  return { tids: first.map((t) => t.tid) };
}

/** Not `ok`: `unsupported` where there is no SCHED_IDLE (not Linux). */
export type IdleThreadsResult =
  | { readonly ok: true; readonly threads: number }
  | { readonly ok: false; readonly reason: string; readonly unsupported: boolean };

/**
 * Puts V8's platform threads (the GC and compiler helpers every isolate of the process shares)
 * under SCHED_IDLE: a waking event loop then takes a core from them at once, and they run on what
 * it leaves. Once only: an unprivileged thread cannot leave SCHED_IDLE.
 */
export function idleV8PlatformThreads(): IdleThreadsResult {
  if (process.platform !== 'linux') return { ok: false, reason: `not on ${process.platform}`, unsupported: true };
  let tasks: TaskInfo[];
  try {
    tasks = readdirSync('/proc/self/task').flatMap((tid) => readTask(Number(tid)) ?? []);
  } catch (err) {
    return { ok: false, reason: `cannot list the threads: ${(err as Error).message}`, unsupported: false };
  }
  const picked = pickV8PlatformThreads(tasks, process.pid, v8PoolSize());
  if ('reason' in picked) return { ok: false, reason: picked.reason, unsupported: false };
  for (const tid of picked.tids) {
    const failed = setIdlePolicy(String(tid));
    if (failed !== undefined) return { ok: false, reason: failed, unsupported: false };
  }
  return { ok: true, threads: picked.tids.length };
}

/** A thread's start time, or undefined when it has ended since the listing. */
function readTask(tid: number): TaskInfo | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // Fields after the command name, which is in parentheses and may hold spaces: state is field 3.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { tid, startTicks: Number(fields[22 - 3]) };
}

/** The kernel's bounds on a custom slice (sched_attr.sched_runtime under SCHED_OTHER), in ms. */
const MIN_SLICE_MS = 0.1;
const MAX_SLICE_MS = 100;

/** Whether `ms` is a slice the kernel takes, or 0 for its default. */
export function isSliceMs(ms: number): boolean {
  return ms === 0 || (ms >= MIN_SLICE_MS && ms <= MAX_SLICE_MS);
}

/** sched_setattr(2)'s number on the architectures Node ships Linux builds for that have one here. */
const SCHED_SETATTR: Readonly<Partial<Record<string, number>>> = { x64: 314, arm64: 274 };

/**
 * sched_attr as the kernel reads it (48 bytes): SCHED_OTHER at the thread's own nice value, the
 * slice as sched_runtime, and SCHED_FLAG_RESET_ON_FORK so that threads started later (the
 * signing pool's among them) get the kernel's default slice, not this one.
 */
const SET_SLICE_PERL =
  'my ($nr, $tid, $nice, $ns) = @ARGV; ' +
  'syscall($nr + 0, $tid + 0, pack("LLQlLQQQ", 48, 0, 1, $nice, 0, $ns, 0, 0), 0) == 0 or die "sched_setattr: $!\\n";';

/** Not `ok`: `unsupported` when this system cannot have a custom slice at all (not Linux 6.12+). */
export type SliceResult =
  | { readonly ok: true; readonly sliceMs: number }
  | { readonly ok: false; readonly reason: string; readonly unsupported: boolean };

export interface SystemInfo {
  readonly platform: string;
  readonly arch: string;
  /** The kernel release, as os.release() gives it ("6.12.9-amd64"). */
  readonly release: string;
}

/** Why a system cannot give a thread a custom slice (this one by default), or undefined when it can. */
export function sliceUnsupported(system: SystemInfo = { platform: process.platform, arch: process.arch, release: release() }): string | undefined {
  if (system.platform !== 'linux') return `not on ${system.platform}`;
  if (SCHED_SETATTR[system.arch] === undefined) return `no sched_setattr number for ${system.arch}`;
  const [major = 0, minor = 0] = system.release.split(/[.-]/).map(Number);
  if (major < 6 || (major === 6 && minor < 12)) return `custom slices need Linux 6.12 or later, not ${system.release}`;
  return undefined;
}

/**
 * Gives the calling thread a scheduler slice of `sliceMs` (MIN_SLICE_MS to MAX_SLICE_MS; 0 goes
 * back to the kernel's default), and answers the slice now in force (as the kernel shows it, where
 * it does: /proc/thread-self/sched) or why it could not be set.
 */
export function requestSlice(sliceMs: number): SliceResult {
  const unsupported = sliceUnsupported();
  if (unsupported !== undefined) return { ok: false, reason: unsupported, unsupported: true };
  if (!isSliceMs(sliceMs)) {
    return { ok: false, reason: `a slice is 0 or ${MIN_SLICE_MS}-${MAX_SLICE_MS} ms, not ${sliceMs}`, unsupported: false };
  }
  const self = currentThreadId();
  if ('reason' in self) return { ok: false, reason: self.reason, unsupported: false };
  const ns = Math.round(sliceMs * 1e6);
  try {
    const args = [String(SCHED_SETATTR[process.arch]), self.tid, String(getPriority(Number(self.tid))), String(ns)];
    execFileSync('perl', ['-e', SET_SLICE_PERL, ...args], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 5000 });
  } catch (err) {
    return { ok: false, reason: `perl failed: ${stderrOf(err)}`, unsupported: false };
  }
  const shown = shownSliceNs();
  if (shown === undefined) return { ok: true, sliceMs };
  if (ns !== 0 && shown !== ns) return { ok: false, reason: `the kernel kept a slice of ${shown / 1e6} ms`, unsupported: false };
  return { ok: true, sliceMs: shown / 1e6 };
}

/** The calling thread's slice in ns, where the kernel shows it (scheduler debugging built in). */
function shownSliceNs(): number | undefined {
  try {
    const match = /^se\.slice\s*:\s*(\d+)/m.exec(readFileSync('/proc/thread-self/sched', 'utf8'));
    return match === null ? undefined : Number(match[1]);
  } catch {
    return undefined;
  }
}

function currentThreadId(): { readonly tid: string } | { readonly reason: string } {
  try {
    return { tid: readlinkSync('/proc/thread-self').split('/').pop() ?? '' };
  } catch (err) {
    return { reason: `no thread id: ${(err as Error).message}` };
  }
}

function stderrOf(err: unknown): string {
  const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
  return stderr !== undefined && stderr !== '' ? stderr : (err as Error).message;
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
