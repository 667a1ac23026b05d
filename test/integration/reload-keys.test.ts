// Every config key's reload rule against a running agent: for each declared key (src/config/schema.ts,
// block-keys.ts) a reload changes that key alone, and the plan, the log and the agent agree with the
// declaration. A key declared "applied" is then observed in use through the agent's surface (an
// endpoint, a TLS handshake, the logger's level); the few it cannot observe here are listed in
// PLAN_AND_LOG_ONLY with the reason, and checked by plan and log only.
import { connect as tlsConnect, type PeerCertificate } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, type Agent } from '../../src/agent/index.js';
import { BLOCK_KEYS } from '../../src/config/block-keys.js';
import { loadConfig, systemEnv } from '../../src/config/load.js';
import type { PlainObject } from '../../src/config/object.js';
import { KEY_RELOADS } from '../../src/config/reload.js';
import { listConfigKeys } from '../../src/config/schema.js';
import type { AgentConfig } from '../../src/config/types.js';
import type { LogLevel, RootLogger } from '../../src/core/log.js';
import {
  baseValues,
  changedValues,
  keyChanges,
  MANAGEMENT_TOKEN,
  UNCHANGEABLE,
  type ChangeFiles,
} from '../support/config-key-changes.js';
import { recordingLogger, type LogEntry } from '../support/recording-logger.js';
import { makeTlsFiles, type TlsFiles } from '../support/tls-files.js';

const RESTART_WARNING = 'config reloaded: these changes take effect after a restart';
const CA_CONFIG_WARNING_PREFIX = 'config reloaded: connect.ca_config only bootstraps the CA';

/** Applied keys this test checks by plan and log only, and why it cannot watch them at work. */
const PLAN_AND_LOG_ONLY: Readonly<Record<string, string>> = {
  'acl.tokens.agent': "only a client agent's catalog sync through a server sends it, which needs etcd",
  'acl.tokens.config_file_service_registration':
    "only a client agent's sync of config-file services through a server sends it, which needs etcd: test/integration/agent-token-file-registration.test.ts",
  'acl.tokens.replication': 'kept and read by nothing: one datacenter replicates nothing',
  'connect.leaf_root_change_spread': 'read at a CA root change, to spread leaf renewals at random over it',
  'tls.defaults.ca_file':
    'HTTPS checks verify against it from their next run: test/integration/check-tls.test.ts; client certificates only with verify_incoming, a restart key',
};

const env = {
  ...systemEnv,
  hostname: () => 'reload-keys',
  hostAddresses: () => [
    { interface: 'lo', address: '127.0.0.1', family: 'IPv4' as const, internal: true, defaultRoute: false },
    { interface: 'eth0', address: '10.0.0.7', family: 'IPv4' as const, internal: false, defaultRoute: true },
  ],
};

const load = (values: PlainObject): AgentConfig =>
  loadConfig({ sources: [{ path: 'agent.json', values }], flags: {}, dev: true, env, warn: () => undefined });

describe('each key reloads as it declares', () => {
  let tls: TlsFiles;
  let files: ChangeFiles;
  let base: PlainObject;
  let agent: Agent;
  let url: string;
  let httpsPort: number;
  const entries: LogEntry[] = [];
  let level: LogLevel = 'info';
  const log: RootLogger = {
    ...recordingLogger(entries),
    get level() {
      return level;
    },
    setLevel(next) {
      level = next;
    },
  };
  const auth = { 'X-Svc-Token': MANAGEMENT_TOKEN };

  beforeAll(async () => {
    tls = await makeTlsFiles();
    files = { ...tls, otherCaFile: tls.strangerCertFile };
    base = {
      ...baseValues(files),
      ports: { http: 0, https: 0 },
      acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: MANAGEMENT_TOKEN } },
    };
    agent = await createAgent(load(base), { log });
    url = `http://127.0.0.1:${await agent.listen()}`;
    httpsPort = agent.listening?.https as number;
  });
  afterAll(async () => {
    await agent.close();
    await tls.remove();
  });

  /** What shows a key at work: resolves once the running agent uses the changed value. */
  const observers: Readonly<Record<string, () => Promise<void>>> = {
    log_level: async () => {
      expect(level).toBe('debug');
    },
    'acl.tokens.agent_recovery': async () => {
      // The agent resolves the new recovery secret itself: its own endpoints answer it.
      const res = await fetch(`${url}/v1/agent/self`, { headers: { 'X-Svc-Token': 'recovery-token' } });
      expect(res.status).toBe(200);
    },
    'acl.tokens.default': async () => {
      // A write needs the management token; the request carries none.
      expect((await fetch(`${url}/v1/kv/anonymous`, { method: 'PUT', body: 'v' })).status).toBe(200);
      await fetch(`${url}/v1/kv/anonymous`, { method: 'DELETE', headers: auth });
    },
    'limits.http_max_body_bytes': async () => {
      const body = 'x'.repeat(2_000_000);
      const res = await fetch(`${url}/v1/agent/service/register`, { method: 'PUT', body, headers: auth });
      expect(res.status).toBe(413);
    },
    'limits.kv_max_value_size': async () => {
      const res = await fetch(`${url}/v1/kv/big`, { method: 'PUT', body: 'x'.repeat(200), headers: auth });
      expect(res.status).toBe(413);
    },
    // Without the change the query would stay parked for 300 s and the test would time out.
    default_query_time: async () => {
      const index = await kvIndex();
      expect((await fetch(`${url}/v1/kv/probe?index=${index}`, { headers: auth })).status).toBe(200);
    },
    max_query_time: async () => {
      const index = await kvIndex();
      expect((await fetch(`${url}/v1/kv/probe?index=${index}&wait=10m`, { headers: auth })).status).toBe(200);
    },
    check_update_interval: async () => {
      const check = { Name: 'output', CheckID: 'output', TTL: '1h' };
      await fetch(`${url}/v1/agent/check/register`, { method: 'PUT', body: JSON.stringify(check), headers: auth });
      await fetch(`${url}/v1/agent/check/pass/output?note=first`, { method: 'PUT', headers: auth });
      await catalogOutput('first');
      // An output-only change waits out check_update_interval (5m before the reload) to reach the catalog.
      await fetch(`${url}/v1/agent/check/pass/output?note=second`, { method: 'PUT', headers: auth });
      await catalogOutput('second');
      await fetch(`${url}/v1/agent/check/deregister/output`, { method: 'PUT', headers: auth });
    },
    'tls.defaults.cert_file': async () => {
      expect((await handshake()).subject.CN).toBe('next.svc');
    },
    'tls.defaults.key_file': async () => {
      expect((await handshake()).subject.CN).toBe('next.svc');
    },
    'tls.defaults.tls_min_version': async () => {
      await expect(handshake({ maxVersion: 'TLSv1.2' })).rejects.toThrow();
      expect((await handshake({ minVersion: 'TLSv1.3' })).subject.CN).toBe('server.svc');
    },
    services: async () => {
      const services = (await (await fetch(`${url}/v1/agent/services`, { headers: auth })).json()) as object;
      expect(Object.keys(services)).toContain('web');
    },
    checks: async () => {
      const checks = (await (await fetch(`${url}/v1/agent/checks`, { headers: auth })).json()) as object;
      expect(Object.keys(checks)).toContain('disk');
    },
  };

  const kvIndex = async (): Promise<string> => {
    await fetch(`${url}/v1/kv/probe`, { method: 'PUT', body: 'v', headers: auth });
    return (await fetch(`${url}/v1/kv/probe`, { headers: auth })).headers.get('X-Svc-Index') ?? '';
  };

  /** Waits, through blocking reads, until the catalog holds the check's output. */
  const catalogOutput = async (output: string): Promise<void> => {
    let index = '0';
    for (;;) {
      const res = await fetch(`${url}/v1/health/node/reload-keys?index=${index}`, { headers: auth });
      const checks = (await res.json()) as { CheckID: string; Output: string }[];
      if (checks.some((c) => c.CheckID === 'output' && c.Output === output)) return;
      index = res.headers.get('X-Svc-Index') ?? '0';
    }
  };

  const handshake = (versions: { minVersion?: 'TLSv1.3'; maxVersion?: 'TLSv1.2' } = {}): Promise<PeerCertificate> =>
    new Promise((resolve, reject) => {
      const socket = tlsConnect({ host: '127.0.0.1', port: httpsPort, rejectUnauthorized: false, ...versions }, () => {
        resolve(socket.getPeerCertificate());
        socket.end();
      });
      socket.on('error', reject);
    });

  const declared = [...listConfigKeys().map((k) => k.path), ...BLOCK_KEYS.map((k) => k.path)];

  it('watches every applied key at work, or says why not', () => {
    const applied = [...KEY_RELOADS].filter(([path, rule]) => path === rule.key && rule.reload === 'applied');
    for (const [path] of applied) expect(path in observers || path in PLAN_AND_LOG_ONLY, path).toBe(true);
  });

  for (const path of declared) {
    it(path, async () => {
      if (path in UNCHANGEABLE) return;
      const change = keyChanges(files)[path];
      const rule = KEY_RELOADS.get(path);
      if (change === undefined || rule === undefined) throw new Error(`${path}: no change or no rule`);
      const { before, after } = changedValues(path, change, base);
      await agent.reload(load(before));
      const from = entries.length;
      const plan = await agent.reload(load(after));
      const logged = entries.slice(from);
      const reloaded = logged.find((e) => e.msg === 'config reloaded');
      expect(reloaded?.obj).toMatchObject({ applied: plan.applied, restartNeeded: plan.restartNeeded });
      const warned = logged
        .filter((e) => e.level === 'warn' && (e.msg === RESTART_WARNING || e.msg?.startsWith(CA_CONFIG_WARNING_PREFIX)))
        .flatMap((e) => e.obj['keys'] as string[]);
      if (rule.reload === 'applied') {
        expect(plan.applied).toContain(rule.key);
        expect(plan.restartNeeded).not.toContain(rule.key);
        expect(warned).not.toContain(rule.key);
        await observers[rule.key]?.();
      } else {
        expect(plan.restartNeeded).toContain(rule.key);
        expect(plan.applied).not.toContain(rule.key);
        expect(warned).toContain(rule.key);
      }
      await agent.reload(load(base));
    });
  }
});
