// Puts the calling thread under Linux's SCHED_IDLE policy: it then runs only on a core nothing
// else wants, and a waking event loop takes the core back at once. A nice value alone does not do
// that: the scheduler lets a running thread finish its slice (milliseconds) whatever its weight.
// Node has no binding for sched_setscheduler(2), so this asks util-linux's chrt, present on every
// Debian; the thread identifies itself through /proc/thread-self.
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
