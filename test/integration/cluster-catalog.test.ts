// The catalog on agents of one etcd cluster: each agent's node is in every agent's catalog with its
// serfHealth check passing; a service with a sidecar registered through one agent is found healthy
// through /v1/health/connect on another; a blocking health read on one agent wakes when a check
// flips through the other, and not on unrelated writes (docs/decisions.md D6); a service registered
// on an agent (anti-entropy, docs/decisions.md D26) turns critical everywhere once that agent is killed.
// Catalog registrations name nodes no agent runs: an agent's own node holds only what it registered.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { startAgent, type AgentProcess } from './support/agent-process.js';

const PREFIX = `/svc-catalog-${process.pid}/`;

let etcd: EtcdCluster;
const started: AgentProcess[] = [];

const startClusterAgent = (name: string, server: boolean, memberTtl = '10s'): Promise<AgentProcess> =>
  startAgent({
    config: { node_name: name, cluster: { etcd: { prefix: PREFIX }, member_ttl: memberTtl } },
    args: [...etcd.endpoints.flatMap((url) => ['-etcd', url]), ...(server ? ['-server'] : [])],
  }).then((agent) => {
    started.push(agent);
    return agent;
  });

beforeAll(async () => {
  etcd = await startEtcdCluster({ size: 1 });
}, 60_000);

afterAll(async () => {
  await Promise.all(started.map((agent) => agent.stop('SIGKILL')));
  await etcd?.stop();
});

/** Polls until `done` holds; the test's timeout ends a wait that never comes. */
async function until(done: () => Promise<boolean>): Promise<void> {
  while (!(await done())) await new Promise((r) => setTimeout(r, 20));
}

interface Entry {
  Node: { Node: string };
  Service: { ID: string; Kind?: string };
  Checks: { CheckID: string; Status: string }[];
}

describe('the catalog shared by agents of one cluster', () => {
  let a: AgentProcess;
  let c: AgentProcess;
  const register = async (agent: AgentProcess, body: unknown): Promise<void> => {
    const res = await fetch(`${agent.url}/v1/catalog/register`, { method: 'PUT', body: JSON.stringify(body) });
    expect(res.status, await res.clone().text()).toBe(200);
  };
  const web = (status: string): Record<string, unknown> => ({
    Node: 'ext-a',
    Address: '127.0.0.1',
    Service: { ID: 'web-1', Service: 'web', Port: 8080 },
    Check: { CheckID: 'web-1-http', Name: 'http', ServiceID: 'web-1', Status: status },
  });

  beforeAll(async () => {
    a = await startClusterAgent('node-a', true);
    c = await startClusterAgent('node-c', false);
  }, 60_000);

  it("lists every agent's node, each with its serfHealth check passing", async () => {
    const names = async (agent: AgentProcess): Promise<string[]> =>
      ((await (await fetch(`${agent.url}/v1/catalog/nodes`)).json()) as { Node: string }[]).map((n) => n.Node);
    await until(async () => (await names(a)).length === 2 && (await names(c)).length === 2);
    expect(await names(c)).toEqual(['node-a', 'node-c']);
    const checks = (await (await fetch(`${c.url}/v1/health/node/node-a`)).json()) as Entry['Checks'];
    expect(checks.map((x) => [x.CheckID, x.Status])).toEqual([['serfHealth', 'passing']]);
  });

  it('finds through agent C the healthy sidecar of a service registered through agent A', async () => {
    await register(a, web('passing'));
    await register(a, {
      Node: 'ext-a',
      Address: '127.0.0.1',
      Service: {
        Kind: 'connect-proxy',
        ID: 'web-1-sidecar-proxy',
        Service: 'web-sidecar-proxy',
        Port: 21000,
        Proxy: { DestinationServiceName: 'web', DestinationServiceID: 'web-1', LocalServicePort: 8080 },
      },
    });
    const connect = async (): Promise<Entry[]> =>
      (await (await fetch(`${c.url}/v1/health/connect/web?passing`)).json()) as Entry[];
    await until(async () => (await connect()).length === 1);
    const [entry] = await connect();
    expect([entry?.Node.Node, entry?.Service.ID, entry?.Service.Kind]).toEqual([
      'ext-a',
      'web-1-sidecar-proxy',
      'connect-proxy',
    ]);
  });

  it("wakes a blocking health read on agent C when web's check flips through agent A, not on other writes", async () => {
    await register(a, web('passing'));
    const read = async (): Promise<Response> => fetch(`${c.url}/v1/health/service/web`);
    await until(async () => ((await (await read()).json()) as Entry[]).length === 1);
    const index = Number((await read()).headers.get('x-svc-index'));
    let answered = false;
    const parked = fetch(`${c.url}/v1/health/service/web?index=${index}&wait=5m`).then(async (res) => {
      answered = true;
      return (await res.json()) as Entry[];
    });
    await register(a, { Node: 'node-x', Address: '127.0.0.9', Service: { Service: 'db', Port: 5432 } });
    // Agent C has seen the unrelated write once its db answer shows it.
    await until(async () => ((await (await fetch(`${c.url}/v1/health/service/db`)).json()) as Entry[]).length === 1);
    expect(answered).toBe(false);
    await register(a, web('critical'));
    const [entry] = await parked;
    expect(entry?.Checks.find((x) => x.CheckID === 'web-1-http')?.Status).toBe('critical');
  });

  it("turns a killed agent's serfHealth critical everywhere once its lease lapses, so ?passing drops the instances it registered", async () => {
    const d = await startClusterAgent('node-d', false, '1s');
    const registered = await fetch(`${d.url}/v1/agent/service/register`, {
      method: 'PUT',
      body: JSON.stringify({ ID: 'api-d', Name: 'api', Port: 9000 }),
    });
    expect(registered.status).toBe(200);
    const passing = async (agent: AgentProcess): Promise<number> =>
      ((await (await fetch(`${agent.url}/v1/health/service/api?passing`)).json()) as Entry[]).length;
    await until(async () => (await passing(a)) === 1 && (await passing(c)) === 1);
    expect(await d.stop('SIGKILL')).toBe('SIGKILL');
    await until(async () => (await passing(a)) === 0 && (await passing(c)) === 0);
    const checks = (await (await fetch(`${c.url}/v1/health/node/node-d`)).json()) as Entry['Checks'];
    expect(checks.map((x) => [x.CheckID, x.Status])).toEqual([['serfHealth', 'critical']]);
    const all = (await (await fetch(`${c.url}/v1/health/service/api`)).json()) as Entry[];
    expect(all.map((e) => e.Service.ID)).toEqual(['api-d']);
  });
});
