// Anti-entropy's plan for one node: the state the catalog should hold once an agent's own entries
// are written over what it holds now (all of them, or only those that changed locally), and the
// catalog register and deregister requests that reach that state from a client agent, which
// writes through a server (docs/decisions.md D26).
import { CONSUL_SERVICE_ID } from './consul-service.js';
import { sameRow } from './same.js';
import { sortedRecord, SERF_CHECK_ID, type StoredCheck, type StoredNode, type StoredService } from './model.js';
import type { NodeState } from './node-state.js';
import {
  normalizeCheck,
  normalizeService,
  type CheckInput,
  type Deregistration,
  type Registration,
  type ServiceInput,
} from './register.js';

/** A node's own fields, as its agent knows them. */
export type NodeFields = Pick<StoredNode, 'ID' | 'Address' | 'TaggedAddresses' | 'Meta'>;

/** What an agent holds for its node: the whole set of its services and checks. */
export interface NodeSync {
  readonly node: NodeFields;
  readonly services: readonly ServiceInput[];
  readonly checks: readonly CheckInput[];
  /** Checks whose output waits for check_update_interval: written with the output the catalog has. */
  readonly keepOutput?: ReadonlySet<string> | undefined;
}

/** A partial sync: only these services and checks (by ID) are made to match; the rest stay as they are. */
export interface SyncScope {
  readonly services: ReadonlySet<string>;
  readonly checks: ReadonlySet<string>;
}

export function nodeRow(name: string, datacenter: string, fields: NodeFields): StoredNode {
  return {
    ID: fields.ID,
    Node: name,
    Address: fields.Address,
    Datacenter: datacenter,
    TaggedAddresses: sortedRecord(fields.TaggedAddresses),
    Meta: sortedRecord(fields.Meta),
  };
}

/**
 * The node's state once `desired` is written over `current`: without a scope, exactly the agent's
 * entries (a full sync, which also removes what the agent does not hold); with one, the scoped
 * entries set or removed and the others kept. The liveness check (`serfHealth`) and a server's
 * `consul` service are the cluster's: kept as they are, unless the agent holds a `consul` of its own.
 */
export function syncTarget(node: StoredNode, current: NodeState, desired: NodeSync, scope?: SyncScope): NodeState {
  const wanted = new Map(desired.services.map((input) => normalizeService(input)).map((s) => [s.ID, s]));
  const wantedChecks = new Map(desired.checks.map((c) => [c.CheckID ?? c.Name ?? '', c]));
  let services: Map<string, StoredService>;
  let checkIds: Iterable<string>;
  const checks = new Map<string, StoredCheck>();
  if (scope === undefined) {
    services = wanted;
    const consul = current.services.get(CONSUL_SERVICE_ID);
    if (consul !== undefined && !services.has(CONSUL_SERVICE_ID)) services.set(CONSUL_SERVICE_ID, consul);
    checkIds = wantedChecks.keys();
    const serf = current.checks.get(SERF_CHECK_ID);
    if (serf !== undefined) checks.set(SERF_CHECK_ID, serf);
  } else {
    // A scoped check's service is written with it, and a scoped service's checks with it (their tags follow it).
    const serviceIds = new Set(scope.services);
    for (const id of scope.checks) {
      const serviceId = wantedChecks.get(id)?.ServiceID ?? current.checks.get(id)?.ServiceID ?? '';
      if (serviceId !== '' && wanted.has(serviceId)) serviceIds.add(serviceId);
    }
    services = new Map(current.services);
    for (const id of serviceIds) {
      const service = wanted.get(id);
      if (service === undefined) services.delete(id);
      else services.set(id, service);
    }
    const ids = new Set(scope.checks);
    for (const [id, input] of wantedChecks) if (serviceIds.has(input.ServiceID ?? '')) ids.add(id);
    for (const [id, check] of current.checks)
      if (!ids.has(id) && (check.ServiceID === '' || services.has(check.ServiceID))) checks.set(id, check);
    checkIds = ids;
  }
  for (const id of checkIds) {
    const input = wantedChecks.get(id);
    if (id === SERF_CHECK_ID) continue;
    if (input === undefined) {
      checks.delete(id);
      continue;
    }
    const check = normalizeCheck(input, node.Node, services);
    const held = desired.keepOutput?.has(id) === true ? current.checks.get(id) : undefined;
    checks.set(check.CheckID, held === undefined ? check : { ...check, Output: held.Output });
  }
  return { node, services, checks };
}

export interface SyncRequests {
  readonly registrations: readonly Registration[];
  readonly deregistrations: readonly Deregistration[];
}

/**
 * The catalog requests that turn `current` into `target` for node `name`, as Consul's agent sends
 * them: the node when it differs, a deregistration per service or check gone, a registration per
 * service new or changed (with its changed checks), and one for the remaining changed checks.
 */
export function syncRequests(name: string, current: NodeState, target: NodeState): SyncRequests {
  const registrations: Registration[] = [];
  const deregistrations: Deregistration[] = [];
  const node = target.node;
  if (node === undefined) return { registrations, deregistrations };
  const base = {
    Datacenter: node.Datacenter,
    ID: node.ID,
    Node: name,
    Address: node.Address,
    TaggedAddresses: node.TaggedAddresses,
    NodeMeta: node.Meta,
  };
  if (!sameRow(current.node, node)) registrations.push({ ...base, Checks: [], SkipNodeUpdate: false });
  const gone = (ServiceID: string, CheckID: string): Deregistration => ({
    Datacenter: node.Datacenter,
    Node: name,
    ServiceID,
    CheckID,
  });
  for (const id of current.services.keys()) if (!target.services.has(id)) deregistrations.push(gone(id, ''));
  for (const [id, check] of current.checks)
    if (!target.checks.has(id) && (check.ServiceID === '' || target.services.has(check.ServiceID)))
      deregistrations.push(gone('', id));
  const changedChecks = [...target.checks.values()].filter(
    (c) => c.CheckID !== SERF_CHECK_ID && !sameRow(current.checks.get(c.CheckID), c),
  );
  const sent = new Set<string>();
  for (const [id, service] of target.services) {
    if (sameRow(current.services.get(id), service)) continue;
    const own = changedChecks.filter((c) => c.ServiceID === id);
    for (const c of own) sent.add(c.CheckID);
    registrations.push({ ...base, Service: service, Checks: own, SkipNodeUpdate: true });
  }
  const rest = changedChecks.filter((c) => !sent.has(c.CheckID));
  if (rest.length > 0) registrations.push({ ...base, Checks: rest, SkipNodeUpdate: true });
  return { registrations, deregistrations };
}
