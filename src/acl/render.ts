// The ACL API's JSON in Consul's key order (docs/decisions.md#acl-api, #acl-roles), built from
// stored rows. Tokens and roles store link IDs only: names are filled in here, and links to
// policies or roles that no longer exist are left out. `Namespace` (docs/decisions.md D2) sits where Consul Enterprise's embedded
// EnterpriseMeta puts it: after `Hash` in a token, after `ModifyIndex` in a token list stub.
import type { Row } from '../state/types.js';
import {
  HIDDEN_SECRET,
  type PolicyLink,
  type StoredPolicy,
  type StoredRole,
  type StoredTemplatedPolicy,
  type StoredToken,
} from './model.js';
import type { NodeIdentity, ServiceIdentity } from './rules/identities.js';

/** A policy's (or role's) current name, or undefined when it is gone. */
export type PolicyNameOf = (id: string) => string | undefined;

/** The current names of what a token links. */
export interface LinkNames {
  readonly policy: PolicyNameOf;
  readonly role: PolicyNameOf;
}

interface PolicyLinkJson {
  readonly ID: string;
  readonly Name: string;
}

/** GET /v1/acl/token/:accessor, and every token write's answer; `secret` undefined shows `<hidden>`. */
export function tokenJson(
  row: Row<StoredToken>,
  names: LinkNames,
  secret: string | undefined,
): Record<string, unknown> {
  return tokenShape(row, names, secret, 'after-hash');
}

/** PUT /v1/acl/bootstrap: the token with a leading `ID` equal to its SecretID. */
export function bootstrapJson(row: Row<StoredToken>, names: LinkNames, secret: string): Record<string, unknown> {
  return { ID: secret, ...tokenJson(row, names, secret) };
}

/** One entry of GET /v1/acl/tokens. */
export function tokenStubJson(
  row: Row<StoredToken>,
  names: LinkNames,
  secret: string | undefined,
): Record<string, unknown> {
  return tokenShape(row, names, secret, 'last');
}

/** The token and its list stub share their fields; only where `Namespace` sits differs. */
function tokenShape(
  row: Row<StoredToken>,
  names: LinkNames,
  secret: string | undefined,
  namespaceAt: 'after-hash' | 'last',
): Record<string, unknown> {
  const token = row.value;
  const out: Record<string, unknown> = {
    AccessorID: token.AccessorID,
    SecretID: secret ?? HIDDEN_SECRET,
    Description: token.Description,
  };
  addLinks(out, token, names);
  out.Local = token.Local;
  if (token.AuthMethod !== undefined) out.AuthMethod = token.AuthMethod;
  if (token.ExpirationTime !== undefined) out.ExpirationTime = goTime(token.ExpirationTime);
  out.CreateTime = goTime(token.CreateTime);
  out.Hash = token.Hash;
  if (namespaceAt === 'after-hash') out.Namespace = token.Namespace;
  out.CreateIndex = row.createIndex;
  out.ModifyIndex = row.modifyIndex;
  if (namespaceAt === 'last') out.Namespace = token.Namespace;
  return out;
}

/** GET /v1/acl/policy/:id, and every policy write's answer. */
export function policyJson(row: Row<StoredPolicy>): Record<string, unknown> {
  const policy = row.value;
  const out: Record<string, unknown> = {
    ID: policy.ID,
    Name: policy.Name,
    Description: policy.Description,
    Rules: policy.Rules,
  };
  if (policy.Datacenters !== null && policy.Datacenters.length > 0) out.Datacenters = policy.Datacenters;
  out.Hash = policy.Hash;
  out.CreateIndex = row.createIndex;
  out.ModifyIndex = row.modifyIndex;
  return out;
}

/** One entry of GET /v1/acl/policies; `Datacenters` is always there, null when none. */
export function policyStubJson(row: Row<StoredPolicy>): Record<string, unknown> {
  const policy = row.value;
  return {
    ID: policy.ID,
    Name: policy.Name,
    Description: policy.Description,
    Datacenters: policy.Datacenters !== null && policy.Datacenters.length > 0 ? policy.Datacenters : null,
    Hash: policy.Hash,
    CreateIndex: row.createIndex,
    ModifyIndex: row.modifyIndex,
  };
}

/** Policies?, Roles?, ServiceIdentities?, NodeIdentities?, TemplatedPolicies?: each left out when empty (Go's omitempty). */
function addLinks(out: Record<string, unknown>, token: StoredToken, names: LinkNames): void {
  const policies = policyLinks(token.Policies, names.policy);
  if (policies.length > 0) out.Policies = policies;
  const roles = policyLinks(token.Roles ?? [], names.role);
  if (roles.length > 0) out.Roles = roles;
  addIdentities(out, token.ServiceIdentities, token.NodeIdentities, token.TemplatedPolicies ?? []);
}

function addIdentities(
  out: Record<string, unknown>,
  services: readonly ServiceIdentity[],
  nodes: readonly NodeIdentity[],
  templated: readonly StoredTemplatedPolicy[],
): void {
  if (services.length > 0) {
    out.ServiceIdentities = services.map((s) =>
      s.Datacenters !== undefined && s.Datacenters.length > 0
        ? { ServiceName: s.ServiceName, Datacenters: s.Datacenters }
        : { ServiceName: s.ServiceName },
    );
  }
  if (nodes.length > 0) {
    out.NodeIdentities = nodes.map((n) => ({ NodeName: n.NodeName, Datacenter: n.Datacenter }));
  }
  if (templated.length > 0) out.TemplatedPolicies = templated.map(templatedJson);
}

/** Consul's ACLTemplatedPolicy: TemplateID and TemplateName, then `{"name": …}` (its json tag) and Datacenters when set. */
function templatedJson(tp: StoredTemplatedPolicy): Record<string, unknown> {
  const out: Record<string, unknown> = { TemplateID: tp.TemplateID, TemplateName: tp.TemplateName };
  if (tp.TemplateVariables !== undefined) {
    out.TemplateVariables = tp.TemplateVariables.Name === '' ? {} : { name: tp.TemplateVariables.Name };
  }
  if (tp.Datacenters !== undefined && tp.Datacenters.length > 0) out.Datacenters = tp.Datacenters;
  return out;
}

/** GET /v1/acl/role/:id, each entry of GET /v1/acl/roles, and every role write's answer (Consul's ACLRole). */
export function roleJson(row: Row<StoredRole>, policyName: PolicyNameOf): Record<string, unknown> {
  const role = row.value;
  const out: Record<string, unknown> = { ID: role.ID, Name: role.Name, Description: role.Description };
  const policies = policyLinks(role.Policies, policyName);
  if (policies.length > 0) out.Policies = policies;
  addIdentities(out, role.ServiceIdentities, role.NodeIdentities, role.TemplatedPolicies);
  out.Hash = role.Hash;
  out.CreateIndex = row.createIndex;
  out.ModifyIndex = row.modifyIndex;
  return out;
}

function policyLinks(links: readonly PolicyLink[], policyName: PolicyNameOf): PolicyLinkJson[] {
  const out: PolicyLinkJson[] = [];
  for (const link of links) {
    const name = policyName(link.ID);
    if (name !== undefined) out.push({ ID: link.ID, Name: name });
  }
  return out;
}

/**
 * An ISO-8601 UTC time as Go's encoding/json writes a time.Time (RFC 3339 with nanoseconds, zeros
 * trimmed): "2024-05-01T10:00:00.120Z" → "2024-05-01T10:00:00.12Z", ".000Z" → "Z".
 */
export function goTime(iso: string): string {
  return iso.replace(/\.(\d*?)0*Z$/, (_m, digits: string) => (digits === '' ? 'Z' : `.${digits}Z`));
}
