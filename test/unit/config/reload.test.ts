import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load.js';
import { fileKey, planReload } from '../../../src/config/reload.js';
import type { RawConfig } from '../../../src/config/schema.js';

const load = (flags: RawConfig) =>
  loadConfig({
    files: [],
    flags,
    dev: true,
    env: { hostname: () => 'h', readFile: () => '{}', isDirectory: () => undefined, hostAddresses: () => [] },
  });

describe('planReload', () => {
  it('nothing changed: nothing to apply or restart', () => {
    expect(planReload(load({}), load({}))).toEqual({ applied: [], restartNeeded: [] });
  });

  it('applies the run-time keys and names the rest by their file keys', () => {
    const next = load({
      log_level: 'debug',
      acl: { tokens: { default: 'd', agent: 'a' }, default_policy: 'deny' },
      limits: { http_max_body_bytes: 1000, kv_max_value_size: 100 },
      default_query_time: '10s',
      check_update_interval: '1m',
      connect: { leaf_root_change_spread: '1s', ca_config: { leaf_cert_ttl: '24h' } },
      datacenter: 'dc2',
      ports: { http: 9000 },
      cluster: { member_ttl: '20s' },
    });
    const plan = planReload(load({}), next);
    expect([...plan.applied].sort()).toEqual([
      'acl.tokens.agent',
      'acl.tokens.default',
      'check_update_interval',
      'connect.leaf_root_change_spread',
      'default_query_time',
      'limits.http_max_body_bytes',
      'limits.kv_max_value_size',
      'log_level',
    ]);
    expect([...plan.restartNeeded].sort()).toEqual([
      'acl.default_policy',
      'cluster.member_ttl',
      'connect.ca_config.leaf_cert_ttl',
      'datacenter',
      'ports.http',
    ]);
  });

  it('compares lists by value', () => {
    expect(
      planReload(
        load({ cluster: { etcd: { endpoints: ['http://127.0.0.1:2379'] } } }),
        load({ cluster: { etcd: { endpoints: ['http://127.0.0.1:2379'] } } }),
      ).restartNeeded,
    ).toEqual([]);
    expect(
      planReload(load({}), load({ cluster: { etcd: { endpoints: ['http://127.0.0.1:2379'] } } })).restartNeeded,
    ).toContain('cluster.etcd.endpoints');
  });
});

describe('fileKey', () => {
  it('turns AgentConfig paths into config-file keys', () => {
    expect(fileKey('connect.caConfig.leafCertTtlMs')).toBe('connect.ca_config.leaf_cert_ttl');
    expect(fileKey('kvMaxValueSize')).toBe('limits.kv_max_value_size');
    expect(fileKey('tls.certFile')).toBe('tls.defaults.cert_file');
    expect(fileKey('cluster.etcd.tls.caFile')).toBe('cluster.etcd.tls.ca_file');
    expect(fileKey('httpConfig.headerBrand')).toBe('http_config.header_brand');
    expect(fileKey('acl.tokens.initialManagement')).toBe('acl.tokens.initial_management');
  });
});
