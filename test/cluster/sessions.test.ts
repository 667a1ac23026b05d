// Sessions and locks across a cluster (servers a and b, client c, on a 3-member etcd): a lock taken
// through one agent is seen held on every agent and refused to another session through another;
// python3-consul's calls (test/integration/support/python-consul-sessions.py) through the client agent;
// a TTL session lives in etcd's lease, so it outlives the agent that made it and is renewed through
// another; left without renewals it ends on every agent at once and its key is free again; a
// killed agent's sessions (its serfHealth check) end with its membership lease, freeing their keys.
// The tests run in order: the second restarts agent a, the third kills the client agent.
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentProcess } from '../integration/support/agent-process.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { startClusterAgent, startClusterAgents, until, type ClusterAgents } from './support.js';

const run = promisify(execFile);
const ENSURE = resolve(import.meta.dirname, '../../scripts/ensure-python-consul.sh');
const PROGRAM = resolve(import.meta.dirname, '../integration/support/python-consul-sessions.py');

interface Entry {
  LockIndex: number;
  Session?: string;
  ModifyIndex: number;
}

async function call(agent: AgentProcess, method: string, path: string, body?: string): Promise<Response> {
  return fetch(`${agent.url}${path}`, { method, ...(body === undefined ? {} : { body }) });
}

async function create(agent: AgentProcess, body: object): Promise<string> {
  const res = await call(agent, 'PUT', '/v1/session/create', JSON.stringify(body));
  expect(res.status, await res.clone().text()).toBe(200);
  return ((await res.json()) as { ID: string }).ID;
}

async function acquire(agent: AgentProcess, key: string, session: string): Promise<boolean> {
  const res = await call(agent, 'PUT', `/v1/kv/${key}?acquire=${session}`, session);
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as boolean;
}

async function entry(agent: AgentProcess, key: string): Promise<Entry | undefined> {
  const res = await call(agent, 'GET', `/v1/kv/${key}`);
  return res.status === 404 ? undefined : ((await res.json()) as Entry[])[0];
}

/** The sessions an agent lists, by ID. */
async function listed(agent: AgentProcess): Promise<string[]> {
  return ((await (await call(agent, 'GET', '/v1/session/list')).json()) as { ID: string }[]).map((s) => s.ID);
}

/** Waits (blocking reads, not polls) until every agent shows `key` held by `session` (undefined: free). */
async function heldEverywhere(
  agents: readonly AgentProcess[],
  key: string,
  session: string | undefined,
): Promise<void> {
  await Promise.all(
    agents.map(async (agent) => {
      for (;;) {
        const e = await entry(agent, key);
        if (e?.Session === session) return;
        await (await call(agent, 'GET', `/v1/kv/${key}?index=${e?.ModifyIndex ?? 1}&wait=5s`)).arrayBuffer();
      }
    }),
  );
}

describe('sessions and locks across a cluster', () => {
  let etcd: EtcdCluster;
  let cluster: ClusterAgents;
  // python3-consul reads X-Consul-Index.
  const options = { prefix: `/svc-sessions-${process.pid}/`, headerBrand: 'Consul' };
  const later: AgentProcess[] = [];

  beforeAll(async () => {
    etcd = await startEtcdCluster({ size: 3 });
    cluster = await startClusterAgents(etcd, options);
  }, 60_000);
  afterAll(async () => {
    await Promise.all(later.map((agent) => agent.stop('SIGKILL')));
    await cluster?.stop();
    await etcd?.stop();
  });

  it('a lock taken through the client agent is held on every agent and refused through the others', async () => {
    const [a, b, c] = cluster.agents as [AgentProcess, AgentProcess, AgentProcess];
    const mine = await create(c, { Name: 'via-client', LockDelay: '1s' });
    const theirs = await create(b, { Name: 'via-server', LockDelay: '1s' });
    await until(
      () => listed(a),
      (ids) => ids.includes(mine) && ids.includes(theirs),
    );
    expect(await acquire(c, 'job/leader', mine)).toBe(true);
    // Read right after the write, through each agent: the lock half is in each view by then.
    for (const agent of cluster.agents)
      expect(await entry(agent, 'job/leader')).toMatchObject({ Session: mine, LockIndex: 1 });
    expect(await acquire(a, 'job/leader', theirs)).toBe(false);
    expect(await acquire(b, 'job/leader', theirs)).toBe(false);

    const released = await call(a, 'PUT', `/v1/kv/job/leader?release=${mine}`, 'done');
    expect(await released.json()).toBe(true);
    expect(await acquire(b, 'job/leader', theirs)).toBe(true);
    expect(await entry(c, 'job/leader')).toMatchObject({ Session: theirs, LockIndex: 2 });
    await call(c, 'PUT', `/v1/session/destroy/${mine}`);
    await call(a, 'PUT', `/v1/session/destroy/${theirs}`);
    await heldEverywhere(cluster.agents, 'job/leader', undefined);
  });

  it("python3-consul's session and lock calls through the client agent", { timeout: 300_000 }, async () => {
    const c = cluster.agents[2] as AgentProcess;
    const python = (await run(ENSURE, [])).stdout.trim();
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(CONSUL|SVC)_/.test(name)));
    const { stdout } = await run(python, [PROGRAM, String(c.port)], { env });
    const steps = Object.fromEntries(
      stdout
        .trim()
        .split('\n')
        .map((line) => {
          const { step, ...result } = JSON.parse(line) as { step: string } & Record<string, unknown>;
          return [step, result];
        }),
    );
    expect(steps).toEqual({
      create: { distinct: true, ttl: '10s', lockdelay: 0 },
      acquire: { a: true, b: false },
      held: { session: true, lockindex: 1, value: 'a' },
      renew: { id: true, missing: 'NotFound' },
      release: { b: false, a: true },
      handover: { b: true },
      destroyed: { session: null, lockindex: 2 },
      ephemeral: { entry: null },
      list: { names: ['py-a'], node: ['py-a'] },
    });
  });

  it('a TTL session outlives its agent and is renewed through another; unrenewed, it ends everywhere and frees its key', async () => {
    const [a, b, c] = cluster.agents as [AgentProcess, AgentProcess, AgentProcess];
    // No checks: only the TTL ends it (the default serfHealth check would end it with agent a).
    const kept = await create(a, { Name: 'kept', TTL: '10s', Checks: [], LockDelay: 0 });
    const lapsing = await create(a, { Name: 'lapsing', TTL: '10s', Checks: [], LockDelay: 0 });
    expect(await acquire(a, 'job/ttl', lapsing)).toBe(true);
    await a.stop('SIGKILL');
    expect((await (await call(b, 'PUT', `/v1/session/renew/${kept}`)).json()) as { ID: string }[]).toMatchObject([
      { ID: kept, TTL: '10s' },
    ]);
    // `lapsing` is not renewed: etcd ends its lease 20 s on, and every agent sees it at once.
    const renewing = setInterval(() => void call(b, 'PUT', `/v1/session/renew/${kept}`).catch(() => undefined), 3_000);
    try {
      const restarted = await startClusterAgent(etcd, options, 'agent-a', true);
      later.push(restarted);
      const agents = [restarted, b, c];
      await heldEverywhere(agents, 'job/ttl', undefined);
      for (const agent of agents) expect(await listed(agent)).toEqual([kept]);
      expect(await acquire(restarted, 'job/ttl', kept)).toBe(true);
    } finally {
      clearInterval(renewing);
    }
    await call(b, 'PUT', `/v1/session/destroy/${kept}`);
  }, 90_000);

  it("a killed agent's sessions end with its membership lease, and their keys are free", async () => {
    const [, b, c] = cluster.agents as [AgentProcess, AgentProcess, AgentProcess];
    const a = later[0] as AgentProcess;
    // The defaults: the session is on agent-c's node, with its serfHealth check.
    const session = await create(c, { Name: 'on-c', LockDelay: 0 });
    // A server ran the create, for the client agent: the session is on the client's node.
    const info = (await (await call(b, 'GET', `/v1/session/info/${session}`)).json()) as { Node: string }[];
    expect(info.map((s) => s.Node)).toEqual(['agent-c']);
    expect(await acquire(c, 'job/c', session)).toBe(true);
    await c.stop('SIGKILL');
    await heldEverywhere([a, b], 'job/c', undefined);
    for (const agent of [a, b]) expect(await listed(agent)).not.toContain(session);
  }, 60_000);
});
