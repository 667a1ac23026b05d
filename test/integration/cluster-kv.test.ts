// KV on agents of one etcd cluster, read through from etcd (docs/decisions.md D15): the whole
// /v1/kv contract on a cluster agent; a write through one agent read at once through another (and
// by its writer); a blocking read on one agent woken by a change of its own key made through
// another, and not by writes elsewhere (docs/decisions.md D6); the key's row in etcd outside the
// agents' view range.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { startAgent, type AgentProcess } from './support/agent-process.js';
import { kvApiSuite } from './support/kv-api-suite.js';

const PREFIX = `/svc-kv-${process.pid}/`;

let etcd: EtcdCluster;
const started: AgentProcess[] = [];

const startClusterAgent = (name: string, server: boolean, prefix = PREFIX): Promise<AgentProcess> =>
  startAgent({
    config: { node_name: name, limits: { kv_max_value_size: 1024 }, cluster: { etcd: { prefix } } },
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

describe('the /v1/kv contract on a cluster agent', () => {
  let meshes = 0;
  // A mesh of its own at each start: the suite wants an empty KV.
  kvApiSuite(() => startClusterAgent(`kv-contract-${++meshes}`, true, `/svc-kv-contract-${process.pid}-${meshes}/`));
});

describe('KV shared by two agents', () => {
  let server: AgentProcess;
  let client: AgentProcess;

  beforeAll(async () => {
    server = await startClusterAgent('kv-server', true);
    client = await startClusterAgent('kv-client', false);
  }, 60_000);

  const kv = (agent: AgentProcess, path: string, init?: RequestInit): Promise<Response> =>
    fetch(`${agent.url}/v1/kv/${path}`, init);
  const value = async (res: Response): Promise<string> => {
    const [entry] = (await res.json()) as { Value: string }[];
    return Buffer.from(entry!.Value, 'base64').toString();
  };

  it('reads a write made through the other agent, and its own write, at once', async () => {
    expect(await (await kv(client, 'shared/a', { method: 'PUT', body: 'from-client' })).text()).toBe('true');
    expect(await value(await kv(client, 'shared/a'))).toBe('from-client');
    expect(await value(await kv(server, 'shared/a'))).toBe('from-client');
    await kv(server, 'shared/b', { method: 'PUT', body: 'from-server' });
    const listed = (await (await kv(client, 'shared/?recurse')).json()) as { Key: string }[];
    expect(listed.map((e) => e.Key)).toEqual(['shared/a', 'shared/b']);
    expect(await (await kv(client, 'shared/?keys')).json()).toEqual(['shared/a', 'shared/b']);
    expect((await kv(client, 'shared/a?stale')).status).toBe(200);
    expect((await kv(client, 'shared/a?consistent')).status).toBe(200);
  });

  it('wakes a blocking read on one agent only when its key changes through the other', async () => {
    await kv(server, 'watched/key', { method: 'PUT', body: 'v1' });
    const first = await kv(client, 'watched/key');
    const index = first.headers.get('x-svc-index');
    expect(await value(first)).toBe('v1');

    const parked = kv(client, `watched/key?index=${index}&wait=5m`);
    await until(async () => (await gauge(client, 'svc.blocking.parked')) >= 1);
    // Writes elsewhere move the cluster's revision; had any woken the read, it would answer v1.
    await kv(server, 'watched/other', { method: 'PUT', body: 'x' });
    await kv(server, 'watched/keyed-sibling', { method: 'PUT', body: 'x' });
    await fetch(`${server.url}/v1/connect/intentions/exact?source=web&destination=db`, {
      method: 'PUT',
      body: '{"Action":"allow"}',
    });
    await kv(server, 'watched/key', { method: 'PUT', body: 'v2' });
    const woken = await parked;
    expect(await value(woken)).toBe('v2');
    expect(Number(woken.headers.get('x-svc-index'))).toBeGreaterThan(Number(index));
  });

  it('wakes a blocking ?recurse read on a deletion under its prefix', async () => {
    await kv(server, 'tree/one', { method: 'PUT', body: '1' });
    await kv(server, 'tree/two', { method: 'PUT', body: '2' });
    const first = await kv(client, 'tree/?recurse');
    const parked = kv(client, `tree/?recurse&index=${first.headers.get('x-svc-index')}`);
    await until(async () => (await gauge(client, 'svc.blocking.parked')) >= 1);
    await kv(server, 'tree/two', { method: 'DELETE' });
    const woken = (await (await parked).json()) as { Key: string }[];
    expect(woken.map((e) => e.Key)).toEqual(['tree/one']);
  });

  it("keeps KV out of the agents' view: the row lives under bulk/, outside [data/, meta0)", async () => {
    await kv(client, 'layout/k', { method: 'PUT', body: 'v' });
    const bulk = await fetch(`${etcd.endpoints[0]}/v3/kv/range`, {
      method: 'POST',
      body: JSON.stringify({ key: Buffer.from(`${PREFIX}bulk/kv/layout/k`).toString('base64') }),
    });
    expect(((await bulk.json()) as { count?: string }).count).toBe('1');
    const view = await fetch(`${etcd.endpoints[0]}/v3/kv/range`, {
      method: 'POST',
      body: JSON.stringify({ key: Buffer.from(`${PREFIX}data/kv/layout/k`).toString('base64') }),
    });
    expect(((await view.json()) as { count?: string }).count).toBeUndefined();
  });
});

async function gauge(agent: AgentProcess, name: string): Promise<number> {
  const metrics = (await (await fetch(`${agent.url}/v1/agent/metrics`)).json()) as {
    Gauges: { Name: string; Value: number }[];
  };
  return metrics.Gauges.find((g) => g.Name === name)?.Value ?? 0;
}

/** Polls until `done` holds; the test's timeout ends a wait that never comes. */
async function until(done: () => Promise<boolean>): Promise<void> {
  while (!(await done())) await new Promise((r) => setTimeout(r, 20));
}
