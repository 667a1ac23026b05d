// A token's links → the rules it holds (docs/decisions.md#acl-roles): its own policies, service and
// node identities and templated policies, plus those of each role it links. Links to policies or
// roles that no longer exist grant nothing; identities and templated policies scoped to another
// datacenter grant nothing here. Pure over a GrantSource, so whatever links grants (a token, a
// login's bound roles) expands the same way. Runs on a resolver cache miss only:
// bench/micro/acl-resolve.ts guards it.
import type { StateStore } from '../state/types.js';
import {
  ACL_POLICIES,
  ACL_ROLES,
  type PolicyLink,
  type RoleLink,
  type StoredPolicy,
  type StoredRole,
  type StoredTemplatedPolicy,
} from './model.js';
import { identityRules, type NodeIdentity, type ServiceIdentity } from './rules/identities.js';
import type { ParsedRules } from './rules/model.js';
import { templatedRules } from './templated.js';

/** What grants rules: a token's links, or a role's (which links no roles). */
export interface GrantLinks {
  readonly Policies: readonly PolicyLink[];
  readonly Roles?: readonly RoleLink[] | undefined;
  readonly ServiceIdentities: readonly ServiceIdentity[];
  readonly NodeIdentities: readonly NodeIdentity[];
  readonly TemplatedPolicies?: readonly StoredTemplatedPolicy[] | undefined;
}

/** Where linked policies and roles are looked up. */
export interface GrantSource {
  policy(id: string): StoredPolicy | undefined;
  role(id: string): StoredRole | undefined;
}

export function storeGrantSource(store: StateStore): GrantSource {
  return {
    policy: (id) => store.get<StoredPolicy>(ACL_POLICIES, id)?.value,
    role: (id) => store.get<StoredRole>(ACL_ROLES, id)?.value,
  };
}

/** Every rule set the links grant in `datacenter`, ready for compileAuthorizer. */
export function grantedRules(links: GrantLinks, source: GrantSource, datacenter: string): ParsedRules[] {
  const out: ParsedRules[] = [];
  addOwn(out, links, source, datacenter);
  for (const link of links.Roles ?? []) {
    const role = source.role(link.ID);
    if (role !== undefined) addOwn(out, role, source, datacenter);
  }
  return out;
}

function addOwn(out: ParsedRules[], links: GrantLinks, source: GrantSource, datacenter: string): void {
  for (const link of links.Policies) {
    const policy = source.policy(link.ID);
    if (policy !== undefined) out.push(policy.Parsed);
  }
  for (const rules of identityRules(datacenter, links.ServiceIdentities, links.NodeIdentities)) out.push(rules);
  for (const tp of links.TemplatedPolicies ?? []) {
    const rules = templatedRules(tp, datacenter);
    if (rules !== undefined) out.push(rules);
  }
}
