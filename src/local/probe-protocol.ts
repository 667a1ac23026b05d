// The messages between the agent's main thread and the check-runner thread
// (workers/check-runner.worker.ts): the main thread says which probes run, the thread answers only
// with status or output changes.
import type { HealthStatus } from './model.js';

/** What the thread needs to run one HTTP, TCP or gRPC check. Durations in milliseconds. */
export interface ProbeSpec {
  readonly kind: 'http' | 'tcp' | 'grpc';
  /** The URL (http), `host:port` (tcp), `host:port[/service]` (grpc). */
  readonly target: string;
  readonly method: string;
  readonly header: Readonly<Record<string, readonly string[]>>;
  readonly body: string;
  readonly disableRedirects: boolean;
  readonly useTls: boolean;
  readonly tlsServerName: string;
  readonly tlsSkipVerify: boolean;
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly outputMaxSize: number;
  readonly successBeforePassing: number;
  readonly failuresBeforeWarning: number;
  readonly failuresBeforeCritical: number;
  /** The status the check has now: thresholds count from it. */
  readonly initialStatus: HealthStatus;
}

/** What the thread starts with (its workerData), given once for every probe. */
export interface RunnerData {
  /**
   * The agent's CA file (PEM): HTTP and gRPC checks verify TLS against it alone, as Consul's
   * OutgoingTLSConfigForCheck does; undefined: the system roots.
   */
  readonly caPem: string | undefined;
}

export type ToRunner =
  | { readonly type: 'set'; readonly id: string; readonly probe: ProbeSpec }
  | { readonly type: 'remove'; readonly id: string }
  /** A reload's CA (its file read again): the roots of every later probe. */
  | { readonly type: 'trust'; readonly caPem: string | undefined };

export type FromRunner = {
  readonly type: 'result';
  readonly id: string;
  readonly status: HealthStatus;
  readonly output: string;
};

/** Runs probes somewhere (a worker thread) and reports changed results. */
export interface ProbeRunner {
  set(id: string, probe: ProbeSpec): void;
  remove(id: string): void;
  /** The CA every later TLS probe verifies against (PEM), or undefined for the system's roots. */
  trust(caPem: string | undefined): void;
  /** Registers the one receiver of results. */
  onResult(fn: (id: string, status: HealthStatus, output: string) => void): void;
  close(): Promise<void>;
}
