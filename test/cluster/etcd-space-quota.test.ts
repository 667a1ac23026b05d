// etcd's space quota (--quota-backend-bytes, 2 GB by default) fills with the history of every
// write until etcd's history is compacted; then etcd raises its NOSPACE alarm and refuses every
// write on every member until an operator compacts, defragments and disarms it. Here a 16 MiB
// quota is filled by rewriting one KV value through server agent a. While the alarm is up:
// - every write (KV, an intention, a new leaf; through a server and through the client agent)
//   is answered 503 with what is wrong, after one attempt: etcd's count of refused calls
//   (ResourceExhausted) rises by one per write (two if a background write lands meanwhile), where
//   trying again within the call made it 27-34;
// - reads, authorize, roots and a leaf signed before keep answering;
// - every agent logs the alarm once, with the way out; the svc.etcd.alarms gauge counts it;
// - a client agent and a server agent started meanwhile come up, serve reads and log the alarm.
// Then the operator's steps, and with no restart every agent writes and signs again, a blocking
// read on the client is woken by a write through a server, every agent logs the alarm cleared,
// and the two late agents are members of the cluster, with their nodes in the catalog.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentProcess } from '../integration/support/agent-process.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import {
  grpcHandled,
  startClusterAgent,
  until,
  startClusterAgents,
  type AgentsOptions,
  type ClusterAgents,
} from './support.js';

const QUOTA_BYTES = 16 * 1024 * 1024;
const VALUE = 'v'.repeat(400_000);
/** 40 rewrites of the value leave 16 MB of history: the quota is spent well before. */
const MAX_FILL_WRITES = 60;
const SPIFFE_WEB = 'spiffe://11111111-2222-3333-4444-555555555555.consul/ns/default/dc/dc1/svc/web';
const WARN_OR_WORSE = new Set(['warn', 'error', 'fatal']);

interface Answer {
  readonly status: number;
  readonly text: string;
  readonly index: string | null;
}

async function call(agent: AgentProcess, method: string, path: string, body?: string): Promise<Answer> {
  const res = await fetch(`${agent.url}${path}`, {
    method,
    ...(body === undefined ? {} : { body }),
    signal: AbortSignal.timeout(30_000),
  });
  return { status: res.status, text: await res.text(), index: res.headers.get('x-svc-index') };
}

/** Calls etcd refused with ResourceExhausted: its NOSPACE refusal. */
const refusedForSpace = (etcd: EtcdCluster): Promise<number> => grpcHandled(etcd, 'grpc_code="ResourceExhausted"');

/** The agent's `svc.etcd.alarms` gauge. */
async function alarmsGauge(agent: AgentProcess): Promise<number | undefined> {
  const metrics = JSON.parse((await call(agent, 'GET', '/v1/agent/metrics')).text) as {
    Gauges: { Name: string; Value: number }[];
  };
  return metrics.Gauges.find((g) => g.Name === 'svc.etcd.alarms')?.Value;
}

const isAlarmWarning = (line: Record<string, unknown>): boolean =>
  line.level === 'warn' && String(line.msg).startsWith('etcd raised an alarm (');
const isAlarmCleared = (line: Record<string, unknown>): boolean => line.msg === 'etcd alarms cleared';

describe("etcd's space quota spent (NOSPACE)", () => {
  let etcd: EtcdCluster;
  let cluster: ClusterAgents;
  const late: AgentProcess[] = [];
  const mesh: AgentsOptions = { prefix: `/svc-quota-${process.pid}/` };

  beforeAll(async () => {
    etcd = await startEtcdCluster({ size: 1, args: [`--quota-backend-bytes=${QUOTA_BYTES}`] });
    cluster = await startClusterAgents(etcd, mesh);
  }, 60_000);

  afterAll(async () => {
    await Promise.all(late.map((agent) => agent.stop('SIGKILL')));
    await cluster?.stop();
    await etcd?.stop();
  });

  it('refuses writes at once with the reason, keeps serving reads, and writes again once etcd is freed', async () => {
    const [a, b, c] = cluster.agents as [AgentProcess, AgentProcess, AgentProcess];
    const logFrom = cluster.agents.map((agent) => agent.logs.length);
    // A leaf signed while etcd takes writes: served from the cache while it does not.
    const cachedLeaf = await call(c, 'GET', '/v1/agent/connect/ca/leaf/cached');
    expect(cachedLeaf.status, cachedLeaf.text).toBe(200);

    let refusal: Answer | undefined;
    for (let i = 0; i < MAX_FILL_WRITES && refusal === undefined; i++) {
      const answer = await call(a, 'PUT', '/v1/kv/fill', VALUE);
      if (answer.status !== 200) refusal = answer;
    }
    expect(refusal?.status, `no refusal after ${MAX_FILL_WRITES} writes of 400 KB`).toBe(503);
    expect(refusal?.text).toMatch(/^etcd is out of space \(its NOSPACE alarm is raised\)/);

    const writes: [string, AgentProcess, string, string, string?][] = [
      ['KV through a server', a, 'PUT', '/v1/kv/small', 'x'],
      ['KV through the client', c, 'PUT', '/v1/kv/small', 'x'],
      [
        'an intention through a server',
        b,
        'PUT',
        '/v1/connect/intentions/exact?source=web&destination=db',
        '{"Action":"deny"}',
      ],
      [
        'an intention through the client',
        c,
        'PUT',
        '/v1/connect/intentions/exact?source=api&destination=db',
        '{"Action":"deny"}',
      ],
      ['a new leaf on a server', a, 'GET', '/v1/agent/connect/ca/leaf/new-on-a'],
      ['a new leaf on the client', c, 'GET', '/v1/agent/connect/ca/leaf/new-on-c'],
    ];
    const refused: string[] = [];
    for (const [what, agent, method, path, body] of writes) {
      const before = await refusedForSpace(etcd);
      const answer = await call(agent, method, path, body);
      // One attempt; a background write of some agent refused meanwhile may add one more. Tried
      // again within its call, a write was refused 27-34 times.
      const attempts = (await refusedForSpace(etcd)) - before;
      if (answer.status !== 503 || !answer.text.includes('etcd is out of space') || attempts > 2)
        refused.push(`${what}: ${answer.status} ${answer.text.slice(0, 200)}; ${attempts} refused etcd calls`);
    }
    expect(refused, 'each write refused once, 503, saying why').toEqual([]);

    const reads: [string, AgentProcess, string, string, string?][] = [
      ['KV on a server', b, 'GET', '/v1/kv/fill?keys'],
      ['KV on the client', c, 'GET', '/v1/kv/fill?keys'],
      [
        'authorize on the client',
        c,
        'POST',
        '/v1/agent/connect/authorize',
        JSON.stringify({ Target: 'db', ClientCertURI: SPIFFE_WEB }),
      ],
      ['roots on the client', c, 'GET', '/v1/agent/connect/ca/roots'],
      ['the cached leaf on the client', c, 'GET', '/v1/agent/connect/ca/leaf/cached'],
    ];
    const unanswered: string[] = [];
    for (const [what, agent, method, path, body] of reads) {
      const answer = await call(agent, method, path, body);
      if (answer.status !== 200) unanswered.push(`${what}: ${answer.status} ${answer.text.slice(0, 200)}`);
    }
    expect(unanswered, 'reads answered while etcd takes no writes').toEqual([]);

    await Promise.all(cluster.agents.map((agent, i) => agent.waitForLog(isAlarmWarning, logFrom[i])));
    for (const [i, agent] of cluster.agents.entries()) {
      const warnings = agent.logs.slice(logFrom[i]).filter(isAlarmWarning);
      expect(
        warnings.map((l) => l.msg),
        cluster.names[i],
      ).toEqual([expect.stringMatching(/alarm:NOSPACE\): .*etcdctl compact.*etcdctl defrag.*etcdctl alarm disarm/)]);
    }

    expect(await alarmsGauge(c), 'svc.etcd.alarms while the alarm is up').toBe(1);

    // Agents started while etcd takes no writes: their member entries wait for etcd.
    late.push(await startClusterAgent(etcd, mesh, 'agent-d', false));
    late.push(await startClusterAgent(etcd, mesh, 'agent-e', true));
    const [d, e] = late as [AgentProcess, AgentProcess];
    const lateUnanswered: string[] = [];
    for (const [name, agent] of [['agent-d', d] as const, ['agent-e', e] as const]) {
      await agent.waitForLog(isAlarmWarning);
      for (const [what, method, path, body] of [
        [
          'authorize',
          'POST',
          '/v1/agent/connect/authorize',
          JSON.stringify({ Target: 'db', ClientCertURI: SPIFFE_WEB }),
        ],
        ['roots', 'GET', '/v1/agent/connect/ca/roots'],
        ['KV', 'GET', '/v1/kv/fill?keys'],
      ] as const) {
        const answer = await call(agent, method, path, body);
        if (answer.status !== 200)
          lateUnanswered.push(`${what} on ${name}: ${answer.status} ${answer.text.slice(0, 200)}`);
      }
    }
    expect(lateUnanswered, 'reads on agents started while etcd takes no writes').toEqual([]);

    // The operator's way out: compact the history at the current revision, defragment, disarm.
    const status = JSON.parse(await etcd.etcdctl('endpoint', 'status', '-w', 'json')) as {
      Status: { header: { revision: number } };
    }[];
    await etcd.etcdctl('compact', String(status[0]?.Status.header.revision));
    await etcd.etcdctl('defrag');
    await etcd.etcdctl('alarm', 'disarm');
    await Promise.all([...cluster.agents, ...late].map((agent, i) => agent.waitForLog(isAlarmCleared, logFrom[i])));

    expect(await alarmsGauge(c), 'svc.etcd.alarms once cleared').toBe(0);

    const first = await call(c, 'GET', '/v1/kv/woken');
    const parked = call(c, 'GET', `/v1/kv/woken?raw&index=${first.index}&wait=30s`);
    const failed: string[] = [];
    for (const [what, agent, method, path, body] of writes) {
      const answer = await call(agent, method, path, body);
      if (answer.status !== 200) failed.push(`${what}: ${answer.status} ${answer.text.slice(0, 200)}`);
    }
    const wake = await call(a, 'PUT', '/v1/kv/woken', 'after');
    expect([wake.status, (await parked).text]).toEqual([200, 'after']);
    const lateWrite = await call(d, 'PUT', '/v1/kv/late', 'x');
    if (lateWrite.status !== 200)
      failed.push(`KV through agent-d: ${lateWrite.status} ${lateWrite.text.slice(0, 200)}`);
    expect(failed, 'writes after the alarm is disarmed').toEqual([]);
    const names = (list: Answer): string[] => (JSON.parse(list.text) as { Name: string }[]).map((m) => m.Name);
    const members = await until(
      () => call(a, 'GET', '/v1/agent/members'),
      (list) => names(list).length === 5,
    );
    expect(names(members)).toEqual(['agent-a', 'agent-b', 'agent-c', 'agent-d', 'agent-e']);
    // Their nodes reach the catalog too: the failed first syncs are tried again (15 to 30 s).
    const nodeNames = (list: Answer): string[] => (JSON.parse(list.text) as { Node: string }[]).map((n) => n.Node);
    const nodes = await until(
      () => call(a, 'GET', '/v1/catalog/nodes'),
      (list) => nodeNames(list).length === 5,
      500,
    );
    expect(nodeNames(nodes).sort()).toEqual(['agent-a', 'agent-b', 'agent-c', 'agent-d', 'agent-e']);

    const everyone = [...cluster.agents, d, e];
    const everyName = [...cluster.names, 'agent-d', 'agent-e'];
    for (const [i, agent] of everyone.entries()) {
      expect(agent.child.exitCode, everyName[i]).toBeNull();
      const bad = agent.logs
        .slice(logFrom[i] ?? 0)
        .filter((l) => WARN_OR_WORSE.has(String(l.level)) && !isAlarmWarning(l));
      expect(
        bad.map((l) => l.msg),
        `${everyName[i]} logged`,
      ).toEqual([]);
    }
  }, 240_000);
});
