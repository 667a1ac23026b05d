// Value validation through loadConfig: every message names the dotted key, what was expected and
// what was given (or, for secrets, only the shape of what was given).
import { afterAll, describe, expect, it } from 'vitest';
import { load, problemsOf, tempDir } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

let n = 0;
/** Problems for a config file with `content`, in dev mode so data_dir is not required. */
const problems = (content: unknown): readonly string[] => problemsOf({ files: [tmp.file(`c${n++}.json`, content)] });
const loaded = (content: unknown) => load({ files: [tmp.file(`c${n++}.json`, content)] });

describe('scalar keys', () => {
  it.each([
    [{ acl: { default_policy: 'maybe' } }, 'acl.default_policy: expected "allow" or "deny", got "maybe"'],
    [
      { acl: { down_policy: 'cache' } },
      'acl.down_policy: expected one of "extend-cache", "async-cache", "allow", "deny", got "cache"',
    ],
    [{ ports: { http: 70_000 } }, 'ports.http: expected an integer from -1 to 65535, got 70000'],
    [{ ports: { http: -2 } }, 'ports.http: expected an integer from -1 to 65535, got -2'],
    [{ ports: { http: 80.5 } }, 'ports.http: expected an integer from -1 to 65535, got 80.5'],
    [{ ports: { http: '8500' } }, 'ports.http: expected an integer from -1 to 65535, got "8500"'],
    [
      { connect: { ca_config: { leaf_cert_ttl: '3 days' } } },
      'connect.ca_config.leaf_cert_ttl: invalid duration "3 days"',
    ],
    [
      { connect: { ca_config: { leaf_cert_ttl: 3600 } } },
      'connect.ca_config.leaf_cert_ttl: expected a duration string such as "30s", got 3600',
    ],
    [{ datacenter: 'dc 1' }, 'datacenter: expected only lowercase alphanumerics, "-" or "_", got "dc 1"'],
    [{ datacenter: '' }, 'datacenter: expected only lowercase alphanumerics, "-" or "_", got ""'],
    [{ node_name: '' }, 'node_name: expected a non-empty string, got ""'],
    [{ node_id: 'not-a-uuid' }, 'node_id: expected a UUID (8-4-4-4-12 hex digits), got "not-a-uuid"'],
    [{ client_addr: 'localhost' }, 'client_addr: expected an IP address, got "localhost"'],
    [{ log_level: 'loud' }, 'log_level: expected one of "trace", "debug", "info", "warn", "error", got "loud"'],
    [{ translate_wan_addrs: 'yes' }, 'translate_wan_addrs: expected true or false, got "yes"'],
    [{ acl: { enabled: 1 } }, 'acl.enabled: expected true or false, got 1'],
    [
      { acl: { token_min_expiration_ttl: '0s' } },
      'acl.token_min_expiration_ttl: expected a positive duration, got "0s"',
    ],
    [{ http_config: { header_brand: 'svc' } }, 'http_config.header_brand: expected "Svc" or "Consul", got "svc"'],
    [{ limits: { http_max_body_bytes: 0 } }, 'limits.http_max_body_bytes: expected an integer of at least 1, got 0'],
    [{ limits: { kv_max_value_size: 0 } }, 'limits.kv_max_value_size: expected an integer of at least 1, got 0'],
    [{ default_query_time: '0s' }, 'default_query_time: expected a positive duration, got "0s"'],
    [{ connect: { enabled: null } }, 'connect.enabled: expected true or false, got null'],
    [{ connect: { ca_provider: 'vault' } }, 'connect.ca_provider: expected "consul", got "vault"'],
    [
      { connect: { ca_config: { private_key_type: 'dsa' } } },
      'connect.ca_config.private_key_type: expected "ec" or "rsa", got "dsa"',
    ],
    [
      { connect: { ca_config: { csr_max_per_second: -1 } } },
      'connect.ca_config.csr_max_per_second: expected a number of at least 0, got -1',
    ],
    [
      { connect: { ca_config: { csr_max_concurrent: 1.5 } } },
      'connect.ca_config.csr_max_concurrent: expected an integer of at least 0, got 1.5',
    ],
    [{ connect: { leaf_root_change_spread: 'soon' } }, 'connect.leaf_root_change_spread: invalid duration "soon"'],
    [
      { connect: { leaf_cache_max_entries: 0 } },
      'connect.leaf_cache_max_entries: expected an integer of at least 1, got 0',
    ],
    [
      { connect: { trust_domain: 'bad domain' } },
      'connect.trust_domain: expected a trust domain (letters, digits, "-", "_", dot-separated), got "bad domain"',
    ],
    [{ cache: { max_entries: [] } }, 'cache.max_entries: expected an integer of at least 1, got an array'],
    [{ cache: { ttl: '0s' } }, 'cache.ttl: expected a positive duration, got "0s"'],
    [{ connect: { signing_priority: 'high' } }, 'connect.signing_priority: expected "low" or "normal", got "high"'],
  ])('%j', (content, message) => {
    expect(problems(content)).toEqual([message]);
  });

  it('reports a group that is not an object', () => {
    expect(problems({ acl: 'on', connect: { ca_config: [] } })).toEqual([
      'acl: expected an object, got "on"',
      'connect.ca_config: expected an object, got an array',
    ]);
  });

  it('collects every problem, one per line, in schema order', () => {
    expect(problems({ log_level: 'x', ports: { http: 'x' }, acl: { default_policy: 'x' } })).toEqual([
      'ports.http: expected an integer from -1 to 65535, got "x"',
      'log_level: expected one of "trace", "debug", "info", "warn", "error", got "x"',
      'acl.default_policy: expected "allow" or "deny", got "x"',
    ]);
  });
});

describe('accepted spellings', () => {
  it.each([
    ['DEBUG', 'debug'],
    ['Warn', 'warn'],
    ['err', 'error'],
    ['ERR', 'error'],
    ['trace', 'trace'],
  ])('log_level %s is %s', (given, level) => {
    expect(loaded({ log_level: given }).logLevel).toBe(level);
  });

  it('lower-cases the datacenter and node_id as Consul does', () => {
    const c = loaded({ datacenter: 'DC-East_1', node_id: 'ABCDEF01-2345-6789-ABCD-EF0123456789' });
    expect(c.datacenter).toBe('dc-east_1');
    expect(c.nodeId).toBe('abcdef01-2345-6789-abcd-ef0123456789');
  });

  it('accepts IPv6 and any-address client_addr, and port 0', () => {
    expect(loaded({ client_addr: '::1', ports: { http: 0 } }).clientAddr).toBe('::1');
    expect(loaded({ client_addr: '0.0.0.0' }).clientAddr).toBe('0.0.0.0');
  });

  it('converts durations to milliseconds, including Go compound forms', () => {
    const c = loaded({
      acl: { token_min_expiration_ttl: '10ms' },
      default_query_time: '1m30s',
      max_query_time: '1h',
      connect: { leaf_root_change_spread: '0s', ca_config: { leaf_cert_ttl: '1h' } },
      cache: { ttl: '500ms' },
    });
    expect(c.acl.tokenMinExpirationTtlMs).toBe(10);
    expect(c.defaultQueryTimeMs).toBe(90_000);
    expect(c.maxQueryTimeMs).toBe(3_600_000);
    expect(c.connect.leafRootChangeSpreadMs).toBe(0);
    expect(c.connect.caConfig.leafCertTtlMs).toBe(3_600_000);
    expect(c.cache.ttlMs).toBe(500);
  });

  it('keeps header brand Consul', () => {
    expect(loaded({ http_config: { header_brand: 'Consul' } }).httpConfig.headerBrand).toBe('Consul');
  });
});

describe('secrets never appear in messages', () => {
  it('describes a malformed management token by shape only', () => {
    const out = problems({ acl: { tokens: { initial_management: '' } } });
    expect(out).toEqual(['acl.tokens.initial_management: expected a non-empty string, got a 0-character string']);
  });

  it('accepts any non-empty management secret unchanged, as Consul does (a UUID, 32 hex digits, a word)', () => {
    for (const token of ['ABCDEF01-2345-6789-abcd-ef0123456789', '0123456789abcdef0123456789abcdef', 'hunter2']) {
      expect(loaded({ acl: { tokens: { initial_management: token } } }).acl.tokens.initialManagement).toBe(token);
    }
  });

  it('does not echo a bad PEM or token value', () => {
    const out = problems({
      acl: { tokens: { agent: '' } },
      connect: { ca_config: { private_key: 'secret-key', root_cert: 'x' } },
    });
    expect(out).toEqual([
      'acl.tokens.agent: expected a non-empty string, got a 0-character string',
      'connect.ca_config.private_key: expected a PEM-encoded string, got a 10-character string',
      'connect.ca_config.root_cert: expected a PEM-encoded string, got a 1-character string',
    ]);
  });
});

describe('rules between keys', () => {
  it('requires max_query_time >= default_query_time', () => {
    expect(problems({ default_query_time: '10m', max_query_time: '5m' })).toEqual([
      'max_query_time: must be at least default_query_time (10m0s), got 5m0s',
    ]);
  });

  it('requires the token expiration bounds in order', () => {
    expect(problems({ acl: { token_min_expiration_ttl: '2h', token_max_expiration_ttl: '1h' } })).toEqual([
      'acl.token_max_expiration_ttl: must be at least acl.token_min_expiration_ttl (2h0m0s), got 1h0m0s',
    ]);
  });

  it('requires the body limit to fit a KV value', () => {
    expect(problems({ limits: { http_max_body_bytes: 1000 } })).toEqual([
      'limits.http_max_body_bytes: must be at least limits.kv_max_value_size (524288), got 1000',
    ]);
    expect(loaded({ limits: { http_max_body_bytes: 1000, kv_max_value_size: 1000 } }).kvMaxValueSize).toBe(1000);
  });

  it('skips a rule whose inputs were already reported', () => {
    expect(problems({ default_query_time: 'x', max_query_time: '1s' })).toEqual([
      'default_query_time: invalid duration "x"',
    ]);
  });
});
