// The agent's local services and checks: what was registered on this agent (API, config files,
// data_dir), the status of each check, and the events that anti-entropy and blocking reads follow.
//
// For anti-entropy (local -> catalog), read `snapshot()` for the whole picture and subscribe with
// `onChange(listener)`: each event says what changed, and a check's status change
// (`check-status`) is told apart from an output-only change (`check-output`), so a sync can write
// status changes at once and batch output changes (Consul's check_update_interval). Listeners run
// synchronously after the change; they must not throw and should defer heavy work.
import { OUTPUT_MAX } from '../catalog/limits.js';
import { agentError } from '../core/errors.js';
import { cutUtf8 } from '../core/size-limits.js';
import {
  checkTypeOf,
  type CheckDefinition,
  type CheckSpec,
  type HealthStatus,
  type LocalCheck,
  type LocalService,
  type RegistrationSource,
  type ServiceDefinition,
} from './model.js';
import { emptyCheckSpec } from './check-spec.js';
import { DEFAULT_SIDECAR_PORTS, sidecarDefinition, type SidecarPortRange } from './sidecar.js';

export type LocalEvent =
  | { readonly type: 'service-registered'; readonly service: LocalService }
  | { readonly type: 'service-deregistered'; readonly serviceId: string }
  | { readonly type: 'check-registered'; readonly check: LocalCheck }
  | { readonly type: 'check-deregistered'; readonly checkId: string }
  | { readonly type: 'check-status'; readonly check: LocalCheck; readonly previous: HealthStatus }
  | { readonly type: 'check-output'; readonly check: LocalCheck };

export type LocalListener = (event: LocalEvent) => void;

export interface LocalSnapshot {
  readonly services: readonly LocalService[];
  readonly checks: readonly LocalCheck[];
}

export interface AddServiceOptions {
  /** Drop the service's checks that this registration does not list (`?replace-existing-checks`). */
  readonly replaceExistingChecks?: boolean;
  readonly source?: RegistrationSource;
}

export const MAINTENANCE_PREFIX = '_service_maintenance:';
export const NODE_MAINTENANCE_ID = '_node_maintenance';
const MAINTENANCE_NOTE =
  'Maintenance mode is enabled for this service, but no reason was provided. This is a default message.';
const NODE_MAINTENANCE_NOTE =
  'Maintenance mode is enabled for this node, but no reason was provided. This is a default message.';

export class LocalState {
  private readonly serviceMap = new Map<string, LocalService>();
  private readonly checkMap = new Map<string, LocalCheck>();
  /** Per service, bumped when its content changes or it goes: what a hash-blocking read waits on. */
  private readonly versions = new Map<string, number>();
  private version = 0;
  private readonly listeners = new Set<LocalListener>();
  private readonly serviceWatches = new Map<string, Set<() => void>>();

  constructor(
    readonly nodeName: string,
    private readonly sidecarPorts: SidecarPortRange = DEFAULT_SIDECAR_PORTS,
  ) {}

  onChange(listener: LocalListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  snapshot(): LocalSnapshot {
    return { services: [...this.serviceMap.values()], checks: [...this.checkMap.values()] };
  }

  service(id: string): LocalService | undefined {
    return this.serviceMap.get(id);
  }

  services(): IterableIterator<LocalService> {
    return this.serviceMap.values();
  }

  servicesByName(name: string): LocalService[] {
    return [...this.serviceMap.values()].filter((s) => s.service === name);
  }

  check(id: string): LocalCheck | undefined {
    return this.checkMap.get(id);
  }

  checks(): IterableIterator<LocalCheck> {
    return this.checkMap.values();
  }

  checksOf(serviceId: string): LocalCheck[] {
    return [...this.checkMap.values()].filter((c) => c.serviceId === serviceId);
  }

  /** The version of a service's content; 0 for one never registered. */
  serviceVersion(id: string): number {
    return this.versions.get(id) ?? 0;
  }

  /** Calls `fn` once, at the next change of the service (or its removal); returns the cancel. */
  watchService(id: string, fn: () => void): () => void {
    let set = this.serviceWatches.get(id);
    if (set === undefined) this.serviceWatches.set(id, (set = new Set()));
    const once = (): void => fn();
    set.add(once);
    return () => {
      set.delete(once);
      if (set.size === 0 && this.serviceWatches.get(id) === set) this.serviceWatches.delete(id);
    };
  }

  /**
   * Registers (or replaces) a service, its checks and its sidecar; returns what was registered,
   * the service first. Validation is the caller's (validate.ts); this raises only what needs the
   * state (no sidecar port left).
   */
  addService(def: ServiceDefinition, options: AddServiceOptions = {}): LocalService[] {
    const source = options.source ?? 'api';
    const service = toLocalService(def, source, undefined);
    const sidecar =
      def.sidecarService === undefined
        ? undefined
        : sidecarDefinition(service, def.sidecarService, this.sidecarPorts, this.serviceMap.values());
    this.putService(service, def.checks, options.replaceExistingChecks ?? false);
    if (sidecar === undefined) {
      // The nested definition owns its sidecar: a registration without one removes it.
      for (const other of [...this.serviceMap.values()])
        if (other.sidecarOf === service.id) this.removeService(other.id);
      return [service];
    }
    const proxy = toLocalService(sidecar, source, service.id);
    this.putService(proxy, sidecar.checks, options.replaceExistingChecks ?? false);
    return [service, proxy];
  }

  /** Removes a service, its checks and the sidecar registered with it; false when unknown. */
  removeService(id: string): boolean {
    const service = this.serviceMap.get(id);
    if (service === undefined) return false;
    for (const check of this.checksOf(id)) this.dropCheck(check.checkId);
    this.serviceMap.delete(id);
    this.bump(id);
    this.emit({ type: 'service-deregistered', serviceId: id });
    for (const other of [...this.serviceMap.values()]) if (other.sidecarOf === id) this.removeService(other.id);
    return true;
  }

  /** Registers a standalone check (a node check, or one on a registered service). */
  addCheck(def: CheckDefinition, source: RegistrationSource = 'api'): LocalCheck {
    let service: LocalService | undefined;
    if (def.serviceId !== '') {
      service = this.serviceMap.get(def.serviceId);
      if (service === undefined) throw agentError('CHECK_SERVICE_UNKNOWN', { id: def.serviceId });
    }
    const check = toLocalCheck(def.checkId || def.name, def, service, source);
    this.putCheck(check);
    return check;
  }

  removeCheck(id: string): boolean {
    if (!this.checkMap.has(id)) return false;
    this.dropCheck(id);
    return true;
  }

  /**
   * Sets a check's status and output (a TTL update, a probe's result); emits `check-status` when
   * the status changed, `check-output` when only the output did, nothing otherwise. An output is
   * kept to the catalog's limit (docs/decisions.md#size-limits), which only an alias of an alias
   * of … can reach, so that anti-entropy never writes one the catalog refuses.
   */
  updateCheck(id: string, status: HealthStatus, given: string): void {
    const check = this.checkMap.get(id);
    if (check === undefined) return;
    const output = cutUtf8(given, OUTPUT_MAX);
    if (check.status === status && check.output === output) return;
    const next: LocalCheck = { ...check, status, output };
    this.checkMap.set(id, next);
    if (check.status !== status) this.emit({ type: 'check-status', check: next, previous: check.status });
    else this.emit({ type: 'check-output', check: next });
  }

  /** Consul's service maintenance: a critical `_service_maintenance:<id>` check while enabled. */
  setMaintenance(serviceId: string, enable: boolean, reason: string): void {
    const service = this.serviceMap.get(serviceId);
    if (service === undefined) throw agentError('SERVICE_MAINTENANCE_UNKNOWN', { id: serviceId });
    this.toggleMaintenance(MAINTENANCE_PREFIX + serviceId, enable, {
      name: 'Service Maintenance Mode',
      notes: reason !== '' ? reason : MAINTENANCE_NOTE,
      serviceId,
      serviceName: service.service,
      serviceTags: service.tags,
    });
  }

  /** Consul's node maintenance: a critical node check `_node_maintenance` while enabled. */
  setNodeMaintenance(enable: boolean, reason: string): void {
    this.toggleMaintenance(NODE_MAINTENANCE_ID, enable, {
      name: 'Node Maintenance Mode',
      notes: reason !== '' ? reason : NODE_MAINTENANCE_NOTE,
      serviceId: '',
      serviceName: '',
      serviceTags: [],
    });
  }

  /** Adds the critical maintenance check `checkId` (kept as it is if already there), or removes it. */
  private toggleMaintenance(
    checkId: string,
    enable: boolean,
    check: Pick<LocalCheck, 'name' | 'notes' | 'serviceId' | 'serviceName' | 'serviceTags'>,
  ): void {
    if (!enable) {
      this.removeCheck(checkId);
      return;
    }
    if (this.checkMap.has(checkId)) return;
    this.putCheck({
      checkId,
      name: check.name,
      status: 'critical',
      notes: check.notes,
      output: '',
      serviceId: check.serviceId,
      serviceName: check.serviceName,
      serviceTags: check.serviceTags,
      type: 'maintenance',
      spec: emptyCheckSpec(),
      source: 'api',
    });
  }

  /** Restores what was saved in data_dir (persistence.ts), as it was. */
  restore(services: readonly LocalService[], checks: readonly LocalCheck[]): void {
    for (const service of services) this.putService(service, [], false);
    for (const check of checks)
      if (check.serviceId === '' || this.serviceMap.has(check.serviceId)) this.putCheck(check);
  }

  private putService(service: LocalService, specs: readonly CheckSpec[], replaceExistingChecks: boolean): void {
    const previous = this.serviceMap.get(service.id);
    this.serviceMap.set(service.id, service);
    if (previous === undefined || JSON.stringify(previous) !== JSON.stringify(service)) this.bump(service.id);
    this.emit({ type: 'service-registered', service });
    const ids = new Set<string>();
    specs.forEach((spec, i) => {
      const id = serviceCheckId(service.id, specs, i);
      ids.add(id);
      const check = toLocalCheck(id, spec, service, service.source);
      // A re-registered check keeps the status and output it had (Consul's check state snapshot).
      const old = this.checkMap.get(id);
      this.putCheck(old === undefined ? check : { ...check, status: old.status, output: old.output });
    });
    if (replaceExistingChecks) {
      for (const check of this.checksOf(service.id)) {
        if (!ids.has(check.checkId) && !check.checkId.startsWith(MAINTENANCE_PREFIX)) this.dropCheck(check.checkId);
      }
    }
  }

  private putCheck(check: LocalCheck): void {
    if (this.checkMap.has(check.checkId)) this.dropCheck(check.checkId);
    this.checkMap.set(check.checkId, check);
    this.emit({ type: 'check-registered', check });
  }

  private dropCheck(id: string): void {
    this.checkMap.delete(id);
    this.emit({ type: 'check-deregistered', checkId: id });
  }

  private bump(serviceId: string): void {
    this.versions.set(serviceId, ++this.version);
    const watchers = this.serviceWatches.get(serviceId);
    if (watchers === undefined) return;
    this.serviceWatches.delete(serviceId);
    for (const fn of watchers) fn();
  }

  private emit(event: LocalEvent): void {
    for (const listener of this.listeners) listener(event);
  }
}

/** The ID of a service's `i`th check: its own, else Consul's `service:<id>` (`service:<id>:<n>` for one of several). */
export function serviceCheckId(serviceId: string, specs: readonly CheckSpec[], i: number): string {
  const own = specs[i]?.checkId ?? '';
  if (own !== '') return own;
  return specs.length > 1 ? `service:${serviceId}:${i + 1}` : `service:${serviceId}`;
}

export function toLocalService(
  def: ServiceDefinition,
  source: RegistrationSource,
  sidecarOf: string | undefined,
): LocalService {
  const weights = def.weights;
  return {
    kind: def.kind,
    id: def.id !== '' ? def.id : def.name,
    service: def.name,
    tags: [...def.tags],
    address: def.address,
    taggedAddresses: def.taggedAddresses,
    meta: { ...(def.meta ?? {}) },
    port: def.port,
    // Consul: a missing Weights is {1, 1}; a given one keeps its Warning and a Passing above 0.
    weights:
      weights === undefined ? { passing: 1, warning: 1 } : { passing: weights.passing || 1, warning: weights.warning },
    enableTagOverride: def.enableTagOverride,
    proxy: def.proxy,
    connectNative: def.connectNative,
    sidecarOf,
    source,
  };
}

export function toLocalCheck(
  id: string,
  spec: CheckSpec,
  service: LocalService | undefined,
  source: RegistrationSource,
): LocalCheck {
  const type = checkTypeOf(spec);
  return {
    checkId: id,
    name: spec.name !== '' ? spec.name : service === undefined ? id : `Service '${service.service}' check`,
    // Consul starts a check critical unless its definition says otherwise.
    status: spec.status !== '' ? (spec.status as HealthStatus) : 'critical',
    notes: spec.notes,
    output: '',
    serviceId: service?.id ?? '',
    serviceName: service?.service ?? '',
    serviceTags: service?.tags ?? [],
    type,
    spec: { ...spec, checkId: id },
    source,
  };
}
