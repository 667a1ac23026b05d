// One HTTP call of a simulated client (a proxy's blocking read, a leaf request, a watcher) with the
// run's headers; failures come back as an Outcome's error kind rather than thrown.
import { setMaxListeners } from 'node:events';
import type { Target } from '../client/api.js';
import type { HttpTarget } from '../../loadgen/http-channel.js';

export interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

export type CallResult = { readonly reply: Reply } | { readonly error: string };

export async function call(
  target: Target,
  method: string,
  path: string,
  headers: Readonly<Record<string, string>>,
  body?: string,
  signal?: AbortSignal,
): Promise<CallResult> {
  try {
    const res = await fetch(`${target.base}${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body }),
      ...(signal === undefined ? {} : { signal }),
    });
    return { reply: { status: res.status, headers: res.headers, text: await res.text() } };
  } catch (err) {
    if ((err as Error).name === 'AbortError') return { error: 'aborted' };
    const code = (err as { cause?: { code?: string } }).cause?.code;
    return {
      error:
        code === 'ECONNREFUSED'
          ? 'refused'
          : code === 'ECONNRESET' || code === 'UND_ERR_SOCKET'
            ? 'reset'
            : (code ?? 'failed'),
    };
  }
}

/** Waits `ms`, or less when the run is stopped. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done);
  });
}

/**
 * A controller aborted with `parent` too (a scenario's, under the run's Ctrl-C; a simulated
 * client's, under its scenario's). Every client listens to its scenario's signal, so no listener
 * limit; each call and pause listens to its own client's: an EventTarget's listeners are a list,
 * so thousands on one signal made every call cost a scan (the generator's event loop was the limit
 * at 1,000 proxies).
 */
export function childAborter(parent: AbortSignal): AbortController {
  const child = new AbortController();
  setMaxListeners(0, child.signal);
  if (parent.aborted) child.abort();
  else parent.addEventListener('abort', () => child.abort(), { once: true });
  return child;
}

/** A simulated client's signal, aborted with its scenario's. */
export function clientSignal(parent: AbortSignal): AbortSignal {
  return childAborter(parent).signal;
}

/** The host and port of a target, for the generator's own HTTP client. */
export function hostPortOf(target: Target): HttpTarget {
  const url = new URL(target.base);
  return { host: url.hostname, port: Number(url.port || 80) };
}
