// What the transports record per request: one debug line, as Consul's agent writes it (`Request
// finished: method=GET url=/v1/kv/a?token=<hidden> from=127.0.0.1:53548 latency=...`), so an
// operator can see why a proxy's calls fail, and the latency by route, method and status for
// Prometheus. Nothing is built while debug is off and Prometheus is disabled; the token's value
// never reaches the line.
// Imported, not the global: Node's global `performance` is a getter, a call on every use.
import { performance } from 'node:perf_hooks';
import type { Logger } from '../core/log.js';
import type { RequestRecorder } from '../core/prometheus.js';

export interface RequestTrace {
  /** The route pattern (`/v1/kv/`), not the path: a bounded label. */
  readonly route: string;
  readonly method: string;
  /** What only the debug line needs; read only while debug is on. */
  readonly line: DebugDetail | undefined;
  readonly startedMs: number;
}

export interface DebugDetail {
  readonly path: string;
  readonly rawQuery: string;
  /** The client's address. */
  readonly from: string;
}

export class RequestLog {
  private readonly log: Logger;

  constructor(
    log: Logger,
    private readonly record: RequestRecorder | undefined,
  ) {
    this.log = log.child({ component: 'agent.http' });
  }

  /** Checked per request: the log level may change on reload. */
  get enabled(): boolean {
    return this.record !== undefined || this.debug;
  }

  /** Whether the debug line is written: the transport then hands `start` its detail. */
  get debug(): boolean {
    return this.log.isLevelEnabled?.('debug') ?? false;
  }

  start(route: string, method: string, line: DebugDetail | undefined): RequestTrace {
    return { route, method, line, startedMs: performance.now() };
  }

  finish(trace: RequestTrace, status: number): void {
    const ms = performance.now() - trace.startedMs;
    this.record?.(trace.route, trace.method, status, ms / 1000);
    const line = trace.line;
    if (line === undefined) return;
    const url = line.rawQuery === '' ? line.path : `${line.path}?${hideToken(line.rawQuery)}`;
    this.log.debug(
      { method: trace.method, url, status, from: line.from, latency: `${ms.toFixed(3)}ms` },
      'Request finished',
    );
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
