// The check-runner thread's loop: each probe runs once per interval (the first after a random
// stagger within it, as Consul does), one at a time per check, and reports only when the status
// or the output it would report changed. A target that hangs holds its own timeout timer, nothing more.
import { createSecureContext, type SecureContext } from 'node:tls';
import type { HealthStatus } from '../model.js';
import type { ProbeSpec } from '../probe-protocol.js';
import { grpcProbe } from './grpc-probe.js';
import { httpProbe } from './http-probe.js';
import type { ProbeResult } from './output.js';
import { StatusThreshold } from './status-threshold.js';
import { tcpProbe } from './tcp-probe.js';

export type Report = (id: string, status: HealthStatus, output: string) => void;

/** The roots a TLS probe verifies against; undefined: Node's (the system's) roots. */
type Probe = (spec: ProbeSpec, roots: SecureContext | undefined) => Promise<ProbeResult>;

const PROBES: Record<ProbeSpec['kind'], Probe> = {
  http: httpProbe,
  tcp: tcpProbe,
  grpc: grpcProbe,
};

interface Running {
  readonly spec: ProbeSpec;
  readonly threshold: StatusThreshold;
  status: HealthStatus;
  output: string;
  timer: ReturnType<typeof setTimeout> | undefined;
  stopped: boolean;
}

export interface SchedulerOptions {
  readonly random?: () => number;
  /** The agent's CA (PEM), the only roots of HTTP and gRPC checks when set. */
  readonly caPem?: string | undefined;
}

export class ProbeScheduler {
  private readonly running = new Map<string, Running>();
  private readonly random: () => number;
  /** Built once per CA: a context per probe would parse the CA again on every request. */
  private roots: SecureContext | undefined;

  constructor(
    private readonly report: Report,
    options: SchedulerOptions = {},
  ) {
    this.random = options.random ?? Math.random;
    this.trust(options.caPem);
  }

  /** The roots of every later HTTP and gRPC probe: this CA (PEM) alone, or the system's. */
  trust(caPem: string | undefined): void {
    this.roots = caPem === undefined ? undefined : createSecureContext({ ca: caPem });
  }

  get size(): number {
    return this.running.size;
  }

  set(id: string, spec: ProbeSpec): void {
    this.remove(id);
    const entry: Running = {
      spec,
      threshold: new StatusThreshold(spec),
      status: spec.initialStatus,
      output: '',
      timer: undefined,
      stopped: false,
    };
    this.running.set(id, entry);
    this.schedule(id, entry, Math.floor(this.random() * spec.intervalMs));
  }

  remove(id: string): void {
    const entry = this.running.get(id);
    if (entry === undefined) return;
    entry.stopped = true;
    clearTimeout(entry.timer);
    this.running.delete(id);
  }

  stopAll(): void {
    for (const id of [...this.running.keys()]) this.remove(id);
  }

  private schedule(id: string, entry: Running, delayMs: number): void {
    entry.timer = setTimeout(() => void this.run(id, entry), delayMs);
  }

  private async run(id: string, entry: Running): Promise<void> {
    entry.timer = undefined;
    const result = await PROBES[entry.spec.kind](entry.spec, this.roots);
    if (entry.stopped) return;
    const status = entry.threshold.next(result.status);
    if (status !== undefined && (status !== entry.status || result.output !== entry.output)) {
      entry.status = status;
      entry.output = result.output;
      this.report(id, status, result.output);
    }
    this.schedule(id, entry, entry.spec.intervalMs);
  }
}
