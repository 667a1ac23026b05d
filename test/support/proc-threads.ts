// A process's threads as the Linux kernel shows them in /proc/<pid>/task/<tid>/stat: each one's
// nice value (field 19) and scheduling policy (field 41; 0 is SCHED_OTHER, the default).
import { readdirSync, readFileSync } from 'node:fs';

export interface ThreadPriority {
  readonly tid: number;
  readonly nice: number;
  readonly policy: number;
}

/** The default policy, SCHED_OTHER. */
export const SCHED_OTHER = 0;

/** Whether this system shows threads this way. */
export const procThreadsAvailable = process.platform === 'linux' && readdirSafe('/proc/self/task') !== undefined;

/** One thread, or undefined once it has exited. */
export function threadPriority(pid: number, tid: number): ThreadPriority | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) may hold spaces and parentheses: the fields after it start past the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { tid, nice: Number(fields[19 - 3]), policy: Number(fields[41 - 3]) };
}

/** Every live thread of `pid`. */
export function threadPriorities(pid: number): ThreadPriority[] {
  return (readdirSafe(`/proc/${pid}/task`) ?? []).flatMap((tid) => threadPriority(pid, Number(tid)) ?? []);
}

function readdirSafe(path: string): string[] | undefined {
  try {
    return readdirSync(path);
  } catch {
    return undefined;
  }
}
