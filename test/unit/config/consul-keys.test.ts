// A Consul agent's config file loads: the keys svc-agent implements are read, Consul's other keys
// are ignored with one warning each, Consul's deprecated spellings move where Consul moves them,
// and a key neither has is refused with the nearest known key offered.
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/errors.js';
import { CONSUL_KEYS, type ConsulKeyTree } from '../../../src/config/consul-keys.js';
import { nearestKey } from '../../../src/config/did-you-mean.js';
import { checkKeys } from '../../../src/config/known-keys.js';
import { loadConfig } from '../../../src/config/load.js';
import { readConfigSources } from '../../../src/config/sources.js';
import { tempDir, testEnv } from './helpers.js';

const SECRET = '3f4c1a6e-8d2b-4c5f-9e7a-1b2c3d4e5f60';

/** A Consul server's file as operators write it, with Consul's common keys. */
const CONSUL_HCL = `
datacenter = "east-1"
data_dir = "/opt/consul"
log_level = "INFO"
node_name = "consul-server-1"
server = true
bootstrap_expect = 3
ui_config {
  enabled = true
}
retry_join = ["10.0.0.2", "10.0.0.3"]
bind_addr = "0.0.0.0"
client_addr = "127.0.0.1"
addresses {
  http = "127.0.0.1"
}
ports {
  grpc = 8502
  dns = 8600
}
connect {
  enabled = true
}
acl {
  enabled = true
  default_policy = "deny"
  down_policy = "extend-cache"
  enable_token_persistence = true
  tokens {
    initial_management = "${SECRET}"
  }
}
telemetry {
  disable_hostname = true
  prometheus_retention_time = "60s"
}
performance {
  raft_multiplier = 1
}
encrypt = "pUqJrVyVRj5jsiYEkM/tFQYfWyJIv4s3XkvDwy7Cu5s="
ca_file = "/etc/consul.d/consul-agent-ca.pem"
cert_file = "/etc/consul.d/dc1-server-consul-0.pem"
key_file = "/etc/consul.d/dc1-server-consul-0-key.pem"
verify_incoming = true
recursors = ["1.1.1.1"]
enable_script_checks = false
leave_on_terminate = true
services {
  name = "web"
  port = 8080
  check {
    http = "http://localhost:8080/health"
    interval = "10s"
  }
}
checks = [
  {
    id = "disk"
    args = ["/usr/local/bin/check-disk"]
    interval = "30s"
  }
]
`;

const CONSUL_JSON = {
  datacenter: 'east-1',
  data_dir: '/opt/consul',
  log_level: 'INFO',
  node_name: 'consul-server-1',
  server: true,
  bootstrap_expect: 3,
  ui_config: { enabled: true },
  retry_join: ['10.0.0.2', '10.0.0.3'],
  bind_addr: '0.0.0.0',
  client_addr: '127.0.0.1',
  addresses: { http: '127.0.0.1' },
  ports: { grpc: 8502, dns: 8600 },
  connect: { enabled: true },
  acl: {
    enabled: true,
    default_policy: 'deny',
    down_policy: 'extend-cache',
    enable_token_persistence: true,
    tokens: { initial_management: SECRET },
  },
  telemetry: { disable_hostname: true, prometheus_retention_time: '60s' },
  performance: { raft_multiplier: 1 },
  encrypt: 'pUqJrVyVRj5jsiYEkM/tFQYfWyJIv4s3XkvDwy7Cu5s=',
  ca_file: '/etc/consul.d/consul-agent-ca.pem',
  cert_file: '/etc/consul.d/dc1-server-consul-0.pem',
  key_file: '/etc/consul.d/dc1-server-consul-0-key.pem',
  verify_incoming: true,
  recursors: ['1.1.1.1'],
  enable_script_checks: false,
  leave_on_terminate: true,
  services: [{ name: 'web', port: 8080, check: { http: 'http://localhost:8080/health', interval: '10s' } }],
  checks: [{ id: 'disk', args: ['/usr/local/bin/check-disk'], interval: '30s' }],
};

const IGNORED = [
  'bootstrap_expect',
  'ui_config',
  'retry_join',
  'addresses',
  'ports.grpc',
  'ports.dns',
  'telemetry.disable_hostname',
  'performance',
  'encrypt',
  'recursors',
  'enable_script_checks',
  'leave_on_terminate',
];

const MOVED = [
  ['ca_file', 'tls.defaults.ca_file'],
  ['cert_file', 'tls.defaults.cert_file'],
  ['key_file', 'tls.defaults.key_file'],
  ['verify_incoming', 'tls.defaults.verify_incoming'],
];

const tmp = tempDir();
afterAll(() => tmp.cleanup());

async function loadFiles(...paths: string[]) {
  const warnings: string[] = [];
  const sources = await readConfigSources(paths.map((path) => ({ kind: 'file' as const, path })));
  const config = loadConfig({ sources, flags: {}, dev: false, env: testEnv, warn: (m) => warnings.push(m) });
  return { config, warnings };
}

async function problemsOf(...paths: string[]): Promise<readonly string[]> {
  try {
    await loadFiles(...paths);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected the config to be rejected');
}

describe("a Consul agent's config file", () => {
  it.each([
    ['HCL', () => tmp.file('consul.hcl', CONSUL_HCL)],
    ['JSON', () => tmp.file('consul.json', CONSUL_JSON)],
  ])('(%s) loads: what svc-agent implements is read, the rest warned about once per key', async (_format, write) => {
    const file = write();
    const { config, warnings } = await loadFiles(file);
    expect(config).toMatchObject({
      datacenter: 'east-1',
      dataDir: '/opt/consul',
      logLevel: 'info',
      nodeName: 'consul-server-1',
      clientAddr: '127.0.0.1',
      // bind_addr 0.0.0.0, as Consul: the host's one private IPv4 address is advertised.
      advertiseAddr: '10.0.0.7',
      server: true,
      acl: {
        enabled: true,
        defaultPolicy: 'deny',
        downPolicy: 'extend-cache',
        enableTokenPersistence: true,
        tokens: { initialManagement: SECRET },
      },
      connect: { enabled: true },
      telemetry: { prometheusRetentionTimeMs: 60_000 },
      tls: {
        caFile: CONSUL_JSON.ca_file,
        certFile: CONSUL_JSON.cert_file,
        keyFile: CONSUL_JSON.key_file,
        verifyIncoming: true,
      },
    });
    // The HCL parser gives keys in its own order; each warning appears once either way.
    expect([...warnings].sort()).toEqual(
      [
        ...MOVED.map(([from, to]) => `${file}: The '${from}' field is deprecated. Use the '${to}' field instead.`),
        ...IGNORED.map((key) => `${file}: ${key} is ignored: svc-agent does not implement this Consul setting`),
      ].sort(),
    );
  });

  it('refuses a key Consul does not have either, naming it, its file and the key meant', async () => {
    const hcl = tmp.file('typo.hcl', 'datacentre = "east-1"\ndata_dir = "/opt/consul"\n');
    const json = tmp.file('typo.json', {
      data_dir: '/opt/consul',
      telemetry: { disable_hostnam: true },
      ui_config: { enabeld: true },
    });
    expect(await problemsOf(hcl)).toEqual([`${hcl}: invalid config key datacentre (did you mean datacenter?)`]);
    expect(await problemsOf(json)).toEqual([
      `${json}: invalid config key telemetry.disable_hostnam (did you mean telemetry.disable_hostname?)`,
      `${json}: invalid config key ui_config.enabeld (did you mean ui_config.enabled?)`,
    ]);
  });

  it('takes any contents under a key Consul leaves free, and checks the built-in CA keys as before', async () => {
    const free = tmp.file('free.json', {
      data_dir: '/opt/consul',
      node_meta: { rack: 'r1' },
      config_entries: { bootstrap: [{ anything: 1 }] },
    });
    expect((await loadFiles(free)).warnings).toEqual([
      `${free}: node_meta is ignored: svc-agent does not implement this Consul setting`,
      `${free}: config_entries is ignored: svc-agent does not implement this Consul setting`,
    ]);
    const ca = tmp.file('ca.json', { data_dir: '/opt/consul', connect: { ca_config: { leaf_cert_tll: '72h' } } });
    expect(await problemsOf(ca)).toEqual([
      `${ca}: invalid config key connect.ca_config.leaf_cert_tll (did you mean connect.ca_config.leaf_cert_ttl?)`,
    ]);
  });
});

describe('every key of Consul', () => {
  it('is read or ignored, never refused', () => {
    const everything = (tree: ConsulKeyTree): Record<string, unknown> =>
      Object.fromEntries(
        Object.entries(tree).map(([name, node]) => [
          name,
          typeof node === 'object' ? everything(node) : node === 'free' ? {} : 1,
        ]),
      );
    const { problems, ignored } = checkKeys(everything(CONSUL_KEYS));
    expect(problems).toEqual([]);
    expect(ignored).toContain('ui_config');
    expect(ignored).not.toContain('datacenter');
  });
});

describe("Consul's addresses.http and addresses.https", () => {
  it('are refused where ignoring them would serve an API on another address than the file asks', async () => {
    const file = tmp.file(
      'addresses.hcl',
      'data_dir = "/opt/consul"\nclient_addr = "0.0.0.0"\naddresses {\n  http = "127.0.0.1"\n}\n',
    );
    expect(await problemsOf(file)).toEqual([
      `${file}: addresses.http: svc-agent serves its HTTP and HTTPS APIs on client_addr (0.0.0.0) only; set client_addr to "127.0.0.1" or remove addresses.http`,
    ]);
  });

  it('are ignored with a warning where they name client_addr, or their API is off', async () => {
    const same = tmp.file('same.json', {
      data_dir: '/opt/consul',
      client_addr: '10.0.0.5',
      addresses: { http: '10.0.0.5', https: '127.0.0.1' },
    });
    expect((await loadFiles(same)).warnings).toEqual([
      `${same}: addresses is ignored: svc-agent does not implement this Consul setting`,
    ]);
  });
});

describe("Consul's http_config restrictions", () => {
  it('are refused when they restrict, since ignoring them would open what the file closes', async () => {
    const file = tmp.file(
      'restrict.hcl',
      'data_dir = "/opt/consul"\nhttp_config {\n  block_endpoints = ["/v1/agent/reload"]\n  allow_write_http_from = ["127.0.0.0/8"]\n}\n',
    );
    expect(await problemsOf(file)).toEqual([
      `${file}: http_config.block_endpoints: svc-agent does not implement this Consul restriction and will not serve without it; block these paths in a proxy in front of the agent, or with ACLs`,
      `${file}: http_config.allow_write_http_from: svc-agent does not implement this Consul restriction and will not serve without it; allow writes by ACL token instead, or filter addresses in front of the agent`,
    ]);
  });

  it('are ignored with a warning when empty', async () => {
    const file = tmp.file('empty.json', {
      data_dir: '/opt/consul',
      http_config: { block_endpoints: [], allow_write_http_from: [] },
    });
    expect((await loadFiles(file)).warnings).toEqual([
      `${file}: http_config.block_endpoints is ignored: svc-agent does not implement this Consul setting`,
      `${file}: http_config.allow_write_http_from is ignored: svc-agent does not implement this Consul setting`,
    ]);
  });
});

describe("Consul's deprecated keys", () => {
  it('move where Consul moves them, with its warning; the new key wins when a file sets both', async () => {
    const file = tmp.file('old.json', {
      data_dir: '/opt/consul',
      acl_master_token: 'old-secret',
      acl_default_policy: 'deny',
      acl_token: 'anon',
      acl: { default_policy: 'allow' },
      tls_min_version: 'tls13',
    });
    const { config, warnings } = await loadFiles(file);
    expect(config.acl).toMatchObject({
      tokens: { initialManagement: 'old-secret', default: 'anon' },
      defaultPolicy: 'allow',
    });
    expect(config.tls.minVersion).toBe('TLSv1_3');
    expect(warnings).toEqual([
      `${file}: The 'acl_token' field is deprecated. Use the 'acl.tokens.default' field instead.`,
      `${file}: The 'acl_master_token' field is deprecated. Use the 'acl.tokens.initial_management' field instead.`,
      `${file}: The 'acl_default_policy' field is deprecated. Use the 'acl.default_policy' field instead.`,
      `${file}: 'tls_min_version' value 'tls13' is deprecated, please specify 'TLSv1_3' instead`,
      `${file}: The 'tls_min_version' field is deprecated. Use the 'tls.defaults.tls_min_version' field instead.`,
    ]);
  });

  it('acl_datacenter turns ACLs on, as in Consul; acl.tokens.master is initial_management', async () => {
    const file = tmp.file(
      'acl-dc.hcl',
      'data_dir = "/opt/consul"\nacl_datacenter = "dc1"\nacl {\n  tokens {\n    master = "m"\n  }\n}\n',
    );
    const { config, warnings } = await loadFiles(file);
    expect(config.acl.enabled).toBe(true);
    expect(config.acl.tokens.initialManagement).toBe('m');
    expect(warnings).toEqual([
      `${file}: The 'acl.tokens.master' field is deprecated. Use the 'acl.tokens.initial_management' field instead.`,
      `${file}: The 'acl_datacenter' field is deprecated. Use the 'primary_datacenter' field instead.`,
      `${file}: primary_datacenter is ignored: svc-agent does not implement this Consul setting`,
    ]);
  });

  it("keep svc-agent's own removed keys and second spellings working", async () => {
    const file = tmp.file('own.json', {
      data_dir: '/opt/consul',
      kv_max_value_size: 2048,
      performance: { v8_threads: 'idle' },
    });
    const { config, warnings } = await loadFiles(file);
    expect(config.kvMaxValueSize).toBe(2048);
    expect(warnings).toEqual([
      expect.stringMatching(new RegExp(`^${file}: performance\\.v8_threads is deprecated and has no effect`)),
    ]);
  });
});

describe('did you mean', () => {
  it('counts a swap of neighbours as one edit, and offers nothing when no key is near', () => {
    expect(nearestKey('datacentre', ['data_dir', 'datacenter'])).toBe('datacenter');
    expect(nearestKey('dc', ['datacenter'])).toBeUndefined();
    expect(nearestKey('ab', ['ba', 'abc'])).toBe('abc'); // both one edit away: the first alphabetically
    expect(nearestKey('datacentre', ['datacenter', 'datacentr'])).toBe('datacenter');
    expect(nearestKey('colour', ['cloud', 'acl'])).toBeUndefined();
  });
});
