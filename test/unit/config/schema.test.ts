// The schema as the single list of keys: every key documented, every default valid, lookups.
import { describe, expect, it } from 'vitest';
import { describeDefault, findConfigKey, listConfigKeys } from '../../../src/config/schema.js';

describe('config schema', () => {
  const keys = listConfigKeys();

  it('lists every key by dotted path', () => {
    expect(keys.map((k) => k.path)).toEqual([
      'datacenter',
      'node_name',
      'node_id',
      'client_addr',
      'bind_addr',
      'advertise_addr',
      'advertise_addr_wan',
      'ports.http',
      'ports.https',
      'ports.sidecar_min_port',
      'ports.sidecar_max_port',
      'tls.defaults.ca_file',
      'tls.defaults.cert_file',
      'tls.defaults.key_file',
      'tls.defaults.verify_incoming',
      'tls.defaults.tls_min_version',
      'tls.https.ca_file',
      'tls.https.cert_file',
      'tls.https.key_file',
      'tls.https.verify_incoming',
      'tls.https.tls_min_version',
      'check_output_max_size',
      'check_update_interval',
      'reconnect_timeout',
      'data_dir',
      'log_level',
      'log_file',
      'log_rotate_bytes',
      'log_rotate_duration',
      'log_rotate_max_files',
      'log_json',
      'server',
      'cluster.etcd.endpoints',
      'cluster.etcd.prefix',
      'cluster.etcd.tls.ca_file',
      'cluster.etcd.tls.cert_file',
      'cluster.etcd.tls.key_file',
      'cluster.etcd.username',
      'cluster.etcd.password',
      'cluster.member_ttl',
      'cluster.leader_probe_interval',
      'translate_wan_addrs',
      'acl.enabled',
      'acl.default_policy',
      'acl.down_policy',
      'acl.token_min_expiration_ttl',
      'acl.token_max_expiration_ttl',
      'acl.tokens.initial_management',
      'acl.tokens.default',
      'acl.tokens.agent',
      'acl.tokens.agent_recovery',
      'acl.tokens.replication',
      'acl.tokens.config_file_service_registration',
      'acl.enable_token_persistence',
      'http_config.header_brand',
      'http_config.transport',
      'limits.http_max_body_bytes',
      'limits.kv_max_value_size',
      'default_query_time',
      'max_query_time',
      'connect.enabled',
      'connect.ca_provider',
      'connect.ca_config.leaf_cert_ttl',
      'connect.ca_config.intermediate_cert_ttl',
      'connect.ca_config.root_cert_ttl',
      'connect.ca_config.private_key_type',
      'connect.ca_config.private_key_bits',
      'connect.ca_config.csr_max_per_second',
      'connect.ca_config.csr_max_concurrent',
      'connect.ca_config.private_key',
      'connect.ca_config.root_cert',
      'connect.leaf_root_change_spread',
      'connect.leaf_cache_max_entries',
      'connect.signing_priority',
      'connect.trust_domain',
      'telemetry.prometheus_retention_time',
      'cache.max_entries',
      'cache.ttl',
    ]);
  });

  it('documents every key', () => {
    for (const { path, key } of keys) expect(key.doc.length, path).toBeGreaterThan(10);
  });

  it('has defaults that pass their own validation', () => {
    for (const { path, key } of keys) {
      const d = key.defaultValue;
      if (d === undefined) continue;
      const value = typeof d === 'function' ? (d as (c: { hostname: string }) => unknown)({ hostname: 'h' }) : d;
      expect(key.schema.safeParse(value).success, path).toBe(true);
    }
  });

  it('marks exactly the keys without a default as optional', () => {
    for (const { path, key } of keys) expect(key.optional, path).toBe(key.defaultValue === undefined);
  });

  it('finds keys by path, and nothing for groups or unknown paths', () => {
    expect(findConfigKey('connect.ca_config.leaf_cert_ttl')?.defaultValue).toBe('72h');
    expect(findConfigKey('connect.ca_config')).toBeUndefined();
    expect(findConfigKey('connect.nope')).toBeUndefined();
    expect(findConfigKey('datacenter.x')).toBeUndefined();
    expect(findConfigKey('toString')).toBeUndefined();
  });

  it('describes defaults as written, or in words when computed', () => {
    const d = (path: string) => describeDefault(findConfigKey(path)!);
    expect(d('acl.token_min_expiration_ttl')).toBe('"1m"');
    expect(d('ports.http')).toBe('8500');
    expect(d('node_name')).toBe('the host name');
    expect(d('acl.tokens.agent')).toBeUndefined();
  });
});
