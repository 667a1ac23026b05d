// What the agent's /v1/agent/service/* and /v1/agent/check/* endpoints do, without HTTP: validate
// a registration as Consul does, register it in LocalState, run its checks (CheckSupervisor) and
// keep it in data_dir (LocalPersistence) before answering. ACL decisions stay with the caller,
// which knows the token; `sidecarName` tells it which name the sidecar will register under.
import { AgentError, agentError, isAgentError } from '../core/errors.js';
import { readCheckDefinition, readServiceDefinition } from './definition.js';
import type { CheckSupervisor } from './check-supervisor.js';
import type { LocalPersistence } from './persistence.js';
import type { ProbeRunner } from './probe-protocol.js';
import { MAINTENANCE_PREFIX, NODE_MAINTENANCE_ID, type LocalState } from './local-state.js';
import {
  HEALTH_STATUSES,
  SIDECAR_SUFFIX,
  type CheckDefinition,
  type HealthStatus,
  type LocalCheck,
  type LocalService,
  type RegistrationSource,
  type ServiceDefinition,
} from './model.js';
import { limitCheckDefinition, limitMaintenanceReason, limitServiceDefinition } from './limits.js';
import { checkProblem, refuseUnrunnable, validateService } from './validate.js';

/** Consul's api.HealthChecks.AggregatedStatus, with 'maintenance' while a maintenance check is present. */
export type AggregatedStatus = HealthStatus | 'maintenance';

export class LocalAgent {
  constructor(
    readonly state: LocalState,
    private readonly supervisor: CheckSupervisor,
    private readonly persistence: LocalPersistence | undefined,
    private readonly runner: ProbeRunner | undefined,
  ) {}

  /**
   * Validates a definition (400s) before any ACL is looked at, as Consul orders it; then our size
   * limits (413s, docs/decisions.md#size-limits).
   */
  validateService(def: ServiceDefinition): void {
    validateService(def);
    for (const check of [...def.checks, ...(def.sidecarService?.checks ?? [])]) refuseUnrunnable(check);
    limitServiceDefinition(def);
  }

  /** The name the sidecar of `def` registers under, if it has one (it needs service:write too). */
  sidecarName(def: ServiceDefinition): string | undefined {
    const sidecar = def.sidecarService;
    if (sidecar === undefined) return undefined;
    return sidecar.name !== '' ? sidecar.name : def.name + SIDECAR_SUFFIX;
  }

  async registerService(
    def: ServiceDefinition,
    options: { replaceExistingChecks?: boolean; source?: RegistrationSource } = {},
  ): Promise<LocalService[]> {
    this.validateService(def);
    const added = this.state.addService(def, options);
    await this.persist();
    return added;
  }

  /** Removes a service (and its sidecar); throws SERVICE_UNKNOWN for an ID not registered. */
  async deregisterService(id: string): Promise<void> {
    if (!this.state.removeService(id)) throw agentError('SERVICE_UNKNOWN', { id });
    await this.persist();
  }

  /** A service that must exist for an update (deregister, maintenance): Consul's vetServiceUpdate. */
  existingService(id: string): LocalService {
    const service = this.state.service(id);
    if (service === undefined) throw agentError('SERVICE_UNKNOWN', { id });
    return service;
  }

  /** Checks a standalone check's definition (400s, and 404 for an unknown ServiceID). */
  validateCheck(def: CheckDefinition): void {
    if (def.name === '') throw agentError('CHECK_MISSING_NAME');
    if (def.status !== '' && !HEALTH_STATUSES.has(def.status)) throw agentError('CHECK_BAD_STATUS');
    const problem = checkProblem(def);
    if (problem !== undefined) throw agentError('CHECK_INVALID', { detail: problem });
    if (def.serviceId !== '' && this.state.service(def.serviceId) === undefined)
      throw agentError('CHECK_SERVICE_UNKNOWN', { id: def.serviceId });
    limitCheckDefinition(def);
  }

  async registerCheck(def: CheckDefinition, source: RegistrationSource = 'api'): Promise<LocalCheck> {
    this.validateCheck(def);
    refuseUnrunnable(def);
    const check = this.state.addCheck(def, source);
    await this.persist();
    return check;
  }

  /** A check that must exist for an update: Consul's vetCheckUpdate. */
  existingCheck(id: string): LocalCheck {
    const check = this.state.check(id);
    if (check === undefined) throw agentError('CHECK_UNKNOWN', { id });
    return check;
  }

  async deregisterCheck(id: string): Promise<void> {
    this.existingCheck(id);
    this.state.removeCheck(id);
    await this.persist();
  }

  async updateTtl(id: string, status: HealthStatus, output: string): Promise<void> {
    this.supervisor.updateTtl(id, status, output);
    await this.persist();
  }

  async setMaintenance(id: string, enable: boolean, reason: string): Promise<void> {
    limitMaintenanceReason(reason);
    this.state.setMaintenance(id, enable, reason);
    await this.persist();
  }

  async setNodeMaintenance(enable: boolean, reason: string): Promise<void> {
    limitMaintenanceReason(reason);
    this.state.setNodeMaintenance(enable, reason);
    await this.persist();
  }

  /** A service's checks and the node's, and their aggregate (Consul's agentHealthService). */
  serviceHealth(id: string): { status: AggregatedStatus; checks: LocalCheck[] } {
    const checks = [...this.state.checks()].filter((c) => c.serviceId === id || c.serviceId === '');
    return { status: aggregate(checks), checks };
  }

  /**
   * Reads and validates the config files' service and check blocks (throws the first problem,
   * naming its block) without changing anything: a reload that fails changes nothing.
   */
  prepareConfig(registrations: ConfigRegistrations): PreparedConfig {
    const services = registrations.services.map((raw, i) =>
      named(`services[${i}]`, () => {
        const def = readServiceDefinition(raw);
        this.validateService(def);
        return def;
      }),
    );
    const declared = new Set(services.map((s) => s.id || s.name));
    const checks = registrations.checks.map((raw, i) =>
      named(`checks[${i}]`, () => {
        const def = readCheckDefinition(raw);
        if (def.serviceId !== '' && declared.has(def.serviceId)) this.validateCheck({ ...def, serviceId: '' });
        else this.validateCheck(def);
        refuseUnrunnable(def);
        return def;
      }),
    );
    return { services, checks };
  }

  /** Makes the config's registrations the config-sourced ones: new and changed added, dropped removed. */
  applyConfig(prepared: PreparedConfig): void {
    const serviceIds = new Set(prepared.services.map((s) => s.id || s.name));
    const checkIds = new Set(prepared.checks.map((c) => c.checkId || c.name));
    for (const service of [...this.state.services()])
      if (service.source === 'config' && service.sidecarOf === undefined && !serviceIds.has(service.id))
        this.state.removeService(service.id);
    for (const check of [...this.state.checks()])
      if (check.source === 'config' && check.serviceId === '' && !checkIds.has(check.checkId))
        this.state.removeCheck(check.checkId);
    for (const def of prepared.services) this.state.addService(def, { source: 'config', replaceExistingChecks: true });
    for (const def of prepared.checks) this.state.addCheck(def, 'config');
  }

  /** HTTP and gRPC checks verify TLS against this CA (PEM) from their next run; undefined: the system's roots. */
  trustCheckCa(caPem: string | undefined): void {
    this.runner?.trust(caPem);
  }

  /** Stops the checks and the runner thread, and writes the registrations a last time. */
  async close(): Promise<void> {
    this.supervisor.close();
    await this.runner?.close();
    await this.persistence?.close();
  }

  private persist(): Promise<void> {
    return this.persistence?.saveSoon(this.state) ?? Promise.resolve();
  }
}

export interface ConfigRegistrations {
  readonly services: readonly Readonly<Record<string, unknown>>[];
  readonly checks: readonly Readonly<Record<string, unknown>>[];
}

export interface PreparedConfig {
  readonly services: readonly ServiceDefinition[];
  readonly checks: readonly CheckDefinition[];
}

/** Runs `read`; an AgentError it raises names the config block it came from. */
function named<T>(block: string, read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (isAgentError(err)) throw new AgentError(err.code, `${block}: ${err.message}`, { cause: err });
    throw err;
  }
}

function aggregate(checks: readonly LocalCheck[]): AggregatedStatus {
  let maintenance = false;
  let critical = false;
  let warning = false;
  for (const check of checks) {
    if (check.checkId.startsWith(MAINTENANCE_PREFIX) || check.checkId === NODE_MAINTENANCE_ID) maintenance = true;
    else if (check.status === 'critical') critical = true;
    else if (check.status === 'warning') warning = true;
  }
  if (maintenance) return 'maintenance';
  if (critical) return 'critical';
  if (warning) return 'warning';
  return 'passing';
}
