// One debug line per request, as Consul's agent writes it (`Request finished: method=GET
// url=/v1/kv/a?token=<hidden> from=127.0.0.1:53548 latency=...`), so an operator can see why a
// proxy's calls fail. Built only while debug is on; the token's value never reaches the line.
import type { Logger } from '../core/log.js';

export interface RequestTrace {
  readonly method: string;
  readonly url: string;
  readonly from: string;
  readonly startedMs: number;
}

export class RequestLog {
  private readonly log: Logger;

  constructor(log: Logger) {
    this.log = log.child({ component: 'agent.http' });
  }

  /** Checked per request: the level may change on reload. */
  get enabled(): boolean {
    return this.log.isLevelEnabled?.('debug') ?? false;
  }

  start(method: string, path: string, rawQuery: string, from: string): RequestTrace {
    return { method, url: rawQuery === '' ? path : `${path}?${hideToken(rawQuery)}`, from, startedMs: performance.now() };
  }

  finish(trace: RequestTrace, status: number): void {
    const latency = `${(performance.now() - trace.startedMs).toFixed(3)}ms`;
    this.log.debug({ method: trace.method, url: trace.url, status, from: trace.from, latency }, 'Request finished');
  }
}

/** Replaces every `token` parameter's value, as Consul logs it. */
export function hideToken(rawQuery: string): string {
  if (!rawQuery.includes('token')) return rawQuery;
  return rawQuery
    .split('&')
    .map((pair) => (pair === 'token' || pair.startsWith('token=') ? 'token=<hidden>' : pair))
    .join('&');
}
