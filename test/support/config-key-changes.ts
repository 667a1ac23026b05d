// A change of every declared config key (src/config/schema.ts, block-keys.ts), for the tests that
// prove each key's reload rule: the unit test plans it, the integration test reloads a running
// agent with it. A key missing here fails both, so a new key comes with its change.
import { deepMerge, withPath, type PlainObject } from '../../src/config/object.js';

export interface KeyChange {
  /** The key's new value. */
  readonly value: unknown;
  /** Other keys changed with it (a certificate with its key): the plan may name them too. */
  readonly with?: PlainObject;
  /** Values set before and after, so that the change is valid and changes this key's field alone. */
  readonly base?: PlainObject;
}

/** Files the changes point at: real ones for a running agent, any paths for a plan. */
export interface ChangeFiles {
  readonly dir: string;
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
  /** Another CA file, another certificate with its key. */
  readonly otherCaFile: string;
  readonly nextCertFile: string;
  readonly nextKeyFile: string;
}

const ENDPOINTS = ['http://127.0.0.1:2379'];
// Only their form is checked when a config loads; the CA reads them when it is first created.
const ROOT_KEY = '-----BEGIN EC PRIVATE KEY-----\nAA==\n-----END EC PRIVATE KEY-----\n';
const ROOT_CERT = '-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n';
const UUID = '6c8e6c1a-1f4f-4f5e-9a51-0d2f3f6b7c01';
/** The management token of the integration test's agent, which acl.tokens.default turns to. */
export const MANAGEMENT_TOKEN = '4c0e7c58-5a88-4b3d-9d55-7d0c3f1e2a61';

/** Keys that cannot change: one value is all the schema takes. */
export const UNCHANGEABLE: Readonly<Record<string, string>> = { 'connect.ca_provider': 'only "consul"' };

export function keyChanges(f: ChangeFiles): Readonly<Record<string, KeyChange>> {
  const certs = (over: 'defaults' | 'https', first: 'cert_file' | 'key_file'): KeyChange => ({
    value: first === 'cert_file' ? f.nextCertFile : f.nextKeyFile,
    with: { tls: { [over]: first === 'cert_file' ? { key_file: f.nextKeyFile } : { cert_file: f.nextCertFile } } },
  });
  return {
    datacenter: { value: 'dc2' },
    node_name: { value: 'other-node' },
    node_id: { value: UUID },
    // The advertised addresses follow client_addr unless set.
    client_addr: { value: '127.0.0.2', base: { advertise_addr: '127.0.0.1', advertise_addr_wan: '127.0.0.1' } },
    bind_addr: { value: '10.0.0.7', base: { advertise_addr_wan: '127.0.0.1' } },
    advertise_addr: { value: '10.0.0.8', base: { advertise_addr_wan: '127.0.0.1' } },
    advertise_addr_wan: { value: '10.0.0.9' },
    'ports.http': { value: 9000 },
    'ports.https': { value: 8501 },
    'ports.sidecar_min_port': { value: 21100 },
    'ports.sidecar_max_port': { value: 21300 },
    'tls.defaults.ca_file': { value: f.otherCaFile },
    'tls.defaults.cert_file': certs('defaults', 'cert_file'),
    'tls.defaults.key_file': certs('defaults', 'key_file'),
    'tls.defaults.verify_incoming': { value: true },
    'tls.defaults.tls_min_version': { value: 'TLSv1_3' },
    'tls.https.ca_file': { value: f.otherCaFile },
    'tls.https.cert_file': certs('https', 'cert_file'),
    'tls.https.key_file': certs('https', 'key_file'),
    'tls.https.verify_incoming': { value: true },
    'tls.https.tls_min_version': { value: 'TLSv1_3' },
    check_output_max_size: { value: 100 },
    check_update_interval: { value: '0s' },
    reconnect_timeout: { value: '24h' },
    data_dir: { value: f.dir },
    log_level: { value: 'debug' },
    log_file: { value: `${f.dir}/agent.log` },
    log_rotate_bytes: { value: 1000 },
    log_rotate_duration: { value: '1h' },
    log_rotate_max_files: { value: 3 },
    log_json: { value: true },
    // Without etcd endpoints an agent is a server whatever the file says. The integration test's
    // agent starts as one; a restart key is named when it differs from what the agent started with.
    server: { value: false, base: { server: true, cluster: { etcd: { endpoints: ENDPOINTS } } } },
    'cluster.etcd.endpoints': { value: ENDPOINTS, base: { server: true } },
    'cluster.etcd.prefix': { value: '/other/' },
    'cluster.etcd.tls.ca_file': { value: f.caFile },
    'cluster.etcd.tls.cert_file': { value: f.certFile, with: { cluster: { etcd: { tls: { key_file: f.keyFile } } } } },
    'cluster.etcd.tls.key_file': { value: f.keyFile, with: { cluster: { etcd: { tls: { cert_file: f.certFile } } } } },
    'cluster.etcd.username': { value: 'svc', with: { cluster: { etcd: { password: 'secret' } } } },
    'cluster.etcd.password': { value: 'secret', with: { cluster: { etcd: { username: 'svc' } } } },
    'cluster.member_ttl': { value: '20s' },
    'cluster.leader_probe_interval': { value: '1s' },
    translate_wan_addrs: { value: true },
    'acl.enabled': { value: false, base: { acl: { enabled: true } } },
    'acl.default_policy': { value: 'allow', base: { acl: { default_policy: 'deny' } } },
    'acl.down_policy': { value: 'deny' },
    'acl.token_min_expiration_ttl': { value: '2m' },
    'acl.token_max_expiration_ttl': { value: '48h' },
    'acl.tokens.initial_management': { value: UUID },
    'acl.tokens.default': { value: MANAGEMENT_TOKEN },
    'acl.tokens.agent': { value: 'agent-token' },
    'acl.tokens.agent_recovery': { value: 'recovery-token' },
    'acl.tokens.replication': { value: 'replication-token' },
    'acl.tokens.config_file_service_registration': { value: 'file-registration-token' },
    'acl.enable_token_persistence': { value: true },
    'http_config.header_brand': { value: 'Consul' },
    'http_config.transport': { value: 'node' },
    'limits.http_max_body_bytes': { value: 1_000_000 },
    'limits.kv_max_value_size': { value: 100 },
    default_query_time: { value: '100ms' },
    max_query_time: { value: '200ms', base: { default_query_time: '100ms' } },
    'connect.enabled': { value: false },
    'connect.ca_config.leaf_cert_ttl': { value: '24h' },
    'connect.ca_config.intermediate_cert_ttl': { value: '9000h' },
    'connect.ca_config.root_cert_ttl': { value: '90000h' },
    'connect.ca_config.private_key_type': {
      value: 'rsa',
      with: { connect: { ca_config: { private_key_bits: 2048 } } },
    },
    'connect.ca_config.private_key_bits': { value: 384 },
    'connect.ca_config.csr_max_per_second': { value: 10 },
    'connect.ca_config.csr_max_concurrent': { value: 2 },
    'connect.ca_config.private_key': { value: ROOT_KEY, with: { connect: { ca_config: { root_cert: ROOT_CERT } } } },
    'connect.ca_config.root_cert': { value: ROOT_CERT, with: { connect: { ca_config: { private_key: ROOT_KEY } } } },
    'connect.leaf_root_change_spread': { value: '1s' },
    'connect.leaf_cache_max_entries': { value: 5 },
    'connect.signing_priority': { value: 'normal' },
    'connect.trust_domain': { value: 'other.consul' },
    'telemetry.prometheus_retention_time': { value: '0s' },
    'cache.max_entries': { value: 5 },
    'cache.ttl': { value: '1h' },
    services: { value: [{ name: 'web', port: 8080 }] },
    checks: { value: [{ id: 'disk', name: 'disk', ttl: '30s' }] },
  };
}

/** What every change starts from: the HTTPS API's files, which a certificate change needs. */
export const baseValues = (f: ChangeFiles): PlainObject => ({
  tls: { defaults: { ca_file: f.caFile, cert_file: f.certFile, key_file: f.keyFile } },
});

/** The file values before and after one key's change, over `base`. */
export function changedValues(
  path: string,
  change: KeyChange,
  base: PlainObject,
): { before: PlainObject; after: PlainObject } {
  const before = deepMerge(base, change.base ?? {});
  return { before, after: deepMerge(before, withPath({}, path.split('.'), change.value), change.with ?? {}) };
}
