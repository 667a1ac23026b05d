// Anti-entropy across a cluster (docs/decisions.md D26), on a 3-member etcd with RBAC as
// docs/cluster-security.md sets it up and ACLs on: two server agents and a client agent, in process.
// A service registered on the client agent, whose etcd user may not write the shared view, reaches
// the catalog through a server with the client's agent token and is found passing through
// /v1/health/connect on a server; one registered on a server is found the same way on the client;
// a service the agent token may not write is refused by the server and never reaches the catalog.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent } from '../../src/agent/index.js';
import { loadConfig } from '../../src/config/load.js';
import { silentLogger, type Logger } from '../../src/core/log.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { clientUser, enableDocumentedRbac, findEtcdctl } from '../support/etcd-rbac.js';

const PREFIX = '/svc/';
const MANAGEMENT = '5d4c3b2a-1f0e-4d9c-8b7a-6e5d4c3b2a10';
const AGENT_TOKEN = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
let cluster: EtcdCluster;
const cleanups: (() => unknown)[] = [];

/** The client agent's warnings, each with its error's message. */
const clientWarnings: { msg: string; err: string }[] = [];
let warned: () => void = () => {};
const warningsLog: Logger = {
  ...silentLogger,
  warn(obj: object, msg?: string) {
    const err = (obj as { err?: unknown }).err;
    clientWarnings.push({ msg: msg ?? '', err: err instanceof Error ? err.message : '' });
    warned();
  },
  child: () => warningsLog,
};

/** Resolves once the client agent has logged a warning that `match` accepts. */
async function clientWarning(
  match: (w: { msg: string; err: string }) => boolean,
): Promise<{ msg: string; err: string }> {
  for (;;) {
    const found = clientWarnings.find(match);
    if (found !== undefined) return found;
    await new Promise<void>((resolve) => (warned = resolve));
  }
}

async function start(name: string, server: boolean): Promise<string> {
  const user = server ? 'svc-server-1' : clientUser(name);
  const tokens = server ? { initial_management: MANAGEMENT } : { agent: AGENT_TOKEN };
  const flags = {
    ports: { http: 0 },
    client_addr: '127.0.0.1',
    node_name: name,
    server,
    acl: { enabled: true, default_policy: 'deny' as const, tokens },
    cluster: { etcd: { endpoints: cluster.endpoints, prefix: PREFIX, username: user, password: `${user}-pw` } },
  };
  const agent = await createAgent(loadConfig({ files: [], flags, dev: true }), server ? {} : { log: warningsLog });
  cleanups.push(() => agent.close());
  return `http://127.0.0.1:${await agent.listen()}`;
}

async function call(url: string, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${url}${path}`, {
    method,
    headers: { 'X-Svc-Token': MANAGEMENT },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

interface Entry {
  Node: { Node: string };
  Service: { ID: string; Service: string; Connect?: { Native?: boolean } };
  Checks: { CheckID: string; Status: string }[];
}

/** Reads `path` on `url` with blocking queries until `done` accepts the answer. */
async function waitFor<T>(url: string, path: string, done: (value: T) => boolean): Promise<T> {
  let index = 0;
  for (;;) {
    const sep = path.includes('?') ? '&' : '?';
    const res = await call(url, 'GET', `${path}${index === 0 ? '' : `${sep}index=${index}&wait=1m`}`);
    expect(res.status).toBe(200);
    const value = (await res.json()) as T;
    if (done(value)) return value;
    const next = Number(res.headers.get('x-svc-index'));
    index = next >= index ? next : 0;
  }
}

let server1: string;
let server2: string;
let client: string;

beforeAll(async () => {
  const etcdctl = await findEtcdctl();
  if (etcdctl === undefined) throw new Error('etcdctl is needed to set up RBAC');
  cluster = await startEtcdCluster({ size: 3 });
  await enableDocumentedRbac(cluster, etcdctl, PREFIX, ['client-1']);
  server1 = await start('server-1', true);
  server2 = await start('server-2', true);
  // The client agent's token: what Consul's docs give an agent token (node:write, service:write on its services).
  const policy = await call(server1, 'PUT', '/v1/acl/policy', {
    Name: 'client-1-agent',
    Rules: 'node "client-1" { policy = "write" }\nservice_prefix "pay" { policy = "write" }',
  });
  expect(policy.status).toBe(200);
  const policyId = ((await policy.json()) as { ID: string }).ID;
  const token = await call(server1, 'PUT', '/v1/acl/token', { SecretID: AGENT_TOKEN, Policies: [{ ID: policyId }] });
  expect(token.status).toBe(200);
  client = await start('client-1', false);
}, 180_000);
afterAll(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
  await cluster?.stop();
});

describe("an agent's services in a cluster's catalog", () => {
  it('finds a service registered on the client agent passing through health/connect on a server', async () => {
    const res = await call(client, 'PUT', '/v1/agent/service/register', {
      ID: 'pay-1',
      Name: 'pay',
      Port: 7000,
      Connect: { Native: true },
      Check: { CheckID: 'pay-ttl', TTL: '10m', Status: 'passing' },
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const [entry] = await waitFor<Entry[]>(server1, '/v1/health/connect/pay?passing', (v) => v.length === 1);
    expect([entry?.Node.Node, entry?.Service.ID, entry?.Service.Connect?.Native]).toEqual(['client-1', 'pay-1', true]);
    expect(entry?.Checks.map((c) => [c.CheckID, c.Status]).sort()).toEqual([
      ['pay-ttl', 'passing'],
      ['serfHealth', 'passing'],
    ]);
    // A status change on the client leaves ?passing on the other server.
    expect((await call(client, 'PUT', '/v1/agent/check/fail/pay-ttl')).status).toBe(200);
    await waitFor<Entry[]>(server2, '/v1/health/connect/pay?passing', (v) => v.length === 0);
    expect((await call(client, 'PUT', '/v1/agent/service/deregister/pay-1')).status).toBe(200);
    await waitFor<Entry[]>(server1, '/v1/health/connect/pay', (v) => v.length === 0);
  });

  it('finds a service registered on a server agent passing through health/connect on the client', async () => {
    const res = await call(server2, 'PUT', '/v1/agent/service/register', {
      ID: 'ledger-1',
      Name: 'ledger',
      Port: 7100,
      Connect: { Native: true },
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const [entry] = await waitFor<Entry[]>(client, '/v1/health/connect/ledger?passing', (v) => v.length === 1);
    expect([entry?.Node.Node, entry?.Service.ID]).toEqual(['server-2', 'ledger-1']);
  });

  it("refuses on the server a client agent's sync of a service its agent token may not write", async () => {
    const res = await call(client, 'PUT', '/v1/agent/service/register', { ID: 'vault-1', Name: 'vault', Port: 8200 });
    expect(res.status, await res.clone().text()).toBe(200);
    const warning = await clientWarning((w) => w.err.includes('vault'));
    expect(warning.err).toContain('403');
    expect(await (await call(server1, 'GET', '/v1/catalog/service/vault')).json()).toEqual([]);
    expect((await call(client, 'PUT', '/v1/agent/service/deregister/vault-1')).status).toBe(200);
  });
});
