// What token and role writes share of a client's body, decoded: links and identities as sent (as
// in Go, an empty string means "not given"), and the identities' checks and merge, which token and
// role writes run alike with their own error texts (tokens.ts, roles.ts).
import type { AgentError } from '../core/errors.js';
import type { NodeIdentity, ServiceIdentity } from './rules/identities.js';

/** A policy or role link as a client sends it: by ID, or by Name when the ID is empty. */
export interface LinkInput {
  readonly ID?: string | undefined;
  readonly Name?: string | undefined;
}

export interface ServiceIdentityInput {
  readonly ServiceName?: string | undefined;
  readonly Datacenters?: readonly string[] | undefined;
}

export interface NodeIdentityInput {
  readonly NodeName?: string | undefined;
  readonly Datacenter?: string | undefined;
}

/** Consul's identity name rule (structs.isValidServiceIdentityName and its node twin). */
const IDENTITY_NAME = /^[a-z0-9](?:[a-z0-9\-_]*[a-z0-9])?$/;
const IDENTITY_NAME_MAX = 256;

export function validIdentityName(name: string): boolean {
  return name.length <= IDENTITY_NAME_MAX && IDENTITY_NAME.test(name);
}

/** What can be wrong with an identity; each writer says it in its own words. */
export type IdentityProblem =
  | 'service-no-name'
  | 'service-name'
  | 'service-datacenters-on-local'
  | 'node-no-name'
  | 'node-no-datacenter'
  | 'node-name';

export type IdentityFailure = (problem: IdentityProblem, name: string) => AgentError;

/**
 * Checked in order (a local token's identities may name no datacenters), then merged by name
 * (datacenters united and sorted), in first-seen order.
 */
export function serviceIdentities(
  list: readonly ServiceIdentityInput[],
  local: boolean,
  fail: IdentityFailure,
): ServiceIdentity[] {
  const merged = new Map<string, Set<string>>();
  for (const identity of list) {
    const name = identity.ServiceName ?? '';
    const datacenters = identity.Datacenters ?? [];
    if (name === '') throw fail('service-no-name', name);
    if (local && datacenters.length > 0) throw fail('service-datacenters-on-local', name);
    if (!validIdentityName(name)) throw fail('service-name', name);
    const dcs = merged.get(name) ?? new Set<string>();
    for (const dc of datacenters) dcs.add(dc);
    merged.set(name, dcs);
  }
  return [...merged].map(([name, dcs]) =>
    dcs.size > 0 ? { ServiceName: name, Datacenters: [...dcs].sort() } : { ServiceName: name },
  );
}

/** Checked in order, then each (name, datacenter) pair once, in first-seen order. */
export function nodeIdentities(list: readonly NodeIdentityInput[], fail: IdentityFailure): NodeIdentity[] {
  const out: NodeIdentity[] = [];
  const seen = new Set<string>();
  for (const identity of list) {
    const name = identity.NodeName ?? '';
    const datacenter = identity.Datacenter ?? '';
    if (name === '') throw fail('node-no-name', name);
    if (datacenter === '') throw fail('node-no-datacenter', name);
    if (!validIdentityName(name)) throw fail('node-name', name);
    const key = `${name}\u0000${datacenter}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ NodeName: name, Datacenter: datacenter });
  }
  return out;
}
