// loadConfig: defaults, layering (files in order, then flags), dev mode, file errors, freezing,
// deprecated settings.
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/errors.js';
import { CONFIG_DEPRECATION_CODE, loadConfig, type LoadInput } from '../../../src/config/load.js';
import type { RawConfig } from '../../../src/config/schema.js';
import { load, problemsOf, tempDir, testEnv } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

describe('defaults', () => {
  it('fills every key', () => {
    const c = load({ dev: true });
    expect(c).toEqual({
      dev: true,
      datacenter: 'dc1',
      nodeName: 'test-host',
      nodeId: undefined,
      clientAddr: '127.0.0.1',
      advertiseAddr: '127.0.0.1',
      advertiseAddrWan: '127.0.0.1',
      ports: { http: 8500, https: -1 },
      tls: { caFile: undefined, certFile: undefined, keyFile: undefined, verifyIncoming: false, minVersion: 'TLSv1_2' },
      dataDir: undefined,
      logLevel: 'info',
      logJson: false,
      logFile: { path: undefined, rotateBytes: 0, rotateDurationMs: 86_400_000, rotateMaxFiles: 0 },
      translateWanAddrs: false,
      server: true,
      cluster: {
        etcd: {
          endpoints: [],
          prefix: '/svc/',
          tls: { caFile: undefined, certFile: undefined, keyFile: undefined },
          username: undefined,
          password: undefined,
        },
        memberTtlMs: 10_000,
        leaderProbeIntervalMs: 500,
      },
      acl: {
        enabled: false,
        defaultPolicy: 'allow',
        downPolicy: 'extend-cache',
        tokens: {
          initialManagement: undefined,
          default: undefined,
          agent: undefined,
          agentRecovery: undefined,
          replication: undefined,
          configFileServiceRegistration: undefined,
        },
        enableTokenPersistence: false,
        tokenMinExpirationTtlMs: 60_000,
        tokenMaxExpirationTtlMs: 86_400_000,
      },
      httpConfig: { headerBrand: 'Svc', transport: 'auto' },
      limits: { httpMaxBodyBytes: 4 * 1024 * 1024 },
      kvMaxValueSize: 524_288,
      defaultQueryTimeMs: 300_000,
      maxQueryTimeMs: 600_000,
      connect: {
        enabled: true,
        caProvider: 'consul',
        caConfig: {
          leafCertTtlMs: 72 * 3_600_000,
          intermediateCertTtlMs: 8760 * 3_600_000,
          rootCertTtlMs: 87_600 * 3_600_000,
          privateKeyType: 'ec',
          privateKeyBits: 256,
          csrMaxPerSecond: 50,
          csrMaxConcurrent: 0,
          privateKey: undefined,
          rootCert: undefined,
        },
        leafRootChangeSpreadMs: 30_000,
        leafCacheMaxEntries: 10_000,
        signingPriority: 'low',
      },
      cache: { maxEntries: 10_000, ttlMs: 72 * 3_600_000 },
      telemetry: { prometheusRetentionTimeMs: 60_000 },
      sidecarPorts: { min: 21000, max: 21255 },
      checkOutputMaxSize: 4096,
      checkUpdateIntervalMs: 300_000,
      reconnectTimeoutMs: 72 * 3600_000,
      registrations: { services: [], checks: [] },
    });
  });

  it('takes the node name from the host by default', () => {
    const c = loadConfig({ files: [], flags: {}, dev: true, env: { ...testEnv, hostname: () => 'box-7' } });
    expect(c.nodeName).toBe('box-7');
  });

  it('defaults the key size by key type', () => {
    const f = tmp.file('rsa.json', { connect: { ca_config: { private_key_type: 'rsa' } } });
    expect(load({ files: [f] }).connect.caConfig.privateKeyBits).toBe(2048);
  });
});

describe('layering', () => {
  it('applies files in order, then flags', () => {
    const a = tmp.file('a.json', { datacenter: 'from-a', node_name: 'a-node', ports: { http: 1111 } });
    const b = tmp.file('b.json', { datacenter: 'from-b', log_level: 'warn' });
    const c = load({ files: [a, b], flags: { log_level: 'error' } });
    expect(c.datacenter).toBe('from-b');
    expect(c.nodeName).toBe('a-node');
    expect(c.ports.http).toBe(1111);
    expect(c.logLevel).toBe('error');
  });

  it('merges nested objects key by key across files', () => {
    const a = tmp.file('acl-a.json', { acl: { enabled: true, tokens: { agent: 'agent-secret' } } });
    const b = tmp.file('acl-b.json', { acl: { default_policy: 'deny', tokens: { default: 'anon' } } });
    const c = load({ files: [a, b], flags: { acl: { tokens: { agent: 'flag-agent' } } } });
    expect(c.acl).toEqual({
      enabled: true,
      defaultPolicy: 'deny',
      downPolicy: 'extend-cache',
      tokens: {
        initialManagement: undefined,
        default: 'anon',
        agent: 'flag-agent',
        agentRecovery: undefined,
        replication: undefined,
        configFileServiceRegistration: undefined,
      },
      enableTokenPersistence: false,
      tokenMinExpirationTtlMs: 60_000,
      tokenMaxExpirationTtlMs: 86_400_000,
    });
  });

  it('lets a flag override a file for the same nested key', () => {
    const a = tmp.file('port.json', { ports: { http: 1111 } });
    expect(load({ files: [a], flags: { ports: { http: 0 } } }).ports.http).toBe(0);
  });

  it('judges cross-key rules on the merged result', () => {
    const a = tmp.file('q-a.json', { default_query_time: '20m' });
    const b = tmp.file('q-b.json', { max_query_time: '30m' });
    const c = load({ files: [a, b] });
    expect([c.defaultQueryTimeMs, c.maxQueryTimeMs]).toEqual([1_200_000, 1_800_000]);
  });
});

describe('dev mode and data_dir', () => {
  it('requires data_dir unless -dev', () => {
    expect(problemsOf({ dev: false })).toEqual(['data_dir: required unless -dev is given']);
  });

  it('runs in memory in dev mode', () => {
    const c = load({ dev: true });
    expect(c.dev).toBe(true);
    expect(c.dataDir).toBeUndefined();
  });

  it('accepts a data_dir outside dev mode', () => {
    const c = load({ dev: false, flags: { data_dir: tmp.dir } });
    expect(c.dev).toBe(false);
    expect(c.dataDir).toBe(tmp.dir);
  });

  it('accepts a data_dir that does not exist yet', () => {
    expect(load({ dev: false, flags: { data_dir: `${tmp.dir}/not-yet` } }).dataDir).toBe(`${tmp.dir}/not-yet`);
  });

  it('rejects a data_dir that is a file', () => {
    const f = tmp.file('plain-file', 'x');
    expect(problemsOf({ dev: false, flags: { data_dir: f } })).toEqual([
      `data_dir: ${JSON.stringify(f)} is not a directory`,
    ]);
  });

  it('rejects an empty data_dir', () => {
    expect(problemsOf({ dev: false, flags: { data_dir: '' } })).toEqual([
      'data_dir: expected a non-empty string, got ""',
    ]);
  });

  it('keeps ACLs as configured in dev mode', () => {
    const f = tmp.file('dev-acl.json', { acl: { enabled: true } });
    expect(load({ dev: true, files: [f] }).acl.enabled).toBe(true);
  });
});

describe('config files', () => {
  it('names a missing file', () => {
    const missing = `${tmp.dir}/nope.json`;
    expect(problemsOf({ files: [missing] })).toEqual([`${missing}: cannot read config file: no such file`]);
  });

  it('names the file and position of bad JSON without quoting its content', () => {
    const f = tmp.file('bad.json', '{\n  "datacenter": "x",\n  "acl": { "tokens": { "agent": "s3cret" } ]\n}');
    const [p] = problemsOf({ files: [f] });
    expect(p).toBe(`${f}: invalid JSON at line 3, column 44: expected ',' or '}' after a property value`);
    expect(p).not.toContain('s3cret');
  });

  it('reports every unreadable file at once', () => {
    const bad = tmp.file('bad2.json', '{"a": }');
    const missing = `${tmp.dir}/gone.json`;
    expect(problemsOf({ files: [bad, missing] })).toEqual([
      `${bad}: invalid JSON at line 1, column 7: unexpected character "}"`,
      `${missing}: cannot read config file: no such file`,
    ]);
  });

  it('rejects a file whose top level is not an object', () => {
    const f = tmp.file('array.json', '[1, 2]');
    expect(problemsOf({ files: [f] })).toEqual([`${f}: expected a JSON object at the top level`]);
  });

  it('accepts a byte-order mark', () => {
    const f = tmp.file('bom.json', '\uFEFF{"datacenter": "bom"}');
    expect(load({ files: [f] }).datacenter).toBe('bom');
  });

  it('names unknown keys with their file, at any depth', () => {
    const f = tmp.file('unknown.json', { colour: 'red', acl: { enabeld: true, tokens: { secret: 'x' } } });
    expect(problemsOf({ files: [f] })).toEqual([
      `${f}: invalid config key colour`,
      `${f}: invalid config key acl.enabeld (did you mean acl.enabled?)`,
      `${f}: invalid config key acl.tokens.secret`,
    ]);
  });

  it('treats "__proto__" as an unknown key, not a prototype', () => {
    const f = tmp.file('proto.json', '{"__proto__": {"dev": true}, "acl": {"__proto__": {"enabled": true}}}');
    expect(problemsOf({ files: [f] })).toEqual([
      `${f}: invalid config key __proto__`,
      `${f}: invalid config key acl.__proto__`,
    ]);
  });

  it('reports unknown keys and bad values together', () => {
    const f = tmp.file('mixed.json', { bogus: 1, ports: { http: 70_000 } });
    expect(problemsOf({ files: [f] })).toEqual([
      `${f}: invalid config key bogus`,
      'ports.http: expected an integer from -1 to 65535, got 70000',
    ]);
  });
});

describe('the error', () => {
  it('is a ConfigError with a stable code and one line per problem', () => {
    const f = tmp.file('two.json', { acl: { default_policy: 'maybe' }, ports: { http: 70_000 } });
    let caught: unknown;
    try {
      load({ files: [f] });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const e = caught as ConfigError;
    expect(e.code).toBe('CONFIG_INVALID');
    expect(e.kind).toBe('invalid');
    expect(e.message).toBe(
      `${f}: ports.http: expected an integer from -1 to 65535, got 70000\n${f}: acl.default_policy: expected "allow" or "deny", got "maybe"`,
    );
  });
});

describe('the result', () => {
  it('is deep-frozen', () => {
    const c = load({});
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.connect.caConfig)).toBe(true);
    expect(Object.isFrozen(c.acl.tokens)).toBe(true);
    expect(() => {
      (c.ports as { http: number }).http = 1;
    }).toThrow(TypeError);
  });

  it('does not share objects with the flags passed in', () => {
    const flags = { ports: { http: 1234 } };
    load({ flags });
    expect(Object.isFrozen(flags.ports)).toBe(false);
  });
});

describe('kv_max_value_size spellings', () => {
  const files = tempDir();
  afterAll(() => files.cleanup());

  it("accepts the top-level spelling and Consul's limits.kv_max_value_size", () => {
    expect(load({ files: [files.file('top.json', { kv_max_value_size: 2048 })] }).kvMaxValueSize).toBe(2048);
    expect(load({ files: [files.file('lim.json', { limits: { kv_max_value_size: 4096 } })] }).kvMaxValueSize).toBe(
      4096,
    );
  });

  it('lets a later file override an earlier one across spellings', () => {
    const a = files.file('a.json', { limits: { kv_max_value_size: 1000 } });
    const b = files.file('b.json', { kv_max_value_size: 3000 });
    expect(load({ files: [a, b] }).kvMaxValueSize).toBe(3000);
  });

  it('rejects both spellings in one file, naming the file', () => {
    const both = files.file('both.json', { kv_max_value_size: 1, limits: { kv_max_value_size: 2 } });
    expect(() => load({ files: [both] })).toThrow(
      `${both}: kv_max_value_size: set either kv_max_value_size or limits.kv_max_value_size, not both`,
    );
  });
});

describe('connect.signing_priority', () => {
  it.each(['low', 'normal'] as const)('takes %s', (value) => {
    expect(load({ flags: { connect: { signing_priority: value } } }).connect.signingPriority).toBe(value);
  });
});

describe('deprecated settings', () => {
  const loadWarning = (input: Partial<LoadInput>) => {
    const warnings: string[] = [];
    const config = load({ ...input, warn: (message) => warnings.push(message) });
    return { config, warnings };
  };
  const CPU_POLICY = 'CPU policy for the whole service is the operator\'s to set (README, "CPU policy")';

  it('ignores the removed performance keys with a warning naming each, its file and what replaced it', () => {
    const file = tmp.file('performance.json', { performance: { event_loop_slice: '100us', v8_threads: 'idle' } });
    const { config, warnings } = loadWarning({ files: [file] });
    expect(config).toEqual(load({}));
    expect(warnings).toEqual([
      `${file}: performance.event_loop_slice is deprecated and has no effect: the agent no longer changes its event loop's scheduler slice; ${CPU_POLICY}`,
      `${file}: performance.v8_threads is deprecated and has no effect: the agent no longer changes the scheduling of V8's threads; ${CPU_POLICY}`,
    ]);
  });

  it('ignores them whatever value they hold, the ones they once refused included', () => {
    const { warnings } = loadWarning({
      flags: { performance: { event_loop_slice: 'short', v8_threads: 7 } } as unknown as RawConfig,
    });
    expect(warnings.map((w) => w.split(' is ')[0])).toEqual([
      'command line: performance.event_loop_slice',
      'command line: performance.v8_threads',
    ]);
  });

  it('still reports an unknown key beside a removed one', () => {
    const file = tmp.file('performance-other.json', { performance: { v8_threads: 'normal', raft_multipler: 1 } });
    expect(problemsOf({ files: [file] })).toEqual([
      `${file}: invalid config key performance.raft_multipler (did you mean performance.raft_multiplier?)`,
    ]);
  });

  it('takes signing_priority "idle" as "low", with a warning', () => {
    const file = tmp.file('idle.json', { connect: { signing_priority: 'idle' } });
    const { config, warnings } = loadWarning({ files: [file] });
    expect(config.connect.signingPriority).toBe('low');
    expect(warnings).toEqual([
      `${file}: connect.signing_priority "idle" is deprecated and means "low": the agent no longer puts threads under SCHED_IDLE; "low" runs them at nice +10; ${CPU_POLICY}`,
    ]);
  });

  it('warns about nothing when nothing deprecated is set', () => {
    expect(loadWarning({ flags: { connect: { signing_priority: 'normal' } } }).warnings).toEqual([]);
  });

  it('emits a DeprecationWarning when the caller takes no warnings itself', () => {
    const emitted: unknown[][] = [];
    const saved = process.emitWarning;
    process.emitWarning = ((...args: unknown[]) => void emitted.push(args)) as typeof process.emitWarning;
    try {
      load({ flags: { connect: { signing_priority: 'idle' } } as unknown as RawConfig });
    } finally {
      process.emitWarning = saved;
    }
    expect(emitted).toEqual([
      [
        expect.stringContaining('command line: connect.signing_priority "idle" is deprecated'),
        { type: 'DeprecationWarning', code: CONFIG_DEPRECATION_CODE },
      ],
    ]);
  });
});
