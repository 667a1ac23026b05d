// Maps validated snake_case values onto the camelCase AgentConfig the rest of the agent reads.
// Spelled out key by key so the compiler checks both sides; derived defaults are resolved here.
import { defaultKeyBits } from './ca-rules.js';
import { NO_REGISTRATIONS, type Registrations } from './registrations.js';
import type { ConfigValues } from './schema.js';
import type { AgentConfig } from './types.js';

export function toAgentConfig(
  v: ConfigValues,
  dev: boolean,
  registrations: Registrations = NO_REGISTRATIONS,
  advertised: { readonly lan: string; readonly wan: string } = { lan: v.client_addr, wan: v.client_addr },
): AgentConfig {
  const ca = v.connect.ca_config;
  return {
    dev,
    datacenter: v.datacenter,
    nodeName: v.node_name,
    nodeId: v.node_id,
    clientAddr: v.client_addr,
    advertiseAddr: advertised.lan,
    advertiseAddrWan: advertised.wan,
    ports: { http: v.ports.http, https: v.ports.https },
    // As in Consul, a tls.https setting wins over tls.defaults for the HTTPS API.
    tls: {
      caFile: v.tls.https.ca_file ?? v.tls.defaults.ca_file,
      certFile: v.tls.https.cert_file ?? v.tls.defaults.cert_file,
      keyFile: v.tls.https.key_file ?? v.tls.defaults.key_file,
      verifyIncoming: v.tls.https.verify_incoming ?? v.tls.defaults.verify_incoming,
      minVersion: v.tls.https.tls_min_version ?? v.tls.defaults.tls_min_version,
    },
    dataDir: v.data_dir,
    logLevel: v.log_level,
    logJson: v.log_json,
    logFile: {
      path: v.log_file,
      rotateBytes: v.log_rotate_bytes,
      rotateDurationMs: v.log_rotate_duration,
      rotateMaxFiles: v.log_rotate_max_files,
    },
    translateWanAddrs: v.translate_wan_addrs,
    // A lone agent is its own server: it holds its CA key as it always did.
    server: v.server || v.cluster.etcd.endpoints.length === 0,
    cluster: {
      etcd: {
        endpoints: v.cluster.etcd.endpoints,
        prefix: v.cluster.etcd.prefix,
        tls: {
          caFile: v.cluster.etcd.tls.ca_file,
          certFile: v.cluster.etcd.tls.cert_file,
          keyFile: v.cluster.etcd.tls.key_file,
        },
        username: v.cluster.etcd.username,
        password: v.cluster.etcd.password,
      },
      memberTtlMs: v.cluster.member_ttl,
      leaderProbeIntervalMs: v.cluster.leader_probe_interval,
    },
    acl: {
      enabled: v.acl.enabled,
      defaultPolicy: v.acl.default_policy,
      downPolicy: v.acl.down_policy,
      tokens: {
        initialManagement: v.acl.tokens.initial_management,
        default: v.acl.tokens.default,
        agent: v.acl.tokens.agent,
        agentRecovery: v.acl.tokens.agent_recovery,
        replication: v.acl.tokens.replication,
        configFileServiceRegistration: v.acl.tokens.config_file_service_registration,
      },
      enableTokenPersistence: v.acl.enable_token_persistence,
      tokenMinExpirationTtlMs: v.acl.token_min_expiration_ttl,
      tokenMaxExpirationTtlMs: v.acl.token_max_expiration_ttl,
    },
    httpConfig: { headerBrand: v.http_config.header_brand, transport: v.http_config.transport },
    limits: { httpMaxBodyBytes: v.limits.http_max_body_bytes },
    kvMaxValueSize: v.limits.kv_max_value_size,
    defaultQueryTimeMs: v.default_query_time,
    maxQueryTimeMs: v.max_query_time,
    connect: {
      enabled: v.connect.enabled,
      caProvider: v.connect.ca_provider,
      caConfig: {
        leafCertTtlMs: ca.leaf_cert_ttl,
        intermediateCertTtlMs: ca.intermediate_cert_ttl,
        rootCertTtlMs: ca.root_cert_ttl,
        privateKeyType: ca.private_key_type,
        privateKeyBits: ca.private_key_bits ?? defaultKeyBits(ca.private_key_type),
        csrMaxPerSecond: ca.csr_max_per_second,
        csrMaxConcurrent: ca.csr_max_concurrent,
        privateKey: ca.private_key,
        rootCert: ca.root_cert,
      },
      leafRootChangeSpreadMs: v.connect.leaf_root_change_spread,
      leafCacheMaxEntries: v.connect.leaf_cache_max_entries,
      signingPriority: v.connect.signing_priority,
      trustDomain: v.connect.trust_domain,
    },
    cache: { maxEntries: v.cache.max_entries, ttlMs: v.cache.ttl },
    telemetry: { prometheusRetentionTimeMs: v.telemetry.prometheus_retention_time },
    sidecarPorts: { min: v.ports.sidecar_min_port, max: v.ports.sidecar_max_port },
    checkOutputMaxSize: v.check_output_max_size,
    checkUpdateIntervalMs: v.check_update_interval,
    reconnectTimeoutMs: v.reconnect_timeout,
    registrations,
  };
}
