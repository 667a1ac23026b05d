import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BLOCK_KEYS } from '../../../src/config/block-keys.js';
import { loadConfig } from '../../../src/config/load.js';
import type { PlainObject } from '../../../src/config/object.js';
import { KEY_RELOADS, planReload } from '../../../src/config/reload.js';
import { listConfigKeys, type RawConfig } from '../../../src/config/schema.js';
import type { AgentConfig } from '../../../src/config/types.js';
import {
  baseValues,
  changedValues,
  keyChanges,
  UNCHANGEABLE,
  type ChangeFiles,
} from '../../support/config-key-changes.js';
import { makeTlsFiles, type TlsFiles } from '../../support/tls-files.js';
import { testEnv } from './helpers.js';

const load = (flags: RawConfig) =>
  loadConfig({
    files: [],
    flags,
    dev: true,
    env: { hostname: () => 'h', readFile: () => '{}', isDirectory: () => undefined, hostAddresses: () => [] },
  });

const loadValues = (values: PlainObject): AgentConfig =>
  loadConfig({ sources: [{ path: 'agent.json', values }], flags: {}, dev: true, env: testEnv });

const DECLARED = [...listConfigKeys().map((k) => k.path), ...BLOCK_KEYS.map((k) => k.path)];

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

  it('names a tls.https key as the tls.defaults key it overrides', () => {
    expect(planReload(load({}), load({ tls: { https: { tls_min_version: 'TLSv1_3' } } }))).toEqual({
      applied: ['tls.defaults.tls_min_version'],
      restartNeeded: [],
    });
  });
});

describe('the keys’ reload rules', () => {
  it('every declared key has a rule, sameAs naming a key with one of its own', () => {
    expect([...KEY_RELOADS.keys()]).toEqual(DECLARED);
  });

  it('every AgentConfig field but -dev is set by exactly one key', () => {
    const leaves = leafPaths(load({}), '');
    const owners = [...KEY_RELOADS].filter(([path, rule]) => path === rule.key).map(([, rule]) => rule.agent);
    expect([...owners].sort()).toEqual(leaves.filter((path) => path !== 'dev').sort());
  });

  describe('a change of each key is planned as the key declares', () => {
    let tls: TlsFiles;
    let files: ChangeFiles;
    beforeAll(async () => {
      tls = await makeTlsFiles();
      files = { ...tls, otherCaFile: tls.strangerCertFile };
    });
    afterAll(() => tls.remove());

    it('has a change for every key that can change', () => {
      const changes = keyChanges(files);
      expect(Object.keys(changes).sort()).toEqual(DECLARED.filter((path) => !(path in UNCHANGEABLE)).sort());
    });

    for (const path of DECLARED.filter((p) => !(p in UNCHANGEABLE))) {
      it(path, () => {
        const change = keyChanges(files)[path];
        if (change === undefined) throw new Error(`no change for ${path} in test/support/config-key-changes.ts`);
        const rule = KEY_RELOADS.get(path);
        const { before, after } = changedValues(path, change, baseValues(files));
        const plan = planReload(loadValues(before), loadValues(after));
        expect(rule?.reload === 'applied' ? plan.applied : plan.restartNeeded).toContain(rule?.key);
        // Nothing else is named but what the change set with it.
        const named = [...plan.applied, ...plan.restartNeeded].filter((key) => key !== rule?.key);
        const alongside = listLeaves(change.with ?? {}, '').map((p) => KEY_RELOADS.get(p)?.key);
        for (const key of named) expect(alongside, `${path} also changed ${key}`).toContain(key);
      });
    }
  });
});

function leafPaths(value: unknown, prefix: string): string[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [prefix];
  return Object.entries(value).flatMap(([key, v]) => leafPaths(v, prefix === '' ? key : `${prefix}.${key}`));
}

const listLeaves = (values: PlainObject, prefix: string): string[] => leafPaths(values, prefix);
