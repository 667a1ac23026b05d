// Catalog.Register and Catalog.Deregister as Consul's servers apply them: defaults filled in, the
// request checked, the ACL vetted (node:write, service:write), and the node's next state built.
import { requirePermission, type Identity } from '../acl/identity.js';
import { isDeepStrictEqual } from 'node:util';
import { agentError } from '../core/errors.js';
import { limitCheck, limitNode, limitService } from './limits.js';
import {
  CHECK_STATUSES,
  sortedRecord,
  type CheckStatus,
  type StoredCheck,
  type StoredNode,
  type StoredService,
} from './model.js';
import type { NodeState } from './node-state.js';

/** A service as a request gives it: absent fields take Consul's zero values and defaults. */
export type ServiceInput = { readonly [K in keyof StoredService]?: StoredService[K] | undefined };

/** A check as a request gives it; `Definition` carries the check's HTTP/TCP/TTL settings as sent. */
export type CheckInput = { readonly [K in keyof StoredCheck]?: StoredCheck[K] | undefined };

export interface Registration {
  readonly Datacenter: string;
  readonly ID: string;
  readonly Node: string;
  readonly Address: string;
  readonly TaggedAddresses: Readonly<Record<string, string>>;
  readonly NodeMeta: Readonly<Record<string, string>>;
  readonly Service?: ServiceInput | undefined;
  /** `Check` and `Checks` of the request, together. */
  readonly Checks: readonly CheckInput[];
  readonly SkipNodeUpdate: boolean;
}

export interface Deregistration {
  readonly Datacenter: string;
  readonly Node: string;
  readonly ServiceID: string;
  readonly CheckID: string;
}

export function normalizeService(input: ServiceInput): StoredService {
  const name = input.Service ?? '';
  const id = input.ID !== undefined && input.ID !== '' ? input.ID : name;
  if (name === '') throw agentError('CATALOG_MISSING_SERVICE_NAME', { id });
  const kind = input.Kind ?? '';
  const proxy = input.Proxy ?? {};
  const port = input.Port ?? 0;
  if (kind === 'connect-proxy') {
    if ((proxy.DestinationServiceName ?? '') === '') throw agentError('CATALOG_PROXY_DESTINATION');
    if (port === 0) throw agentError('CATALOG_PROXY_PORT');
  }
  const weights = input.Weights;
  // Invalid weights fall back to the defaults, as ToServiceNode does.
  const valid =
    weights !== undefined &&
    weights.Passing >= 1 &&
    weights.Warning >= 0 &&
    weights.Passing <= 65535 &&
    weights.Warning <= 65535;
  const service: StoredService = {
    Kind: kind,
    ID: id,
    Service: name,
    Tags: input.Tags ?? [],
    Address: input.Address ?? '',
    ...(input.TaggedAddresses === undefined || Object.keys(input.TaggedAddresses).length === 0
      ? {}
      : { TaggedAddresses: sortedRecord(input.TaggedAddresses) }),
    Meta: sortedRecord(input.Meta),
    Port: port,
    Weights: valid ? { Passing: weights.Passing, Warning: weights.Warning } : { Passing: 1, Warning: 1 },
    EnableTagOverride: input.EnableTagOverride ?? false,
    Proxy: proxy,
    Connect: input.Connect?.Native === true ? { Native: true } : {},
  };
  // Our size limits (docs/decisions.md#size-limits), once Consul's checks passed.
  limitService(service);
  return service;
}

/**
 * A check on `node`, its service's name and tags filled from `services` (Consul's ensureCheckTxn);
 * `at` names it in a size limit's refusal (`Checks[1].`).
 */
export function normalizeCheck(
  input: CheckInput,
  node: string,
  services: ReadonlyMap<string, StoredService>,
  at = 'Check.',
): StoredCheck {
  const checkNode = input.Node !== undefined && input.Node !== '' ? input.Node : node;
  if (checkNode !== node) throw agentError('CATALOG_CHECK_NODE_MISMATCH', { check: checkNode, node });
  const status = input.Status === undefined || input.Status === ('' as CheckStatus) ? 'critical' : input.Status;
  if (!CHECK_STATUSES.has(status)) throw agentError('CATALOG_CHECK_STATUS', { status });
  const name = input.Name ?? '';
  const serviceId = input.ServiceID ?? '';
  const service = serviceId === '' ? undefined : services.get(serviceId);
  if (serviceId !== '' && service === undefined) throw agentError('CATALOG_CHECK_NO_SERVICE');
  limitCheck(input, at);
  return {
    Node: node,
    CheckID: input.CheckID !== undefined && input.CheckID !== '' ? input.CheckID : name,
    Name: name,
    Status: status,
    Notes: input.Notes ?? '',
    Output: input.Output ?? '',
    ServiceID: serviceId,
    ServiceName: service?.Service ?? '',
    ServiceTags: service === undefined ? [] : [...service.Tags],
    Type: input.Type ?? '',
    Interval: input.Interval ?? '',
    Timeout: input.Timeout ?? '',
    ExposedPort: input.ExposedPort ?? 0,
    Definition: input.Definition ?? {},
  };
}

/** The node's state once `reg` is applied to `current`; throws the request's first fault. */
export function applyRegistration(reg: Registration, current: NodeState): NodeState {
  if (reg.Node === '') throw agentError('CATALOG_MISSING_NODE');
  if (reg.Address === '' && !reg.SkipNodeUpdate) throw agentError('CATALOG_MISSING_ADDRESS');
  if (!reg.SkipNodeUpdate || current.node === undefined) limitNode(reg);
  const node: StoredNode | undefined =
    reg.SkipNodeUpdate && current.node !== undefined
      ? current.node
      : {
          ID: reg.ID,
          Node: reg.Node,
          Address: reg.Address,
          Datacenter: reg.Datacenter,
          TaggedAddresses: sortedRecord(reg.TaggedAddresses),
          Meta: sortedRecord(reg.NodeMeta),
        };
  const services = new Map(current.services);
  if (reg.Service !== undefined) {
    const service = normalizeService(reg.Service);
    services.set(service.ID, service);
  }
  const checks = new Map(current.checks);
  for (const [i, input] of reg.Checks.entries()) {
    const check = normalizeCheck(input, reg.Node, services, `Checks[${i}].`);
    if (check.CheckID === '') continue;
    checks.set(check.CheckID, check);
  }
  return { node, services, checks };
}

/** The node's state once `dereg` is applied: a check, a service and its checks, or the whole node. */
export function applyDeregistration(dereg: Deregistration, current: NodeState): NodeState {
  if (dereg.Node === '') throw agentError('CATALOG_MISSING_NODE');
  if (dereg.ServiceID !== '') {
    const services = new Map(current.services);
    services.delete(dereg.ServiceID);
    const checks = new Map([...current.checks].filter(([, c]) => c.ServiceID !== dereg.ServiceID));
    if (dereg.CheckID !== '') checks.delete(dereg.CheckID);
    return { node: current.node, services, checks };
  }
  if (dereg.CheckID !== '') {
    const checks = new Map(current.checks);
    checks.delete(dereg.CheckID);
    return { node: current.node, services: current.services, checks };
  }
  return { node: undefined, services: new Map(), checks: new Map() };
}

/**
 * Consul's vetRegisterWithACL: node:write on the node when its entry changes, service:write on
 * the service (and on a proxy's destination), and on each check's service or, for a node check, node:write.
 */
export function vetRegistration(caller: Identity, reg: Registration, current: NodeState, next: NodeState): void {
  const need = (resource: 'node' | 'service', name: string): void => requirePermission(caller, resource, 'write', name);
  if (current.node === undefined || !sameNode(current.node, next.node)) need('node', reg.Node);
  if (reg.Service !== undefined) {
    const service = normalizeService(reg.Service);
    need('service', service.Service);
    if (service.Kind === 'connect-proxy') need('service', service.Proxy.DestinationServiceName ?? '');
  }
  for (const input of reg.Checks) {
    const serviceId = input.ServiceID ?? '';
    const service = serviceId === '' ? undefined : next.services.get(serviceId);
    if (service === undefined) need('node', reg.Node);
    else need('service', service.Service);
  }
}

/** Consul's vetDeregisterWithACL: service:write for a service or its check, node:write for the node or a node check. */
export function vetDeregistration(caller: Identity, dereg: Deregistration, current: NodeState): void {
  const need = (resource: 'node' | 'service', name: string): void => requirePermission(caller, resource, 'write', name);
  if (dereg.ServiceID !== '') {
    const service = current.services.get(dereg.ServiceID);
    if (service !== undefined) need('service', service.Service);
    return;
  }
  if (dereg.CheckID !== '') {
    const check = current.checks.get(dereg.CheckID);
    if (check !== undefined && check.ServiceName !== '') need('service', check.ServiceName);
    else need('node', dereg.Node);
    return;
  }
  need('node', dereg.Node);
}

function sameNode(a: StoredNode, b: StoredNode | undefined): boolean {
  return b !== undefined && isDeepStrictEqual(a, b);
}
