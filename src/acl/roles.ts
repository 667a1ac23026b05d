// ACL role operations without HTTP (docs/decisions.md#acl-roles): create, read (by ID or name),
// update, delete and list (`?policy`), with Consul's validation order and texts (its RoleSet).
// A role stores policy IDs only, as a token does; names are filled in on read. User mistakes are
// 4xx (docs/decisions.md D3). Writes share the ACL WriteLock with tokens and policies.
import { createHash } from 'node:crypto';
import { agentError } from '../core/errors.js';
import { generateId, isUuid } from '../core/ids.js';
import type { Row, StateStore, WriteOp } from '../state/types.js';
import { RESERVED_ID_PREFIX } from './builtin.js';
import { limitRole } from './limits.js';
import { ACL_POLICIES, ACL_ROLES, type PolicyLink, type StoredPolicy, type StoredRole } from './model.js';
import { findPolicyByName } from './policies.js';
import { roleJson } from './render.js';
import { hashTemplated, normalizeTemplatedPolicies, type TemplatedPolicyInput } from './templated.js';
import {
  nodeIdentities,
  serviceIdentities,
  type IdentityFailure,
  type LinkInput,
  type NodeIdentityInput,
  type ServiceIdentityInput,
} from './link-inputs.js';
import { WriteLock, writeRaced } from './write-lock.js';

/** A role write's body, decoded. As in Go, an empty string means "not given". */
export interface RoleInput {
  readonly ID?: string | undefined;
  readonly Name?: string | undefined;
  readonly Description?: string | undefined;
  readonly Policies?: readonly LinkInput[] | undefined;
  readonly ServiceIdentities?: readonly ServiceIdentityInput[] | undefined;
  readonly NodeIdentities?: readonly NodeIdentityInput[] | undefined;
  readonly TemplatedPolicies?: readonly TemplatedPolicyInput[] | undefined;
}

// Consul's validRoleName.
const ROLE_NAME = /^[A-Za-z0-9\-_]{1,256}$/;

/** The role whose name matches, ignoring case (Consul's name index is lowercased). */
export function findRoleByName(store: StateStore, name: string): Row<StoredRole> | undefined {
  const wanted = name.toLowerCase();
  return store.list<StoredRole>(ACL_ROLES, '').find((row) => row.value.Name.toLowerCase() === wanted);
}

export class AclRoles {
  private readonly lock: WriteLock;

  constructor(
    private readonly store: StateStore,
    options: { readonly lock?: WriteLock } = {},
  ) {
    this.lock = options.lock ?? new WriteLock();
  }

  /** The current name of a policy, for filling in links on read. */
  private readonly policyName = (id: string): string | undefined =>
    this.store.get<StoredPolicy>(ACL_POLICIES, id)?.value.Name;

  view(row: Row<StoredRole>): Record<string, unknown> {
    return roleJson(row, this.policyName);
  }

  read(id: string): Row<StoredRole> | undefined {
    return this.store.get<StoredRole>(ACL_ROLES, id);
  }

  readByName(name: string): Row<StoredRole> | undefined {
    return findRoleByName(this.store, name);
  }

  /** Every role, sorted by ID; with `policy`, only those linking that policy ID. */
  list(policy?: string): Row<StoredRole>[] {
    const rows = this.store.list<StoredRole>(ACL_ROLES, '');
    return policy ? rows.filter((row) => row.value.Policies.some((p) => p.ID === policy)) : rows;
  }

  /** PUT /v1/acl/role (`id` '') and PUT /v1/acl/role/:id: Consul's RoleSet, an empty ID creates. */
  upsert(id: string, input: RoleInput): Promise<Row<StoredRole>> {
    const bodyId = input.ID ?? '';
    if (bodyId !== '' && bodyId !== id) return Promise.reject(agentError('ACL_ROLE_ID_MISMATCH'));
    return this.lock.run(() => this.upsertLocked(id, input));
  }

  /** DELETE /v1/acl/role/:id. Deleting a role that does not exist succeeds, as in Consul. */
  delete(id: string): Promise<void> {
    return this.lock.run(async () => {
      const row = this.read(id);
      if (row === undefined) return;
      const result = await this.store.commit([{ op: 'delete', table: ACL_ROLES, key: id, ifIndex: row.modifyIndex }]);
      if (!result.ok) throw writeRaced();
    });
  }

  private async upsertLocked(id: string, input: RoleInput): Promise<Row<StoredRole>> {
    const name = input.Name ?? '';
    if (name === '') throw agentError('ACL_ROLE_NO_NAME');
    if (!ROLE_NAME.test(name)) throw agentError('ACL_ROLE_NAME_CHARS');
    let op: WriteOp;
    if (id === '') {
      if (findRoleByName(this.store, name) !== undefined) throw agentError('ACL_ROLE_NAME_IN_USE', { name });
      id = this.freshId();
      op = { op: 'set', table: ACL_ROLES, key: id, value: undefined, ifIndex: 0 };
    } else {
      if (!isUuid(id)) throw agentError('ACL_ROLE_ID_NOT_UUID');
      const existing = this.read(id);
      if (existing === undefined) throw agentError('ACL_ROLE_NOT_FOUND', { id });
      if (existing.value.Name !== name) {
        const sameName = findRoleByName(this.store, name);
        if (sameName !== undefined && sameName.key !== id) throw agentError('ACL_ROLE_RENAME_IN_USE', { name });
      }
      op = { op: 'set', table: ACL_ROLES, key: id, value: undefined, ifIndex: existing.modifyIndex };
    }
    // Our size limits (docs/decisions.md#size-limits) after Consul's name checks.
    limitRole(input);
    const policies = this.policyLinks(input.Policies ?? []);
    const services = serviceIdentities(input.ServiceIdentities ?? [], false, roleIdentityFailure);
    const nodes = nodeIdentities(input.NodeIdentities ?? [], roleIdentityFailure);
    const templated = normalizeTemplatedPolicies(input.TemplatedPolicies ?? [], 'role', false);
    const description = input.Description ?? '';
    const role: Omit<StoredRole, 'Hash'> = {
      ID: id,
      Name: name,
      Description: description,
      Policies: policies,
      ServiceIdentities: services,
      NodeIdentities: nodes,
      TemplatedPolicies: templated,
    };
    const result = await this.store.commit([{ ...op, value: { ...role, Hash: roleHash(role) } }]);
    if (!result.ok) throw writeRaced();
    const row = this.read(id);
    if (row === undefined) throw agentError('ACL_ROLE_LOST');
    return row;
  }

  /** By name → by ID (only names are looked up first, as in Consul); then IDs must exist; duplicates go. */
  private policyLinks(links: readonly LinkInput[]): PolicyLink[] {
    const out: PolicyLink[] = [];
    const seen = new Set<string>();
    for (const link of links) {
      let id = link.ID ?? '';
      if (id === '') {
        const name = link.Name ?? '';
        const policy = findPolicyByName(this.store, name);
        if (policy === undefined) throw agentError('ACL_ROLE_NO_POLICY_NAME', { name });
        id = policy.value.ID;
      }
      if (seen.has(id)) continue;
      seen.add(id);
      out.push({ ID: id });
    }
    // Consul's state store checks the links by ID when it commits, after every other check.
    for (const link of out) {
      if (this.store.get(ACL_POLICIES, link.ID) === undefined)
        throw agentError('ACL_ROLE_NO_POLICY_ID', { id: link.ID });
    }
    return out;
  }

  private freshId(): string {
    for (;;) {
      const id = generateId();
      if (!id.startsWith(RESERVED_ID_PREFIX) && this.read(id) === undefined) return id;
    }
  }
}

/** Consul's role texts for a bad identity (its token texts are tokens.ts's). */
const roleIdentityFailure: IdentityFailure = (problem, name) => {
  switch (problem) {
    case 'service-no-name':
      return agentError('ACL_ROLE_SERVICE_IDENTITY_NO_NAME');
    case 'service-name':
    case 'service-datacenters-on-local':
      return agentError('ACL_ROLE_SERVICE_IDENTITY_NAME', { name });
    case 'node-no-name':
      return agentError('ACL_ROLE_NODE_IDENTITY_NO_NAME');
    case 'node-no-datacenter':
      return agentError('ACL_ROLE_NODE_IDENTITY_NO_DC');
    case 'node-name':
      return agentError('ACL_ROLE_NODE_IDENTITY_NAME');
  }
};

/** Over everything a client would notice changing, base64 in JSON (as the token and policy hashes). */
function roleHash(role: Omit<StoredRole, 'Hash'>): string {
  const h = createHash('sha256');
  h.update(`name:${role.Name}\u0000description:${role.Description}\u0000`);
  for (const p of role.Policies) h.update(`policy:${p.ID}\u0000`);
  for (const s of role.ServiceIdentities) h.update(`service:${s.ServiceName}:${(s.Datacenters ?? []).join(',')}\u0000`);
  for (const n of role.NodeIdentities) h.update(`node:${n.NodeName}:${n.Datacenter}\u0000`);
  hashTemplated(h, role.TemplatedPolicies);
  return h.digest('base64');
}
