// The size limits of ACL rows (docs/decisions.md#size-limits). Consul bounds a policy's Name (128)
// and an identity's name (256), which policies.ts and tokens.ts check with Consul's texts; it
// bounds nothing else of a token or a policy, so these are ours (413, naming the field). Checked
// on writes, before the rules are parsed: a policy row holds its rules twice (text and parsed).
import { limitBytes, limitEntries, limitStrings } from '../core/size-limits.js';

/** A policy's rule text: room for some 1,500 one-line rules; its parsed copy is about as large again. */
export const RULES_MAX = 64 * 1024;
/** A policy's or a token's Description: Consul's limit on an intention's Description. */
export const DESCRIPTION_MAX = 512;
/** Datacenter names (a policy's, an identity's): DNS labels, at most 63 bytes. */
export const DATACENTER_MAX = 64;
/** A policy's Datacenters. */
export const POLICY_DATACENTERS_MAX = 64;
/** A token's or role's policy links, role links, service identities, node identities and templated policies, each. */
export const TOKEN_LINKS_MAX = 64;
/** The Datacenters of one service identity. */
export const IDENTITY_DATACENTERS_MAX = 16;

export interface PolicyFields {
  readonly Description?: string | undefined;
  readonly Rules?: string | undefined;
  readonly Datacenters?: readonly string[] | undefined;
}

export function limitPolicy(input: PolicyFields): void {
  limitBytes('Description', input.Description, DESCRIPTION_MAX);
  limitBytes('Rules', input.Rules, RULES_MAX);
  limitStrings('Datacenters', input.Datacenters, POLICY_DATACENTERS_MAX, DATACENTER_MAX);
}

export interface TokenFields {
  readonly Description?: string | undefined;
  readonly Policies?: readonly unknown[] | undefined;
  readonly Roles?: readonly unknown[] | undefined;
  readonly TemplatedPolicies?: readonly { readonly Datacenters?: readonly string[] | undefined }[] | undefined;
  readonly ServiceIdentities?: readonly { readonly Datacenters?: readonly string[] | undefined }[] | undefined;
  readonly NodeIdentities?: readonly { readonly Datacenter?: string | undefined }[] | undefined;
}

/** Identity names are Consul's (256, tokens.ts); their counts and datacenters are ours. */
export function limitToken(input: TokenFields): void {
  limitBytes('Description', input.Description, DESCRIPTION_MAX);
  limitEntries('Policies', input.Policies?.length ?? 0, TOKEN_LINKS_MAX);
  limitEntries('Roles', input.Roles?.length ?? 0, TOKEN_LINKS_MAX);
  const templated = input.TemplatedPolicies ?? [];
  limitEntries('TemplatedPolicies', templated.length, TOKEN_LINKS_MAX);
  templated.forEach((t, i) =>
    limitStrings(`TemplatedPolicies[${i}].Datacenters`, t.Datacenters, IDENTITY_DATACENTERS_MAX, DATACENTER_MAX),
  );
  const services = input.ServiceIdentities ?? [];
  limitEntries('ServiceIdentities', services.length, TOKEN_LINKS_MAX);
  services.forEach((s, i) =>
    limitStrings(`ServiceIdentities[${i}].Datacenters`, s.Datacenters, IDENTITY_DATACENTERS_MAX, DATACENTER_MAX),
  );
  const nodes = input.NodeIdentities ?? [];
  limitEntries('NodeIdentities', nodes.length, TOKEN_LINKS_MAX);
  nodes.forEach((n, i) => limitBytes(`NodeIdentities[${i}].Datacenter`, n.Datacenter, DATACENTER_MAX));
}

/** A role carries what a token does, less role links: the same limits. */
export function limitRole(input: Omit<TokenFields, 'Roles'>): void {
  limitToken(input);
}
