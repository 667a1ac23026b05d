// Consul's deprecated config keys and where Consul moves them, with Consul's own warning (source:
// `DeprecatedConfig` and `applyDeprecatedConfig` in hashicorp/consul `agent/config/deprecated.go`).
// As in Consul, each file is moved on its own and the new key wins when a file sets both; the
// moved value is then read (or ignored) like any value under the new key.
import { getPath, withPath, withoutPath, type PlainObject } from './object.js';

interface Rename {
  readonly from: string;
  readonly to: string;
  /** Lists are joined (start_join adds to retry_join), as Consul appends them. */
  readonly append?: true;
  /** Consul also sets this, whatever the file says (acl_datacenter turns ACLs on). */
  readonly implies?: { readonly path: string; readonly value: unknown };
}

const RENAMES: readonly Rename[] = [
  { from: 'acl.tokens.agent_master', to: 'acl.tokens.agent_recovery' },
  { from: 'acl_agent_master_token', to: 'acl.tokens.agent_recovery' },
  { from: 'acl_agent_token', to: 'acl.tokens.agent' },
  { from: 'acl_token', to: 'acl.tokens.default' },
  { from: 'acl.tokens.master', to: 'acl.tokens.initial_management' },
  { from: 'acl_master_token', to: 'acl.tokens.initial_management' },
  {
    from: 'acl_replication_token',
    to: 'acl.tokens.replication',
    implies: { path: 'acl.enable_token_replication', value: true },
  },
  { from: 'enable_acl_replication', to: 'acl.enable_token_replication' },
  { from: 'acl_datacenter', to: 'primary_datacenter', implies: { path: 'acl.enabled', value: true } },
  { from: 'acl_default_policy', to: 'acl.default_policy' },
  { from: 'acl_down_policy', to: 'acl.down_policy' },
  { from: 'acl_ttl', to: 'acl.token_ttl' },
  { from: 'acl_enable_key_list_policy', to: 'acl.enable_key_list_policy' },
  { from: 'start_join', to: 'retry_join', append: true },
  { from: 'start_join_wan', to: 'retry_join_wan', append: true },
  { from: 'raft_boltdb', to: 'raft_logstore.boltdb' },
  { from: 'ca_file', to: 'tls.defaults.ca_file' },
  { from: 'ca_path', to: 'tls.defaults.ca_path' },
  { from: 'cert_file', to: 'tls.defaults.cert_file' },
  { from: 'key_file', to: 'tls.defaults.key_file' },
  { from: 'tls_cipher_suites', to: 'tls.defaults.tls_cipher_suites' },
  { from: 'tls_min_version', to: 'tls.defaults.tls_min_version' },
  { from: 'verify_incoming', to: 'tls.defaults.verify_incoming' },
  { from: 'verify_incoming_https', to: 'tls.https.verify_incoming' },
  { from: 'verify_incoming_rpc', to: 'tls.internal_rpc.verify_incoming' },
  { from: 'verify_outgoing', to: 'tls.defaults.verify_outgoing' },
  { from: 'verify_server_hostname', to: 'tls.internal_rpc.verify_server_hostname' },
];

/** Keys Consul reads and drops, with its warning. */
const DROPPED: readonly { readonly key: string; readonly warning: string }[] = [
  {
    key: 'tls_prefer_server_cipher_suites',
    warning: "The 'tls_prefer_server_cipher_suites' field is deprecated and will be ignored.",
  },
];

/** The old top-level tls_min_version values and what Consul reads them as. */
const OLD_TLS_VERSIONS: Readonly<Record<string, string>> = {
  tls10: 'TLSv1_0',
  tls11: 'TLSv1_1',
  tls12: 'TLSv1_2',
  tls13: 'TLSv1_3',
};

/** One file's values with Consul's deprecated keys moved to their new place, and Consul's warning for each. */
export function moveConsulRenames(layer: PlainObject): { values: PlainObject; warnings: string[] } {
  const warnings: string[] = [];
  let values = layer;
  for (const { from, to, append, implies } of RENAMES) {
    const fromParts = from.split('.');
    let value = getPath(values, fromParts);
    if (value === undefined) continue;
    values = withoutPath(values, fromParts);
    if (from === 'tls_min_version' && typeof value === 'string' && Object.hasOwn(OLD_TLS_VERSIONS, value)) {
      const version = OLD_TLS_VERSIONS[value] as string;
      warnings.push(`'tls_min_version' value '${value}' is deprecated, please specify '${version}' instead`);
      value = version;
    }
    const toParts = to.split('.');
    const current = getPath(values, toParts);
    if (current === undefined) values = withPath(values, toParts, value);
    else if (append === true && Array.isArray(current) && Array.isArray(value))
      values = withPath(values, toParts, [...current, ...value]);
    if (implies !== undefined) values = withPath(values, implies.path.split('.'), implies.value);
    warnings.push(`The '${from}' field is deprecated. Use the '${to}' field instead.`);
  }
  for (const { key, warning } of DROPPED) {
    if (!Object.hasOwn(values, key)) continue;
    values = withoutPath(values, [key]);
    warnings.push(warning);
  }
  return { values, warnings };
}
