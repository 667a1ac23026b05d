// The agent's view of its configuration: camelCase, every default filled in, durations in
// milliseconds, deep-frozen. Components take the slice they need (AclConfig, CaConfig, ...).
import type { LogLevel } from '../core/log.js';
import type { Registrations } from './registrations.js';

export interface AclTokens {
  readonly initialManagement: string | undefined;
  readonly default: string | undefined;
  readonly agent: string | undefined;
  readonly agentRecovery: string | undefined;
  readonly replication: string | undefined;
  readonly configFileServiceRegistration: string | undefined;
}

export type AclDownPolicy = 'extend-cache' | 'async-cache' | 'allow' | 'deny';

export interface AclConfig {
  readonly enabled: boolean;
  readonly defaultPolicy: 'allow' | 'deny';
  /** Token resolution while the cluster store is unreachable (docs/decisions.md, "Cluster: fail-open"). */
  readonly downPolicy: AclDownPolicy;
  readonly tokens: AclTokens;
  /** Tokens set through the API kept in data_dir (docs/decisions.md#agent-token-kinds). */
  readonly enableTokenPersistence: boolean;
  /** Bounds on a token's ExpirationTTL (Consul: 1m and 24h). */
  readonly tokenMinExpirationTtlMs: number;
  readonly tokenMaxExpirationTtlMs: number;
}

export interface HttpConfig {
  /** Which header spelling the agent emits: X-Svc-* or X-Consul-* (docs/decisions.md D1). */
  readonly headerBrand: 'Svc' | 'Consul';
  /** Which HTTP server serves plain HTTP (docs/decisions.md D18); HTTPS is always node:https. */
  readonly transport: 'auto' | 'uws' | 'node';
}

export interface LimitsConfig {
  readonly httpMaxBodyBytes: number;
}

export interface CaConfig {
  readonly leafCertTtlMs: number;
  readonly intermediateCertTtlMs: number;
  readonly rootCertTtlMs: number;
  readonly privateKeyType: 'ec' | 'rsa';
  /** Resolved: 256 for ec and 2048 for rsa when not configured. */
  readonly privateKeyBits: number;
  readonly csrMaxPerSecond: number;
  readonly csrMaxConcurrent: number;
  readonly privateKey: string | undefined;
  readonly rootCert: string | undefined;
}

export interface ConnectConfig {
  readonly enabled: boolean;
  readonly caProvider: 'consul';
  readonly caConfig: CaConfig;
  /** Window for re-issuing leaves after a root change (docs/decisions.md D13); 0: at once. */
  readonly leafRootChangeSpreadMs: number;
  readonly leafCacheMaxEntries: number;
  /** Leaf-signing threads at nice +10 ('low') or as the process runs ('normal'). */
  readonly signingPriority: 'low' | 'normal';
  /** The mesh's trust domain (D9); undefined means `<cluster-id>.consul`. Used when the CA is created. */
  readonly trustDomain: string | undefined;
}

export interface CacheConfig {
  readonly maxEntries: number;
  /** Entry lifetime after its last read (docs/decisions.md D7). */
  readonly ttlMs: number;
}

export interface AgentConfig {
  /** -dev: state lives in memory and data_dir is optional. */
  readonly dev: boolean;
  readonly datacenter: string;
  readonly nodeName: string;
  /** Lower-case UUID when configured; otherwise the agent derives one. */
  readonly nodeId: string | undefined;
  readonly clientAddr: string;
  /** The node's address for other hosts, resolved (src/config/addresses.ts). */
  readonly advertiseAddr: string;
  readonly advertiseAddrWan: string;
  /** -1 disables a listener. */
  readonly ports: { readonly http: number; readonly https: number };
  /** TLS of the HTTPS API (Consul's `tls.defaults`). */
  readonly tls: TlsConfig;
  /** Undefined only in dev mode: state is then kept in memory. */
  readonly dataDir: string | undefined;
  readonly logLevel: LogLevel;
  /** JSON log lines instead of Consul's text format. */
  readonly logJson: boolean;
  /** Log lines also go to this file, rotated (src/core/log-file.ts). */
  readonly logFile: {
    readonly path: string | undefined;
    readonly rotateBytes: number;
    readonly rotateDurationMs: number;
    readonly rotateMaxFiles: number;
  };
  readonly translateWanAddrs: boolean;
  /**
   * A server agent holds the CA key and signs; a client agent never reads the key. Always true
   * without etcd endpoints: a lone agent is its own server.
   */
  readonly server: boolean;
  readonly cluster: ClusterConfig;
  readonly acl: AclConfig;
  readonly httpConfig: HttpConfig;
  readonly limits: LimitsConfig;
  /** Consul's limits.kv_max_value_size, kept at the top level where the KV handler reads it. */
  readonly kvMaxValueSize: number;
  readonly defaultQueryTimeMs: number;
  readonly maxQueryTimeMs: number;
  readonly connect: ConnectConfig;
  readonly cache: CacheConfig;
  readonly telemetry: { readonly prometheusRetentionTimeMs: number };
  /** Ports given to sidecars registered without one (Consul's ports.sidecar_min_port, sidecar_max_port). */
  readonly sidecarPorts: { readonly min: number; readonly max: number };
  /** Output kept per check when it sets no OutputMaxSize. */
  readonly checkOutputMaxSize: number;
  /** Consul's check_update_interval: an output-only change of a check reaches the catalog at most this often. */
  readonly checkUpdateIntervalMs: number;
  /** Consul's reconnect_timeout: a failed member and its node are removed this long after it failed. */
  readonly reconnectTimeoutMs: number;
  /** The config files' `service(s)` and `check(s)` blocks, as written; src/local/ reads and validates them. */
  readonly registrations: Registrations;
}

export interface EtcdTlsConfig {
  readonly caFile: string | undefined;
  readonly certFile: string | undefined;
  readonly keyFile: string | undefined;
}

export interface EtcdConfig {
  /** Empty: no cluster, the embedded store. */
  readonly endpoints: readonly string[];
  readonly prefix: string;
  readonly tls: EtcdTlsConfig;
  readonly username: string | undefined;
  readonly password: string | undefined;
}

export interface ClusterConfig {
  readonly etcd: EtcdConfig;
  /** Lease TTL of the agent's member entry, in ms. */
  readonly memberTtlMs: number;
  /** Interval of the etcd leader probe, in ms. */
  readonly leaderProbeIntervalMs: number;
}

export type TlsVersionName = 'TLSv1_0' | 'TLSv1_1' | 'TLSv1_2' | 'TLSv1_3';

export interface TlsConfig {
  readonly caFile: string | undefined;
  readonly certFile: string | undefined;
  readonly keyFile: string | undefined;
  readonly verifyIncoming: boolean;
  readonly minVersion: TlsVersionName;
}
