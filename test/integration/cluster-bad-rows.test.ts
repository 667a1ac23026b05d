// One bad row in etcd is that row's problem (docs/cluster-security.md#bad-rows): values of every
// shape a client agent's etcd credentials can write (an intention `null`, a root `null`, a CA
// config `{}`, a non-numeric serial, member entries `null` and `{"Name":5}`, KV values `not json`,
// `null` and `{}`) are written into etcd directly, under a server and a client agent. Both keep
// answering authorize, intentions, roots, new leaves, members and KV for every other row, count
// each bad row once, leak no internal marker, and the client restarts over them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectEtcd, type EtcdConnection } from '../../src/state/etcd/index.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { startAgent, tempDir, type AgentProcess } from './support/agent-process.js';

const PREFIX = `/svc-bad-${process.pid}/`;

interface Answer {
  readonly status: number;
  readonly text: string;
  readonly body: unknown;
}

async function call(agent: AgentProcess, method: string, path: string, body?: unknown): Promise<Answer> {
  const res = await fetch(`${agent.url}${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // a plain-text answer (an error) stays text
  }
  return { status: res.status, text, body: parsed };
}

/** Polls `read` until `done` accepts what it returned; the test's timeout ends a wait that never comes. */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
}

const authorized = async (agent: AgentProcess, source: string): Promise<boolean> => {
  const a = await call(agent, 'POST', '/v1/agent/connect/authorize', {
    Target: 'db',
    ClientCertURI: `spiffe://any.consul/ns/default/dc/dc1/svc/${source}`,
  });
  expect(a.status, a.text).toBe(200);
  return (a.body as { Authorized: boolean }).Authorized;
};

const badRowsCounted = async (agent: AgentProcess): Promise<number> => {
  const metrics = (await call(agent, 'GET', '/v1/agent/metrics')).body as {
    Counters: { Name: string; Count: number }[];
  };
  return metrics.Counters.find((c) => c.Name === 'svc.state.bad_rows')?.Count ?? -1;
};

describe('bad rows written into etcd directly', () => {
  let etcd: EtcdCluster;
  let raw: EtcdConnection;
  let server: AgentProcess;
  let client: AgentProcess;
  let clientDir: { path: string; remove: () => Promise<void> };
  const agents: AgentProcess[] = [];

  const start = async (name: string, isServer: boolean, dataDir?: string): Promise<AgentProcess> => {
    const agent = await startAgent({
      config: {
        node_name: name,
        cluster: { etcd: { prefix: PREFIX } },
        connect: { ca_config: { csr_max_per_second: 0 } },
      },
      args: [...etcd.endpoints.flatMap((url) => ['-etcd', url]), ...(isServer ? ['-server'] : [])],
      ...(dataDir === undefined ? {} : { dataDir }),
    });
    agents.push(agent);
    return agent;
  };

  const put = async (key: string, value: string): Promise<void> => {
    await raw.txn(
      {
        compares: [],
        success: [{ op: 'put', key: Buffer.from(`${PREFIX}${key}`), value: Buffer.from(value) }],
        failure: [],
      },
      5_000,
    );
  };

  beforeAll(async () => {
    etcd = await startEtcdCluster({ size: 1 });
    raw = connectEtcd({ endpoints: etcd.endpoints });
    clientDir = await tempDir();
    server = await start('server-1', true);
    client = await start('client-1', false, clientDir.path);
    for (const [source, action] of [
      ['web', 'deny'],
      ['api', 'allow'],
    ]) {
      expect(
        (await call(server, 'PUT', `/v1/connect/intentions/exact?source=${source}&destination=db`, { Action: action }))
          .status,
      ).toBe(200);
    }
    expect((await call(server, 'PUT', '/v1/kv/app/good?flags=7', 'fine')).status).toBe(200);
    await until(
      () => authorized(client, 'api'),
      (ok) => ok,
    );
    expect(await badRowsCounted(client)).toBe(0);

    await put('data/intentions/default/db/default/evil', 'null');
    await put('data/connect-ca-roots/bogus', 'null');
    await put('data/connect-ca/config', '{}');
    await put('data/connect-ca/serial', '{"Next":"not a number"}');
    await put('members/ghost-1', 'null');
    await put('members/ghost-2', '{"Name":5}');
    await put('bulk/kv/app/not-json', 'not json');
    await put('bulk/kv/app/null', 'null');
    await put('bulk/kv/app/empty', '{}');
    // Four view rows and two member entries, each counted once by each agent.
    for (const agent of [server, client])
      await until(
        () => badRowsCounted(agent),
        (n) => n === 6,
      );
  }, 90_000);

  afterAll(async () => {
    await Promise.all(agents.map((agent) => agent.stop('SIGKILL')));
    raw?.close();
    await etcd?.stop();
    await clientDir?.remove();
  });

  it('authorize, intentions, roots, new leaves and members answer for every other row on every agent', async () => {
    for (const agent of [server, client]) {
      expect(await authorized(agent, 'web')).toBe(false);
      expect(await authorized(agent, 'api')).toBe(true);
      const intentions = await call(agent, 'GET', '/v1/connect/intentions');
      expect(intentions.status, intentions.text).toBe(200);
      expect((intentions.body as { SourceName: string }[]).map((x) => x.SourceName).sort()).toEqual(['api', 'web']);
      const roots = await call(agent, 'GET', '/v1/agent/connect/ca/roots');
      expect(roots.status, roots.text).toBe(200);
      expect((roots.body as { Roots: unknown[] }).Roots).toHaveLength(1);
      const members = await call(agent, 'GET', '/v1/agent/members');
      expect(members.status, members.text).toBe(200);
      expect((members.body as { Name: string }[]).map((m) => m.Name).sort()).toEqual(['client-1', 'server-1']);
    }
    // New leaves (each takes a serial from the counter written bad above) on the server and through it.
    for (const [agent, service] of [
      [server, 'leaf-on-server'],
      [client, 'leaf-on-client'],
    ] as const) {
      const leaf = await call(agent, 'GET', `/v1/agent/connect/ca/leaf/${service}`);
      expect(leaf.status, leaf.text).toBe(200);
      expect((leaf.body as { CertPEM: string }).CertPEM).toContain('BEGIN CERTIFICATE');
    }
  });

  it('a bad KV value fails its own key with a clear error, and no listing', async () => {
    for (const agent of [server, client]) {
      expect(await call(agent, 'GET', '/v1/kv/app/good')).toMatchObject({
        status: 200,
        body: [{ Key: 'app/good', Flags: 7 }],
      });
      for (const key of ['app/not-json', 'app/null', 'app/empty']) {
        for (const query of ['', '?raw']) {
          const one = await call(agent, 'GET', `/v1/kv/${key}${query}`);
          expect(one.status).toBe(500);
          expect(one.text).toContain(`value of key "${key}" is unreadable`);
        }
      }
      const listed = await call(agent, 'GET', '/v1/kv/app/?recurse');
      expect(listed.status, listed.text).toBe(200);
      expect((listed.body as { Key: string }[]).map((e) => e.Key)).toEqual(['app/good']);
      const keys = await call(agent, 'GET', '/v1/kv/app/?keys');
      expect(keys).toMatchObject({ status: 200, body: ['app/empty', 'app/good', 'app/not-json', 'app/null'] });
      expect(listed.text + keys.text).not.toContain('\\u0000');
    }
    // Each bad value is counted once per revision, however often it is read: 3 more, not 3 per read.
    for (const agent of [server, client]) {
      expect(await badRowsCounted(agent)).toBe(9);
      await call(agent, 'GET', '/v1/kv/app/?recurse');
      expect(await badRowsCounted(agent)).toBe(9);
    }
    // Writing the key again repairs it.
    expect((await call(client, 'PUT', '/v1/kv/app/null', 'mended')).status).toBe(200);
    expect(await call(server, 'GET', '/v1/kv/app/null')).toMatchObject({
      status: 200,
      body: [{ Key: 'app/null', Flags: 0 }],
    });
  });

  it('a client agent restarts over the bad rows, and answers for the others', async () => {
    expect(await client.stop('SIGTERM'), client.stderr()).toBe(0);
    client = await start('client-1', false, clientDir.path);
    expect(await authorized(client, 'web')).toBe(false);
    expect(await authorized(client, 'api')).toBe(true);
    expect((await call(client, 'GET', '/v1/connect/intentions')).status).toBe(200);
    await until(
      () => call(client, 'GET', '/v1/agent/members'),
      (m) => m.status === 200 && (m.body as unknown[]).length === 2,
    );
    const leaf = await call(client, 'GET', '/v1/agent/connect/ca/leaf/after-restart');
    expect(leaf.status, leaf.text).toBe(200);
  });

  it('a server agent with no view of its own starts over them; with the CA configuration bad, its leaves say so', async () => {
    expect(await server.stop('SIGTERM'), server.stderr()).toBe(0);
    server = await start('server-1', true);
    expect(await authorized(server, 'web')).toBe(false);
    expect((await call(server, 'GET', '/v1/connect/intentions')).status).toBe(200);
    expect(await call(server, 'GET', '/v1/kv/app/good')).toMatchObject({ status: 200 });
    await until(
      () => call(server, 'GET', '/v1/agent/members'),
      (m) => m.status === 200 && (m.body as unknown[]).length === 2,
    );
    const leaf = await call(server, 'GET', '/v1/agent/connect/ca/leaf/new-on-server');
    expect(leaf).toMatchObject({ status: 500, text: 'CA has not finished initializing' });
  });
});
