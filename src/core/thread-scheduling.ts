// How the agent's threads share the CPU. A signing thread enters Linux's SCHED_IDLE policy: it then
// runs only on a core nothing else wants, and a waking event loop takes the core back at once (a
// nice value alone does not do that: the scheduler lets a running thread finish its slice,
// milliseconds, whatever its weight); and it pauses within a batch, so that a core it was given
// over a busy event loop comes back within a millisecond. The event loop asks for a short slice
// (EEVDF, Linux 6.12+): waking, it may then preempt a running thread of normal priority (V8's GC
// helpers above all) instead of waiting for the next tick. Node binds neither sched_setscheduler(2)
// nor sched_setattr(2): the first goes through util-linux's chrt, the second through perl's
// syscall (perl-base), both on every Debian. A thread names itself by /proc/thread-self.
import { execFileSync } from 'node:child_process';
import { readFileSync, readlinkSync } from 'node:fs';
import { getPriority, release } from 'node:os';

/** `'idle'` when the thread now runs under SCHED_IDLE, otherwise why not. */
export function enterIdleScheduling(): string {
  if (process.platform !== 'linux') return `not on ${process.platform}`;
  const self = currentThreadId();
  if ('reason' in self) return self.reason;
  try {
    execFileSync('chrt', ['--idle', '--pid', '0', self.tid], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 5000 });
    return 'idle';
  } catch (err) {
    return `chrt failed: ${stderrOf(err)}`;
  }
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
