// Members an operator acts on, across a cluster (servers a and b, client c, on a 3-member etcd;
// docs/decisions.md#departed-members): the servers carry Consul's `consul` service at their HTTP
// ports; a killed agent is listed failed (Status 4) on every agent once its lease lapses, a
// force-leave through the client agent (forwarded to a server) makes it left and deregisters its
// node, and -prune removes it; a leaving agent's Connect-native service is gone from
// /v1/health/connect on every agent at one index (one commit), the agent exits 0 and is listed left.
// The tests run in order: the last one takes the client agent out.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type AgentProcess } from '../integration/support/agent-process.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { startClusterAgent, startClusterAgents, until, type ClusterAgents } from './support.js';

interface Member {
  Name: string;
  Status: number;
}

interface HealthEntry {
  Node: { Node: string };
  Service: { ID: string; Port: number };
}

async function call(agent: AgentProcess, method: string, path: string, body?: object): Promise<Response> {
  return fetch(`${agent.url}${path}`, { method, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
}

/** Each member's status as `agent` lists it, by name. */
async function statuses(agent: AgentProcess): Promise<Record<string, number>> {
  const members = (await (await call(agent, 'GET', '/v1/agent/members')).json()) as Member[];
  return Object.fromEntries(members.map((m) => [m.Name, m.Status]));
}

/** Waits (blocking reads) until `agent` answers `path` with what `done` accepts; resolves with that answer's index. */
async function blockUntil<T>(agent: AgentProcess, path: string, done: (body: T) => boolean): Promise<number> {
  let index = 0;
  for (;;) {
    const sep = path.includes('?') ? '&' : '?';
    const res = await call(agent, 'GET', index === 0 ? path : `${path}${sep}index=${index}&wait=5s`);
    const body = (await res.json()) as T;
    index = Number(res.headers.get('X-Svc-Index'));
    if (done(body)) return index;
  }
}

describe('membership across a cluster', () => {
  let etcd: EtcdCluster;
  let cluster: ClusterAgents;
  const options = { prefix: `/svc-membership-${process.pid}/`, memberTtl: '2s' };
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

  it("lists the servers' consul service at their HTTP ports, on every agent", async () => {
    const [a, b] = cluster.agents as [AgentProcess, AgentProcess, AgentProcess];
    const want = [
      ['agent-a', a.port],
      ['agent-b', b.port],
    ];
    for (const agent of cluster.agents)
      await blockUntil<HealthEntry[]>(agent, '/v1/health/service/consul?passing', (entries) => {
        const got = entries.map((e) => [e.Node.Node, e.Service.Port]);
        return JSON.stringify(got) === JSON.stringify(want);
      });
  });

  it('lists a killed agent failed on every agent; force-leave through a client makes it left, -prune removes it', async () => {
    const d = await startClusterAgent(etcd, options, 'agent-d', false);
    later.push(d);
    for (const agent of cluster.agents)
      await until(
        () => statuses(agent),
        (s) => s['agent-d'] === 1,
      );
    await d.stop('SIGKILL');
    for (const agent of cluster.agents)
      await until(
        () => statuses(agent),
        (s) => s['agent-d'] === 4,
      );
    const [a, , c] = cluster.agents as [AgentProcess, AgentProcess, AgentProcess];
    const failed = await runCli(['members', '-http-addr', c.url, '-status', 'failed']);
    expect(failed.code).toBe(0);
    expect(failed.stdout).toMatch(/\nagent-d\s+127\.0\.0\.1:\d+\s+failed\s+client\s/);
    // Its node stays, critical, until it is reaped or forced out.
    const checks = (await (await call(a, 'GET', '/v1/health/node/agent-d')).json()) as { Status: string }[];
    expect(checks.map((check) => check.Status)).toEqual(['critical']);

    const forced = await runCli(['force-leave', '-http-addr', c.url, 'agent-d']);
    expect([forced.code, forced.stderr]).toEqual([0, '']);
    for (const agent of cluster.agents) {
      await until(
        () => statuses(agent),
        (s) => s['agent-d'] === 3,
      );
      await blockUntil<unknown[]>(agent, '/v1/health/node/agent-d', (entries) => entries.length === 0);
    }
    const pruned = await runCli(['force-leave', '-http-addr', c.url, '-prune', 'agent-d']);
    expect([pruned.code, pruned.stderr]).toEqual([0, '']);
    for (const agent of cluster.agents)
      await until(
        () => statuses(agent),
        (s) => !('agent-d' in s),
      );
    const unknown = await runCli(['force-leave', '-http-addr', c.url, 'agent-d']);
    expect([unknown.code, unknown.stderr]).toEqual([
      1,
      "Error force leaving: Unexpected response code: 404 (agent: No node found with name 'agent-d')\n",
    ]);
  }, 60_000);

  it("a leaving agent's Connect-native service goes from health/connect on every agent at one index, and it exits 0", async () => {
    const [a, b, c] = cluster.agents as [AgentProcess, AgentProcess, AgentProcess];
    const registered = await call(c, 'PUT', '/v1/agent/service/register', {
      ID: 'pay-1',
      Name: 'pay',
      Port: 9443,
      Connect: { Native: true },
    });
    expect(registered.status).toBe(200);
    const listed = (entries: HealthEntry[]): boolean => entries.some((e) => e.Service.ID === 'pay-1');
    for (const agent of [a, b, c]) await blockUntil<HealthEntry[]>(agent, '/v1/health/connect/pay', listed);

    // Parked on the servers before the leave: each wakes with the commit that removed the node.
    const gone = [a, b].map((agent) =>
      blockUntil<HealthEntry[]>(agent, '/v1/health/connect/pay', (entries) => !listed(entries)),
    );
    const exited = new Promise<number | null>((resolve) => c.child.once('exit', resolve));
    const left = await runCli(['leave', '-http-addr', c.url]);
    expect([left.code, left.stdout]).toEqual([0, 'Graceful leave complete\n']);
    const [atA, atB] = await Promise.all(gone);
    expect(atA).toBe(atB);
    expect(await exited).toBe(0);
    // A server deregistered it before it answered: it did not leave on its wait's deadline.
    expect(c.logs.filter((l) => l.level === 'warn')).toEqual([]);
    for (const agent of [a, b])
      await until(
        () => statuses(agent),
        (s) => s['agent-c'] === 3,
      );
    const members = await runCli(['members', '-http-addr', a.url]);
    expect(members.stdout).toMatch(/\nagent-c\s+127\.0\.0\.1:\d+\s+left\s+client\s/);
  }, 60_000);
});
