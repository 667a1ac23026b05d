// The check-runner thread's loop: each probe runs once per interval (the first after a random
// stagger within it, as Consul does), one at a time per check, and reports only when the status
// or the output it would report changed. A target that hangs holds its own timeout timer, nothing more.
import type { HealthStatus } from '../model.js';
import type { ProbeSpec } from '../probe-protocol.js';
import { grpcProbe } from './grpc-probe.js';
import { httpProbe } from './http-probe.js';
import type { ProbeResult } from './output.js';
import { StatusThreshold } from './status-threshold.js';
import { tcpProbe } from './tcp-probe.js';

export type Report = (id: string, status: HealthStatus, output: string) => void;

const PROBES: Record<ProbeSpec['kind'], (spec: ProbeSpec) => Promise<ProbeResult>> = {
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

export class ProbeScheduler {
  private readonly running = new Map<string, Running>();

  constructor(
    private readonly report: Report,
    private readonly random: () => number = Math.random,
  ) {}

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
    const result = await PROBES[entry.spec.kind](entry.spec);
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
