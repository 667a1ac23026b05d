// How a leaf-signing thread gives way to the event loop: it raises its own nice value, so that the
// kernel gives it a smaller share of a core that both want. Only on Linux is a nice value per
// thread; elsewhere setpriority(2) on the calling "process" would lower the whole agent, event
// loop included, so there the threads keep the process's priority. Anything beyond this (a
// scheduling policy, CPU affinity) is the operator's, for the whole service (README, "CPU policy").
import { getPriority, setPriority } from 'node:os';
import { readlinkSync } from 'node:fs';

/** `'low'`: nice +10 over the process's, clamped at 19; `'normal'`: the process's own. */
export type SigningPriority = 'low' | 'normal';

/** Nice +10 weighs a thread at about a tenth of a nice-0 one (the kernel's weight table). */
export const LOW_NICE_INCREMENT = 10;
const LOWEST_PRIORITY_NICE = 19;

/** How a signing thread runs, as the thread itself reads it. */
export interface SigningThreadReport {
  /** The priority in force. */
  readonly priority: SigningPriority;
  /** The thread's nice value. */
  readonly nice: number;
  /** The thread's kernel id, where the system shows it (Linux). */
  readonly tid: number | undefined;
  /** Why the thread keeps the process's priority although 'low' was asked; undefined otherwise. */
  readonly reason: string | undefined;
}

/** Applies `wanted` to the calling thread, once, at its start; answers what is in force. */
export function enterSigningPriority(
  wanted: SigningPriority,
  platform: NodeJS.Platform = process.platform,
): SigningThreadReport {
  const tid = platform === 'linux' ? ownThreadId() : undefined;
  if (wanted === 'normal') return { priority: 'normal', nice: getPriority(), tid, reason: undefined };
  if (platform !== 'linux')
    return {
      priority: 'normal',
      nice: getPriority(),
      tid,
      reason: `a nice value applies to the whole process on ${platform}`,
    };
  try {
    setPriority(Math.min(LOWEST_PRIORITY_NICE, getPriority() + LOW_NICE_INCREMENT));
  } catch (err) {
    return { priority: 'normal', nice: getPriority(), tid, reason: `setpriority failed: ${(err as Error).message}` };
  }
  return { priority: 'low', nice: getPriority(), tid, reason: undefined };
}

function ownThreadId(): number | undefined {
  try {
    return Number(readlinkSync('/proc/thread-self').split('/').pop());
  } catch {
    return undefined;
  }
}
