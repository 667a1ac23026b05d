// What the agent's /v1/agent/service/* and /v1/agent/check/* endpoints do, without HTTP: validate
// a registration as Consul does, register it in LocalState, run its checks (CheckSupervisor) and
// keep it in data_dir (LocalPersistence) before answering. ACL decisions stay with the caller,
// which knows the token; `sidecarName` tells it which name the sidecar will register under.
import { AgentError, agentError, isAgentError } from '../core/errors.js';
import { ConfigError } from '../config/errors.js';
import { blockOrigin } from '../config/registrations.js';
import { readCheckDefinition, readServiceDefinition } from './definition.js';
import { findUnknownKeys, snakeCase, type Raw, type UnknownKey } from './fields.js';
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
    vetService(def);
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
    vetCheck(def, (id) => this.state.service(id) !== undefined);
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
    return prepareRegistrations(registrations, {
      service: (def) => this.validateService(def),
      check: (def) => this.validateCheck(def),
    });
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
/**
 * The config files' service and check blocks, read and validated as the agent would at start
 * (`svc-agent validate`), but for whether a check's service is registered through the API.
 */
export function vetConfigRegistrations(registrations: ConfigRegistrations): void {
  prepareRegistrations(registrations, { service: vetService, check: (def) => vetCheck(def) });
}

/** Consul's checks of a service definition, then our size limits (413s): none needs the agent's state. */
function vetService(def: ServiceDefinition): void {
  validateService(def);
  for (const check of [...def.checks, ...(def.sidecarService?.checks ?? [])]) refuseUnrunnable(check);
  limitServiceDefinition(def);
}

/** The same of a check; `serviceExists`, when given, says whether its ServiceID is registered. */
function vetCheck(def: CheckDefinition, serviceExists?: (id: string) => boolean): void {
  if (def.name === '') throw agentError('CHECK_MISSING_NAME');
  if (def.status !== '' && !HEALTH_STATUSES.has(def.status)) throw agentError('CHECK_BAD_STATUS');
  const problem = checkProblem(def);
  if (problem !== undefined) throw agentError('CHECK_INVALID', { detail: problem });
  if (def.serviceId !== '' && serviceExists !== undefined && !serviceExists(def.serviceId))
    throw agentError('CHECK_SERVICE_UNKNOWN', { id: def.serviceId });
  limitCheckDefinition(def);
}

/** Reads the blocks, names every key no field reads, then validates each block with `vet`. */
function prepareRegistrations(
  registrations: ConfigRegistrations,
  vet: { service(def: ServiceDefinition): void; check(def: CheckDefinition): void },
): PreparedConfig {
  // A key no field reads first: the problems it causes (a check with no TTL) would only mislead.
  const unknown: string[] = [];
  const read = <T>(raw: Raw, kind: 'service' | 'check', i: number, decode: (raw: Raw) => T): T => {
    const { value, unknown: keys } = findUnknownKeys(() => named(blockLabel(raw, kind, i), () => decode(raw)));
    unknown.push(...keys.map((key) => unknownKeyLine(raw, kind, i, key)));
    return value;
  };
  const serviceDefs = registrations.services.map((raw, i) => read(raw, 'service', i, readServiceDefinition));
  const checkDefs = registrations.checks.map((raw, i) => read(raw, 'check', i, readCheckDefinition));
  if (unknown.length > 0) throw new ConfigError(unknown);
  const services = serviceDefs.map((def, i) =>
    named(blockLabel(registrations.services[i] ?? {}, 'service', i), () => {
      vet.service(def);
      return def;
    }),
  );
  const declared = new Set(services.map((s) => s.id || s.name));
  const checks = checkDefs.map((def, i) =>
    named(blockLabel(registrations.checks[i] ?? {}, 'check', i), () => {
      vet.check(def.serviceId !== '' && declared.has(def.serviceId) ? { ...def, serviceId: '' } : def);
      refuseUnrunnable(def);
      return def;
    }),
  );
  return { services, checks };
}

/**
 * `/etc/svc.d/web.hcl: service "web" (services[0]): invalid config key check.htp (did you mean
 * check.http?)`, in the spelling the block uses, as a top-level key's line reads.
 */
function unknownKeyLine(raw: Raw, kind: 'service' | 'check', i: number, key: UnknownKey): string {
  const snake = key.key === key.key.toLowerCase();
  const within = (name: string): string =>
    key.path === '' ? name : `${snake ? snakeCase(key.path) : key.path}.${name}`;
  const near = key.near === undefined ? '' : ` (did you mean ${within(key.near)}?)`;
  return `${blockLabel(raw, kind, i)}: invalid config key ${within(key.key)}${near}`;
}

/** `/etc/svc.d/web.hcl: service "web" (services[0])`: the file, the block's name and its place. */
function blockLabel(raw: Raw, kind: 'service' | 'check', i: number): string {
  const name = Object.entries(raw).find(([k, v]) => k.toLowerCase() === 'name' && typeof v === 'string')?.[1];
  const origin = blockOrigin(raw);
  const block = `${kind}${typeof name === 'string' ? ` ${JSON.stringify(name)}` : ''} (${kind}s[${i}])`;
  return origin === undefined ? block : `${origin}: ${block}`;
}

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
