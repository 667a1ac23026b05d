// What the lock and the semaphore share (Consul's api/lock.go and api/semaphore.go): the Holder the
// command drives (command/lock/lock.go's LockUnlock), their options, the wait of each blocking read,
// the key at `<prefix>/.lock` both use, the session around an acquire, and the watch on what is held
// (api's monitorLock).
import type { ApiClient } from '../api.js';
import { pause, unless } from './abortable.js';
import { retryable } from './errors.js';
import { Session } from './session.js';

/** api.DefaultSemaphoreKey: a lock and a semaphore at one prefix conflict on it, and say so. */
export const LOCK_KEY = '.lock';
/** api.DefaultLockWaitTime: how long one blocking read waits while another holds the lock. */
const WAIT_MS = 15_000;
/** Consul's defaultMonitorRetryTime: the pause before a watch read again after a 500. */
const MONITOR_RETRY_MS = 1_000;

export interface LockOptions {
  readonly name: string;
  /** 0: wait as long as it takes (Consul's one-shot mode when above 0). */
  readonly timeoutMs: number;
  readonly monitorRetries: number;
}

/** What the command does with a lock or a semaphore (Consul's LockUnlock). */
export interface Holder {
  /** Takes it: true once held, false when `stop` aborted first (interrupted, or -timeout passed). */
  acquire(stop: AbortSignal): Promise<boolean>;
  /** Resolves once it is no longer held, or can no longer be confirmed; or when `stop` aborts. */
  lost(stop: AbortSignal): Promise<void>;
  /** Gives it up and ends the session. */
  release(): Promise<void>;
  /** Removes the key unless someone else uses it (then `in use`). */
  cleanup(): Promise<'removed' | 'in use'>;
}

/** A read watched for as long as `holding` says so, with `retries` 500s ridden out in a row (api's monitorLock). */
export async function watch(
  read: (index: string | undefined) => Promise<{ index: string; holding: boolean }>,
  retries: number,
  stop: AbortSignal,
): Promise<void> {
  let index: string | undefined;
  let left = retries;
  for (;;) {
    let seen;
    try {
      seen = await unless(read(index), stop);
    } catch (err) {
      if (left > 0 && retryable(err)) {
        if (!(await pause(MONITOR_RETRY_MS, stop))) return;
        left--;
        index = undefined;
        continue;
      }
      return;
    }
    if (seen === undefined || !seen.holding) return;
    index = seen.index;
    left = retries;
  }
}

/** Creates the session and runs `take` under it; the session when that took the lock, else it is ended. */
export async function underSession(
  api: ApiClient,
  body: Readonly<Record<string, string>>,
  take: (session: string) => Promise<boolean>,
): Promise<Session | undefined> {
  const session = await Session.create(api, body);
  let held = false;
  try {
    held = await take(session.id);
  } finally {
    if (!held) await session.end();
  }
  return held ? session : undefined;
}

/** The wait of the next blocking read, or undefined once -timeout has passed (api's one-shot mode). */
export function nextWait(options: LockOptions, started: number, attempt: number): number | undefined {
  if (options.timeoutMs === 0) return WAIT_MS;
  if (attempt === 0) return options.timeoutMs;
  const elapsed = Date.now() - started;
  return elapsed > options.timeoutMs ? undefined : options.timeoutMs - elapsed;
}
