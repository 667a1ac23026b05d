// Waits that give up when an AbortSignal aborts: the lock's interrupts and -timeout reach every
// blocking read and pause through one signal, as the stop channels of Consul's api/lock.go do.
import { setTimeout as sleep } from 'node:timers/promises';

/** `work`'s value, or undefined once `signal` aborts first (the request is left to finish unread). */
export function unless<T>(work: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const abort = (): void => resolve(undefined);
    signal.addEventListener('abort', abort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', abort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', abort);
        reject(err as Error);
      },
    );
  });
}

/** True after `ms`, false if `signal` aborted first. */
export const pause = (ms: number, signal: AbortSignal): Promise<boolean> =>
  sleep(ms, true, { signal }).catch(() => false);
