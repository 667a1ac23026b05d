// The ACL system's built-ins (docs/decisions.md#acl-api): the global-management and
// global-read-only policies with their Rules text and parsed rules, the anonymous token, the
// reserved ID prefix. The parsed rules are literals (tests check they equal parseRules of the text)
// so nothing here waits on the HCL parser.
import { createHash } from 'node:crypto';
import type { StoredPolicy } from './model.js';
import type { ParsedRules } from './rules/model.js';
import type { PolicyLevel } from './types.js';

/** IDs starting with this are Consul's own; a user-supplied ID with it is refused. */
export const RESERVED_ID_PREFIX = '00000000-0000-0000-0000-0000000000';

export const GLOBAL_MANAGEMENT_POLICY_ID = '00000000-0000-0000-0000-000000000001';
export const GLOBAL_MANAGEMENT_POLICY_NAME = 'global-management';
export const GLOBAL_MANAGEMENT_POLICY_DESCRIPTION =
  'A built-in policy that grants read and write access to all Consul features';

export const GLOBAL_READ_ONLY_POLICY_ID = '00000000-0000-0000-0000-000000000002';
export const GLOBAL_READ_ONLY_POLICY_NAME = 'builtin/global-read-only';

export const ANONYMOUS_ACCESSOR_ID = '00000000-0000-0000-0000-000000000002';
export const ANONYMOUS_SECRET = 'anonymous';

/** Consul's text, byte for byte (leading newline, tab indents): GET /v1/acl/policy returns it. */
const globalRulesText = (level: 'write' | 'read'): string => `
acl = "${level}"
agent_prefix "" {
	policy = "${level}"
}
event_prefix "" {
	policy = "${level}"
}
key_prefix "" {
	policy = "${level}"
}
keyring = "${level}"
node_prefix "" {
	policy = "${level}"
}
operator = "${level}"
mesh = "${level}"
peering = "${level}"
query_prefix "" {
	policy = "${level}"
}
service_prefix "" {
	policy = "${level}"
	intentions = "${level}"
}
session_prefix "" {
	policy = "${level}"
}`;

const globalRules = (level: PolicyLevel): ParsedRules =>
  Object.freeze({
    acl: level,
    agent_prefix: [{ name: '', policy: level }],
    key_prefix: [{ name: '', policy: level }],
    node_prefix: [{ name: '', policy: level }],
    service_prefix: [{ name: '', policy: level, intentions: level }],
    session_prefix: [{ name: '', policy: level }],
    event_prefix: [{ name: '', policy: level }],
    query_prefix: [{ name: '', policy: level }],
    keyring: level,
    operator: level,
    mesh: level,
    peering: level,
  });

export const GLOBAL_MANAGEMENT_RULES = globalRulesText('write');
export const GLOBAL_MANAGEMENT_PARSED: ParsedRules = globalRules('write');
export const GLOBAL_READ_ONLY_RULES = globalRulesText('read');
export const GLOBAL_READ_ONLY_PARSED: ParsedRules = globalRules('read');

/** The global-management policy as first stored. */
export function globalManagementPolicy(): StoredPolicy {
  return builtinPolicy(
    GLOBAL_MANAGEMENT_POLICY_ID,
    GLOBAL_MANAGEMENT_POLICY_NAME,
    GLOBAL_MANAGEMENT_POLICY_DESCRIPTION,
    GLOBAL_MANAGEMENT_RULES,
    GLOBAL_MANAGEMENT_PARSED,
  );
}

function builtinPolicy(
  id: string,
  name: string,
  description: string,
  rules: string,
  parsed: ParsedRules,
): StoredPolicy {
  // Like Consul's policy hash, over what a client would notice changing.
  const hash = createHash('sha256').update(name).update(description).update(rules).digest('base64');
  return { ID: id, Name: name, Description: description, Rules: rules, Datacenters: null, Hash: hash, Parsed: parsed };
}
