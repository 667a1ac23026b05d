// Runs the local checks: TTL timers and alias checks here on the main thread (a timer each, and
// a walk of local state), HTTP, TCP and gRPC probes on the check-runner thread (ProbeRunner), and
// Consul's DeregisterCriticalServiceAfter. It follows LocalState's events and writes results back
// through LocalState.updateCheck.
import type { Clock, TimerHandle } from '../core/clock.js';
import { agentError } from '../core/errors.js';
import type { LocalEvent, LocalState } from './local-state.js';
import { DEFAULT_OUTPUT_MAX_SIZE, type HealthStatus, type LocalCheck } from './model.js';
import type { ProbeRunner, ProbeSpec } from './probe-protocol.js';

export interface SupervisorOptions {
  readonly clock: Clock;
  /** Absent: HTTP, TCP and gRPC checks keep the status they were registered with. */
  readonly runner?: ProbeRunner | undefined;
  /** The agent's check_output_max_size: the default for checks that set no OutputMaxSize. */
  readonly outputMaxSize?: number;
}

interface TtlState {
  timer: TimerHandle;
  lastOutput: string;
}

export class CheckSupervisor {
  private readonly ttls = new Map<string, TtlState>();
  private readonly probes = new Set<string>();
  /** Alias check ID → the service it follows. */
  private readonly aliases = new Map<string, string>();
  private readonly reapers = new Map<string, TimerHandle>();
  private readonly unsubscribe: () => void;

  constructor(
    private readonly state: LocalState,
    private readonly options: SupervisorOptions,
  ) {
    options.runner?.onResult((id, status, output) => this.state.updateCheck(id, status, output));
    this.unsubscribe = state.onChange((event) => this.follow(event));
    for (const check of state.checks()) this.start(check);
    this.evaluateAliases(undefined);
  }

  /**
   * A TTL check's update (pass, warn, fail, update): the status and the output, cut to the
   * check's size as Consul does, and the TTL restarted.
   */
  updateTtl(id: string, status: HealthStatus, output: string): void {
    const check = this.state.check(id);
    if (check === undefined) throw agentError('CHECK_UNKNOWN', { id });
    const ttl = this.ttls.get(id);
    if (ttl === undefined) throw agentError('CHECK_NOT_TTL', { id });
    const max = this.maxOutput(check);
    const total = Buffer.byteLength(output);
    const kept =
      total > max
        ? `${Buffer.from(output).subarray(0, max).toString()} ... (captured ${max} of ${total} bytes)`
        : output;
    ttl.timer.cancel();
    ttl.lastOutput = kept;
    ttl.timer = this.ttlTimer(check);
    this.state.updateCheck(id, status, kept);
  }

  close(): void {
    this.unsubscribe();
    for (const ttl of this.ttls.values()) ttl.timer.cancel();
    for (const timer of this.reapers.values()) timer.cancel();
    this.ttls.clear();
    this.reapers.clear();
  }

  /** Alias checks are evaluated again only for the service a change touched (all for a node check's). */
  private follow(event: LocalEvent): void {
    const scope = (serviceId: string): string | undefined => (serviceId === '' ? undefined : serviceId);
    switch (event.type) {
      case 'check-registered':
        this.start(event.check);
        if (event.check.type === 'alias') this.evaluateAlias(event.check.checkId);
        this.evaluateAliases(scope(event.check.serviceId));
        return;
      case 'check-deregistered':
        this.stop(event.checkId);
        this.evaluateAliases(undefined);
        return;
      case 'check-status':
        this.watchCritical(event.check);
        this.evaluateAliases(scope(event.check.serviceId));
        return;
      case 'check-output':
        return;
      case 'service-registered':
        this.evaluateAliases(event.service.id);
        return;
      case 'service-deregistered':
        this.evaluateAliases(event.serviceId);
        return;
    }
  }

  private start(check: LocalCheck): void {
    if (check.type === 'ttl') {
      const state: TtlState = { timer: this.ttlTimer(check), lastOutput: check.output };
      this.ttls.set(check.checkId, state);
    } else if (check.type === 'alias') {
      this.aliases.set(check.checkId, check.spec.aliasService);
    } else if ((check.type === 'http' || check.type === 'tcp' || check.type === 'grpc') && this.options.runner) {
      this.probes.add(check.checkId);
      this.options.runner.set(check.checkId, this.probeSpec(check));
    }
    this.watchCritical(check);
  }

  private stop(id: string): void {
    this.ttls.get(id)?.timer.cancel();
    this.ttls.delete(id);
    this.aliases.delete(id);
    if (this.probes.delete(id)) this.options.runner?.remove(id);
    this.reapers.get(id)?.cancel();
    this.reapers.delete(id);
  }

  private ttlTimer(check: LocalCheck): TimerHandle {
    return this.options.clock.setTimer(check.spec.ttlMs, () => {
      const ttl = this.ttls.get(check.checkId);
      if (ttl === undefined) return;
      const output =
        ttl.lastOutput === '' ? 'TTL expired' : `TTL expired (last output before timeout follows): ${ttl.lastOutput}`;
      this.state.updateCheck(check.checkId, 'critical', output);
    });
  }

  /** DeregisterCriticalServiceAfter: the service goes once its check has been critical that long. */
  private watchCritical(check: LocalCheck): void {
    const after = check.spec.deregisterCriticalServiceAfterMs;
    if (after <= 0 || check.serviceId === '') return;
    const pending = this.reapers.get(check.checkId);
    if (check.status !== 'critical') {
      pending?.cancel();
      this.reapers.delete(check.checkId);
      return;
    }
    if (pending !== undefined) return;
    const serviceId = check.serviceId;
    this.reapers.set(
      check.checkId,
      this.options.clock.setTimer(after, () => {
        this.reapers.delete(check.checkId);
        if (this.state.check(check.checkId)?.status === 'critical') this.state.removeService(serviceId);
      }),
    );
  }

  /** The alias checks following `serviceId` (every one when undefined). */
  private evaluateAliases(serviceId: string | undefined): void {
    for (const [id, target] of this.aliases)
      if (serviceId === undefined || target === serviceId) this.evaluateAlias(id);
  }

  /** Consul's CheckAlias over local state: the worst of the service's checks and the node's. */
  private evaluateAlias(id: string): void {
    const alias = this.state.check(id);
    if (alias === undefined) return;
    const { status, output } = this.aliasResult(alias);
    this.state.updateCheck(id, status, output);
  }

  private aliasResult(alias: LocalCheck): { status: HealthStatus; output: string } {
    const serviceId = alias.spec.aliasService;
    const node = this.state.nodeName;
    if (alias.spec.aliasNode !== '' && alias.spec.aliasNode !== node) {
      return { status: 'critical', output: `Node ${alias.spec.aliasNode} could not be found` };
    }
    let status: HealthStatus = 'passing';
    let output = 'No checks found.';
    for (const check of this.state.checks()) {
      if (check.checkId === alias.checkId || this.aliases.has(check.checkId)) continue;
      if (check.serviceId !== '' && check.serviceId !== serviceId) continue;
      if (check.status === 'critical' || check.status === 'warning') {
        status = check.status;
        output = `Aliased check ${JSON.stringify(check.name)} failing: ${check.output}`;
        if (check.status === 'critical') break;
      } else if (status === 'passing') {
        output = 'All checks passing.';
      }
    }
    if (serviceId !== '' && this.state.service(serviceId) === undefined) {
      return { status: 'critical', output: `Service ${serviceId} could not be found on node ${node}` };
    }
    return { status, output };
  }

  /**
   * The check's OutputMaxSize, else the agent's check_output_max_size; at most Consul's default
   * 4 KiB (docs/decisions.md#size-limits): every agent's view holds every check's output.
   */
  private maxOutput(check: LocalCheck): number {
    const asked =
      check.spec.outputMaxSize > 0 ? check.spec.outputMaxSize : (this.options.outputMaxSize ?? DEFAULT_OUTPUT_MAX_SIZE);
    return Math.min(asked, DEFAULT_OUTPUT_MAX_SIZE);
  }

  private probeSpec(check: LocalCheck): ProbeSpec {
    const s = check.spec;
    const kind = check.type as 'http' | 'tcp' | 'grpc';
    return {
      kind,
      target: kind === 'http' ? s.http : kind === 'tcp' ? s.tcp : s.grpc,
      method: s.method,
      header: s.header,
      body: s.body,
      disableRedirects: s.disableRedirects,
      useTls: s.grpcUseTls,
      tlsServerName: s.tlsServerName,
      tlsSkipVerify: s.tlsSkipVerify,
      intervalMs: s.intervalMs,
      timeoutMs: s.timeoutMs,
      outputMaxSize: this.maxOutput(check),
      successBeforePassing: s.successBeforePassing,
      failuresBeforeWarning: s.failuresBeforeWarning,
      failuresBeforeCritical: s.failuresBeforeCritical,
      initialStatus: check.status,
    };
  }
}
