// The parsed form of a policy's Rules (docs/decisions.md#acl-rules): what parseRules produces, what
// the state store keeps next to the Rules text, and what compileAuthorizer consumes. Plain JSON on
// purpose, so a policy is parsed once when written and compiled synchronously on every later load.
import type { PolicyLevel } from '../types.js';

/** The block rules, in the order Consul validates them (so the first error reported is Consul's). */
export const BLOCK_RULES = [
  'agent',
  'agent_prefix',
  // Consul 1.17's workload identities: parsed and kept (builtin/workload-identity renders one);
  // nothing this agent serves asks for them.
  'identity',
  'identity_prefix',
  'key',
  'key_prefix',
  'node',
  'node_prefix',
  'service',
  'service_prefix',
  'session',
  'session_prefix',
  'event',
  'event_prefix',
  'query',
  'query_prefix',
] as const;
export type BlockRule = (typeof BLOCK_RULES)[number];

/** The scalar rules (`operator = "read"`), in Consul's validation order; `acl` is checked first. */
export const SCALAR_RULES = ['acl', 'keyring', 'operator', 'mesh', 'peering'] as const;
export type ScalarRule = (typeof SCALAR_RULES)[number];

/** One `<rule> "<name>" { policy = … }` block, after merging duplicates of the same name. */
export interface NamedRule {
  readonly name: string;
  readonly policy: PolicyLevel;
  /** service and service_prefix only; absent: from policy (docs/decisions.md#intention-acls). */
  readonly intentions?: PolicyLevel;
}

/**
 * A validated policy. Keys appear only when the policy has rules of that kind; block rules are
 * sorted by name with duplicates merged (the stronger level kept), so HCL and JSON spellings of
 * the same rules give deep-equal, byte-equal-when-stringified objects.
 */
export type ParsedRules = { readonly [R in BlockRule]?: readonly NamedRule[] } & {
  readonly [R in ScalarRule]?: PolicyLevel;
};

/** When rules for one name meet: deny > write > list > read (docs/decisions.md#acl-rules). */
const RANK: Readonly<Record<PolicyLevel, number>> = { read: 1, list: 2, write: 3, deny: 4 };

/** The stronger of two levels; an absent level always loses. */
export function stronger(a: PolicyLevel | undefined, b: PolicyLevel | undefined): PolicyLevel | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return RANK[a] >= RANK[b] ? a : b;
}

/** Merges a rule into a by-name map, keeping the stronger policy and, separately, the stronger intentions. */
export function mergeNamedRule(into: Map<string, NamedRule>, rule: NamedRule): void {
  const prior = into.get(rule.name);
  if (prior === undefined) {
    into.set(rule.name, rule);
    return;
  }
  const policy = stronger(prior.policy, rule.policy) ?? rule.policy;
  const intentions = stronger(prior.intentions, rule.intentions);
  into.set(rule.name, intentions === undefined ? { name: rule.name, policy } : { name: rule.name, policy, intentions });
}
