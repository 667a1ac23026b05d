// The one list of config keys: Consul's snake_case names as they appear in JSON config files, each
// with its validator, default and doc. Loading, validation, unknown-key checks and help text all
// walk this tree, so a key added here is known everywhere.
import type { z } from 'zod';
import {
  bool,
  datacenterName,
  duration,
  int,
  ipAddress,
  keyPrefix,
  logLevel,
  nonNegativeNumber,
  oneOf,
  pem,
  secretText,
  text,
  trustDomain,
  urlList,
  uuid,
} from './fields.js';
import { appliedRule, restartRule, type AgentPath, type ReloadRule } from './reload-rule.js';

/** What a default may depend on; injected so tests do not depend on the machine. */
export interface DefaultContext {
  readonly hostname: string;
}

/** One config key. `In` is what a file or flag holds, `Out` what the agent reads after validation. */
export class ConfigKey<In, Out, Optional extends boolean> {
  constructor(
    readonly schema: z.ZodType<Out, In>,
    readonly doc: string,
    /** In input form (e.g. "30s"), so it is validated like any file value and shown as written. */
    readonly defaultValue: In | ((ctx: DefaultContext) => In) | undefined,
    readonly optional: Optional,
    /** How help text shows the default when it is not a constant. */
    readonly defaultDoc: string | undefined,
    /** Where the agent holds the value and whether a reload applies a change (src/config/reload.ts). */
    readonly reload: ReloadRule,
  ) {}
}

export interface ConfigTree {
  readonly [name: string]: ConfigKey<unknown, unknown, boolean> | ConfigTree;
}

/** A key short of its reload rule: every key states one, so none is left to a default. */
class KeyDraft<In, Out, Optional extends boolean> {
  constructor(private readonly make: (rule: ReloadRule) => ConfigKey<In, Out, Optional>) {}
  /** The running agent reads `agent` where it uses it, so a reload changes it. */
  applied(agent: AgentPath, why?: string): ConfigKey<In, Out, Optional> {
    return this.make(appliedRule(agent, why));
  }
  /** The agent reads it once, at start. */
  restart(agent: AgentPath, why?: string): ConfigKey<In, Out, Optional> {
    return this.make(restartRule(agent, why));
  }
  /** It overrides `key` (tls.https over tls.defaults): a reload names and treats it as that key. */
  sameAs(key: string): ConfigKey<In, Out, Optional> {
    return this.make({ sameAs: key });
  }
}

function key<In, Out>(
  schema: z.ZodType<Out, In>,
  defaultValue: NoInfer<In> | ((ctx: DefaultContext) => NoInfer<In>),
  doc: string,
  defaultDoc?: string,
): KeyDraft<In, Out, false> {
  return new KeyDraft((rule) => new ConfigKey(schema, doc, defaultValue, false, defaultDoc, rule));
}

function optionalKey<In, Out>(schema: z.ZodType<Out, In>, doc: string, defaultDoc?: string): KeyDraft<In, Out, true> {
  return new KeyDraft((rule) => new ConfigKey<In, Out, true>(schema, doc, undefined, true, defaultDoc, rule));
}

const CA_CONFIG =
  "the file's ca_config only bootstraps the CA; a running CA changes through PUT /v1/connect/ca/configuration";

export const CONFIG_SCHEMA = {
  datacenter: key(
    datacenterName(),
    'dc1',
    'Datacenter this agent belongs to (lowercase alphanumerics, "-", "_").',
  ).restart('datacenter'),
  node_name: key(text(), (ctx) => ctx.hostname, 'Name of this node in the cluster.', 'the host name').restart(
    'nodeName',
  ),
  node_id: optionalKey(uuid(), 'Unique ID of this node (UUID).', 'derived by the agent').restart('nodeId'),
  client_addr: key(ipAddress(), '127.0.0.1', 'Address the HTTP API binds to.').restart('clientAddr'),
  bind_addr: optionalKey(
    text(),
    'Address of this host for the cluster: advertised unless advertise_addr is set; 0.0.0.0 advertises the one private IPv4 address. A go-sockaddr template ({{ GetPrivateIP }}, {{ GetInterfaceIP "eth0" }}) is resolved at start.',
    'none',
  ).sameAs('advertise_addr'),
  advertise_addr: optionalKey(
    text(),
    "Address other hosts reach this node at: the catalog's node Address, members' Addr, a service registered without Address. An IP or a go-sockaddr template.",
    'bind_addr; else, when bind_addr or client_addr is 0.0.0.0, the one private IPv4 address (more than one is an error); else client_addr',
  ).restart('advertiseAddr'),
  advertise_addr_wan: optionalKey(
    text(),
    "The node's WAN address (TaggedAddresses.wan); an IP or a template.",
    'advertise_addr',
  ).restart('advertiseAddrWan'),
  ports: {
    http: key(
      int(-1, 65535),
      8500,
      'Port of the HTTP API; 0 picks a free port (tests); -1 disables plain HTTP (with ports.https set).',
    ).restart('ports.http'),
    https: key(
      int(-1, 65535),
      -1,
      'Port of the HTTPS API (needs tls.defaults.cert_file and key_file); 0 picks a free port; -1 disables it.',
    ).restart('ports.https'),
    sidecar_min_port: key(
      int(0, 65535),
      21000,
      'Lowest port given to a Connect.SidecarService registered without one; 0 turns the assignment off.',
    ).restart('sidecarPorts.min'),
    sidecar_max_port: key(int(0, 65535), 21255, 'Highest port given to a sidecar registered without one.').restart(
      'sidecarPorts.max',
    ),
  },
  tls: {
    defaults: {
      ca_file: optionalKey(
        text(),
        'PEM file of the CAs that sign client certificates (needed with verify_incoming).',
      ).applied(
        'tls.caFile',
        'read again on every reload, even unchanged: HTTPS client certificates and HTTPS and gRPC checks are verified against it',
      ),
      cert_file: optionalKey(text(), 'PEM certificate (chain) the HTTPS API presents.').applied(
        'tls.certFile',
        'read again on every reload, even unchanged (a renewed certificate); new HTTPS connections get it',
      ),
      key_file: optionalKey(text(), 'PEM private key of cert_file.').applied(
        'tls.keyFile',
        'read again with cert_file',
      ),
      verify_incoming: key(bool(), false, 'Require HTTPS clients to present a certificate signed by ca_file.').restart(
        'tls.verifyIncoming',
      ),
      tls_min_version: key(
        oneOf(['TLSv1_0', 'TLSv1_1', 'TLSv1_2', 'TLSv1_3']),
        'TLSv1_2',
        'Oldest TLS version the HTTPS API accepts.',
      ).applied('tls.minVersion', 'new HTTPS connections'),
    },
    // Consul's settings for its HTTPS API alone, over tls.defaults; the agent serves no other TLS.
    https: {
      ca_file: optionalKey(text(), 'For the HTTPS API, in place of tls.defaults.ca_file.').sameAs(
        'tls.defaults.ca_file',
      ),
      cert_file: optionalKey(text(), 'For the HTTPS API, in place of tls.defaults.cert_file.').sameAs(
        'tls.defaults.cert_file',
      ),
      key_file: optionalKey(text(), 'For the HTTPS API, in place of tls.defaults.key_file.').sameAs(
        'tls.defaults.key_file',
      ),
      verify_incoming: optionalKey(bool(), 'For the HTTPS API, in place of tls.defaults.verify_incoming.').sameAs(
        'tls.defaults.verify_incoming',
      ),
      tls_min_version: optionalKey(
        oneOf(['TLSv1_0', 'TLSv1_1', 'TLSv1_2', 'TLSv1_3']),
        'For the HTTPS API, in place of tls.defaults.tls_min_version.',
      ).sameAs('tls.defaults.tls_min_version'),
    },
  },
  check_output_max_size: key(
    int(1),
    4096,
    "Bytes of a check's output kept when the check sets no OutputMaxSize (an HTTP body's last bytes); at most 4096 either way, as every agent's view holds every check's output (docs/decisions.md#size-limits).",
  ).restart('checkOutputMaxSize'),
  check_update_interval: key(
    duration('non-negative'),
    '5m',
    "Shortest time between catalog writes of a check's output that changed without its status; 0s: at once.",
  ).applied('checkUpdateIntervalMs', 'anti-entropy reads it on each check update'),
  reconnect_timeout: key(
    duration('positive').refine((ms) => ms >= 8 * 3600_000, 'reconnect_timeout must be >= 8h'),
    '72h',
    "How long a failed member (its member lease lapsed) stays listed, its node's serfHealth critical, before server agents remove both; at least 8h, as Consul's.",
  ).restart('reconnectTimeoutMs'),
  data_dir: optionalKey(
    text(),
    'Directory for persistent state; required unless -dev.',
    'none (required unless -dev)',
  ).restart('dataDir'),
  log_level: key(
    logLevel(),
    'info',
    'Log level: trace, debug, info, warn or error (any case; "err" means error); changes on reload.',
  ).applied('logLevel'),
  log_file: optionalKey(
    text(),
    'Also write log lines to this file (rotated: log_rotate_bytes, log_rotate_duration, log_rotate_max_files).',
  ).restart('logFile.path'),
  log_rotate_bytes: key(
    int(0),
    0,
    'Rotate the log file before it grows past this many bytes; 0: no size limit.',
  ).restart('logFile.rotateBytes'),
  log_rotate_duration: key(
    duration('non-negative'),
    '24h',
    'Rotate the log file once it is this old; 0s: never by age.',
  ).restart('logFile.rotateDurationMs'),
  log_rotate_max_files: key(int(-1), 0, 'Rotated log files to keep: 0 keeps all, -1 keeps none.').restart(
    'logFile.rotateMaxFiles',
  ),
  log_json: key(
    bool(),
    false,
    "Write log lines as JSON (level, ISO time, component, msg, fields) instead of Consul's text format.",
  ).restart('logJson'),
  server: key(
    bool(),
    false,
    'Server agent: holds the CA key, signs leaves, initialises and rotates the CA (cluster mode).',
  ).restart('server'),
  cluster: {
    etcd: {
      endpoints: key(urlList(), [], 'etcd client URLs; none runs the agent on its own embedded store.').restart(
        'cluster.etcd.endpoints',
      ),
      prefix: key(keyPrefix(), '/svc/', 'Key prefix of this mesh in etcd; several meshes can share one etcd.').restart(
        'cluster.etcd.prefix',
      ),
      tls: {
        ca_file: optionalKey(text(), "PEM file of the CA that signed the etcd members' certificates.").restart(
          'cluster.etcd.tls.caFile',
        ),
        cert_file: optionalKey(text(), 'PEM client certificate for etcd (with key_file).').restart(
          'cluster.etcd.tls.certFile',
        ),
        key_file: optionalKey(text(), 'PEM private key of cert_file.').restart('cluster.etcd.tls.keyFile'),
      },
      username: optionalKey(text(), 'etcd user (with password).').restart('cluster.etcd.username'),
      password: optionalKey(secretText(), 'Password of the etcd user.').restart('cluster.etcd.password'),
    },
    member_ttl: key(
      duration('positive'),
      '10s',
      "Lease TTL of this agent's member entry: a crashed agent leaves /v1/agent/members this long after its last keepalive.",
    ).restart('cluster.memberTtlMs'),
    leader_probe_interval: key(
      duration('positive'),
      '500ms',
      "How often the agent asks etcd for its leader (KnownLeader, LastContact); each agent adds one status request per interval to etcd's load.",
    ).restart('cluster.leaderProbeIntervalMs'),
  },
  translate_wan_addrs: key(bool(), false, 'Prefer WAN addresses for nodes in remote datacenters.').restart(
    'translateWanAddrs',
  ),
  acl: {
    enabled: key(bool(), false, 'Enforce ACLs.').restart('acl.enabled'),
    default_policy: key(oneOf(['allow', 'deny']), 'allow', 'Decision when no rule matches: "allow" or "deny".').restart(
      'acl.defaultPolicy',
    ),
    down_policy: key(
      oneOf(['extend-cache', 'async-cache', 'allow', 'deny']),
      'extend-cache',
      'Token resolution while the cluster store (etcd) is unreachable: "extend-cache" and "async-cache" keep resolving tokens from the agent\'s view, "allow" allows everything, "deny" denies everything.',
    ).restart('acl.downPolicy'),
    token_min_expiration_ttl: key(duration('positive'), '1m', 'Shortest ExpirationTTL a token may be given.').restart(
      'acl.tokenMinExpirationTtlMs',
    ),
    token_max_expiration_ttl: key(duration('positive'), '24h', 'Longest ExpirationTTL a token may be given.').restart(
      'acl.tokenMaxExpirationTtlMs',
    ),
    tokens: {
      initial_management: optionalKey(
        secretText(),
        'Secret of the management token created at bootstrap (any non-empty string; a UUID is usual).',
      ).restart('acl.tokens.initialManagement', 'used once, when ACLs are bootstrapped'),
      default: optionalKey(secretText(), 'Token used for requests that carry none.').applied(
        'acl.tokens.default',
        'replaces one set through PUT /v1/agent/token/default',
      ),
      agent: optionalKey(
        secretText(),
        "Token of the agent's own calls: a client agent's catalog sync through a server (docs/decisions.md D26).",
      ).applied('acl.tokens.agent', 'replaces one set through PUT /v1/agent/token/agent'),
      agent_recovery: optionalKey(
        secretText(),
        "Token the agent resolves itself, whatever the cluster store's state: agent:write on this agent's node and node:read (Consul's agent recovery token; docs/decisions.md#agent-token-kinds).",
      ).applied('acl.tokens.agentRecovery', 'replaces one set through PUT /v1/agent/token/agent_recovery'),
      replication: optionalKey(
        secretText(),
        'Kept and accepted for Consul configs; one datacenter has nothing to replicate (docs/decisions.md#agent-token-kinds).',
      ).applied('acl.tokens.replication', 'replaces one set through PUT /v1/agent/token/replication'),
      config_file_service_registration: optionalKey(
        secretText(),
        "Token a client agent's sync of the services and checks its config files define carries (else acl.tokens.agent; docs/decisions.md#agent-token-kinds).",
      ).applied(
        'acl.tokens.configFileServiceRegistration',
        'replaces one set through PUT /v1/agent/token/config_file_service_registration',
      ),
    },
    enable_token_persistence: key(
      bool(),
      false,
      "Keep the tokens set through PUT /v1/agent/token/<kind> in data_dir/acl-tokens.json (0600): they outlive a restart and a reload, and win over the config's.",
    ).restart('acl.enableTokenPersistence'),
  },
  http_config: {
    header_brand: key(
      oneOf(['Svc', 'Consul']),
      'Svc',
      'Brand of emitted headers: "Svc" (X-Svc-*) or "Consul" (X-Consul-*).',
    ).restart('httpConfig.headerBrand'),
    transport: key(
      oneOf(['auto', 'uws', 'node']),
      'auto',
      'HTTP server: "auto" (default) serves a loopback client_addr with uWebSockets.js and any other address with node:http; "uws" (uWebSockets.js, 1.6x the requests per second) or "node" (node:http: strict framing, HTTP/1.0, any Node version) on every address. Where the uWS binary does not load (Node 24+ on glibc before 2.38, Node 26+), node:http serves, with a warning. HTTPS is always node:https.',
    ).restart('httpConfig.transport'),
  },
  limits: {
    http_max_body_bytes: key(
      int(1),
      4 * 1024 * 1024,
      'Largest request body accepted, in bytes; at least limits.kv_max_value_size.',
    ).applied('limits.httpMaxBodyBytes'),
    kv_max_value_size: key(int(1), 512 * 1024, 'Largest KV value accepted, in bytes.').applied('kvMaxValueSize'),
  },
  default_query_time: key(duration('positive'), '300s', 'Wait of a blocking query that gives no ?wait.').applied(
    'defaultQueryTimeMs',
    'blocking queries parked from then on',
  ),
  max_query_time: key(
    duration('positive'),
    '600s',
    'Cap on a blocking query ?wait; at least default_query_time.',
  ).applied('maxQueryTimeMs', 'blocking queries parked from then on'),
  connect: {
    enabled: key(bool(), true, 'Enable the service mesh (CA, leaf certificates, intentions).').restart(
      'connect.enabled',
    ),
    ca_provider: key(oneOf(['consul']), 'consul', 'CA provider; only the built-in "consul" provider.').restart(
      'connect.caProvider',
    ),
    ca_config: {
      leaf_cert_ttl: key(duration('positive'), '72h', 'Lifetime of leaf certificates (1h to 8760h).').restart(
        'connect.caConfig.leafCertTtlMs',
        CA_CONFIG,
      ),
      intermediate_cert_ttl: key(
        duration('positive'),
        '8760h',
        'Lifetime of intermediate certificates (at least 3h and 3 x leaf_cert_ttl).',
      ).restart('connect.caConfig.intermediateCertTtlMs', CA_CONFIG),
      root_cert_ttl: key(
        duration('positive'),
        '87600h',
        'Lifetime of the root certificate (at least intermediate_cert_ttl).',
      ).restart('connect.caConfig.rootCertTtlMs', CA_CONFIG),
      private_key_type: key(oneOf(['ec', 'rsa']), 'ec', 'Key type of generated CA keys: "ec" or "rsa".').restart(
        'connect.caConfig.privateKeyType',
        CA_CONFIG,
      ),
      private_key_bits: optionalKey(
        int(1),
        'Key size: ec 224/256/384/521, rsa 2048/4096.',
        '256 for ec, 2048 for rsa',
      ).restart('connect.caConfig.privateKeyBits', CA_CONFIG),
      csr_max_per_second: key(nonNegativeNumber(), 50, 'Leaf signings per second; 0 disables the rate limit.').restart(
        'connect.caConfig.csrMaxPerSecond',
        CA_CONFIG,
      ),
      csr_max_concurrent: key(
        int(0),
        0,
        'Concurrent leaf signings when csr_max_per_second is 0; 0 means unlimited.',
      ).restart('connect.caConfig.csrMaxConcurrent', CA_CONFIG),
      private_key: optionalKey(pem(), 'PEM private key of a supplied root; generated when absent.').restart(
        'connect.caConfig.privateKey',
        CA_CONFIG,
      ),
      root_cert: optionalKey(
        pem(),
        'PEM root certificate to use instead of a generated one (needs private_key).',
      ).restart('connect.caConfig.rootCert', CA_CONFIG),
    },
    leaf_root_change_spread: key(
      duration('non-negative'),
      '30s',
      'After a root change, leaves are re-issued at a random point within this window; 0s re-issues at once.',
    ).applied('connect.leafRootChangeSpreadMs', 'read at each root change'),
    leaf_cache_max_entries: key(int(1), 10_000, 'Most leaf certificates kept in memory.').restart(
      'connect.leafCacheMaxEntries',
    ),
    signing_priority: key(
      oneOf(['low', 'normal']),
      'low',
      'Leaf-signing threads: "low" lowers their priority by nice +10 (Linux, where a nice value is per thread), "normal" leaves it. CPU policy for the whole service is the operator\'s (README, "CPU policy").',
    ).restart('connect.signingPriority'),
    trust_domain: optionalKey(
      trustDomain(),
      'SPIFFE trust domain of the mesh, fixed when the CA is first created (decision D9).',
      '"<cluster id>.consul"',
    ).restart('connect.trustDomain'),
  },
  telemetry: {
    prometheus_retention_time: key(
      duration('non-negative'),
      '60s',
      "Any positive value serves GET /v1/agent/metrics?format=prometheus and records what it needs (request latencies); 0s turns that off (Consul's default; the agent's is on, measured at under 3% of authorize throughput).",
    ).restart('telemetry.prometheusRetentionTimeMs'),
  },
  cache: {
    max_entries: key(int(1), 10_000, 'Most entries in the agent cache (shared across tokens).').restart(
      'cache.maxEntries',
    ),
    ttl: key(duration('positive'), '72h', 'An agent cache entry is dropped this long after its last read.').restart(
      'cache.ttlMs',
    ),
  },
} satisfies ConfigTree;

type Schema = typeof CONFIG_SCHEMA;

/** What a file or the command line may hold: every key optional, values in input form. */
export type RawConfig = RawOf<Schema>;
type RawOf<N> = N extends ConfigKey<infer In, unknown, boolean> ? In : { [K in keyof N]?: RawOf<N[K]> };

/** The validated tree, still snake_case, every key present (undefined for optional keys unset). */
export type ConfigValues = ValuesOf<Schema>;
type ValuesOf<N> =
  N extends ConfigKey<unknown, infer Out, infer Optional>
    ? Optional extends true
      ? Out | undefined
      : Out
    : { readonly [K in keyof N]: ValuesOf<N[K]> };

export interface KeyEntry {
  readonly path: string;
  readonly key: ConfigKey<unknown, unknown, boolean>;
}

/** Every key with its dotted path, in schema order (for help text and docs). */
export function listConfigKeys(tree: ConfigTree = CONFIG_SCHEMA, prefix = ''): KeyEntry[] {
  const out: KeyEntry[] = [];
  for (const [name, node] of Object.entries(tree)) {
    const path = prefix + name;
    if (node instanceof ConfigKey) out.push({ path, key: node });
    else out.push(...listConfigKeys(node, `${path}.`));
  }
  return out;
}

/** The key at a dotted path, or undefined when the path is a group or unknown. */
export function findConfigKey(path: string): ConfigKey<unknown, unknown, boolean> | undefined {
  let node: ConfigTree | ConfigKey<unknown, unknown, boolean> = CONFIG_SCHEMA;
  for (const part of path.split('.')) {
    if (node instanceof ConfigKey || !Object.hasOwn(node, part)) return undefined;
    node = node[part] as ConfigTree | ConfigKey<unknown, unknown, boolean>;
  }
  return node instanceof ConfigKey ? node : undefined;
}

/** How help text shows a key's default: the literal input value, or its description. */
export function describeDefault(entry: ConfigKey<unknown, unknown, boolean>): string | undefined {
  if (entry.defaultDoc !== undefined) return entry.defaultDoc;
  const value = entry.defaultValue;
  if (value === undefined || typeof value === 'function') return undefined;
  return JSON.stringify(value);
}
