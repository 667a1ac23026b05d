// Every etcd member stalled at once for less than a commit's deadline (SIGSTOP, then SIGCONT): what
// a long fsync, a CPU-starved host or a busy agent looks like from the agent, which cannot tell a
// slow member from a hung one until the member has been silent for that long. Three agents take
// writes, reads and new leaves throughout; every call through every agent must succeed. Each call
// counts once; none is retried until it succeeds.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { printSaid, startClusterAgents, stackLines, whenAllReach, workload, type ClusterAgents } from './support.js';

/** Writes per agent (each also read back; a new leaf every 10). */
const WRITES = 400;
/** The first stall starts once every agent has done this many writes. */
const STALL_AT = 30;
/** Each stall: shorter than a commit's deadline (1.5 s), longer than one attempt's share of it. */
const STALL_MS = 1_000;
const STALLS = 3;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('every etcd member stalled for a second', () => {
  let etcd: EtcdCluster;
  let cluster: ClusterAgents;

  beforeAll(async () => {
    etcd = await startEtcdCluster({ size: 3 });
    cluster = await startClusterAgents(etcd, { prefix: `/svc-stall-${process.pid}/`, logLevel: 'debug' });
  }, 60_000);

  afterEach(() => etcd.members.forEach((m) => m.resume()));

  afterAll(async () => {
    await cluster?.stop();
    await etcd?.stop();
  });

  it('costs no write, KV read or new leaf through any agent, three times over', async () => {
    await etcd.waitHealthy();
    const logFrom = cluster.agents.map((a) => a.logs.length);
    const gate = whenAllReach(cluster.agents.length, STALL_AT);
    let loading = true;
    const loads = Promise.all(
      cluster.agents.map((agent, i) =>
        workload(agent, `stall-${cluster.names[i]}`, WRITES, (done) => gate.report(i, done), 10),
      ),
    ).finally(() => (loading = false));
    await gate.reached;
    let stalls = 0;
    for (; stalls < STALLS && loading; stalls++) {
      await Promise.all(etcd.members.map((m) => m.pause()));
      await sleep(STALL_MS);
      etcd.members.forEach((m) => m.resume());
      await sleep(STALL_MS);
    }
    const tallies = await loads;

    const byAgent = Object.fromEntries(
      tallies.map((t, i) => [cluster.names[i], { failures: t.failures, samples: t.samples }]),
    );
    console.log(
      `stalls ${stalls}:`,
      JSON.stringify(tallies.map((t) => ({ ops: t.ops, failures: t.failures, slowestMs: Math.round(t.slowestMs) }))),
    );
    if (tallies.some((t) => t.failures > 0)) printSaid(cluster, logFrom, 'the first stall', { debug: true });
    // The load outlasts the stalls on any machine that runs the suite; fewer would test less.
    expect(stalls).toBe(STALLS);
    expect(byAgent).toEqual(Object.fromEntries(cluster.names.map((n) => [n, { failures: 0, samples: [] }])));
    for (const [i, agent] of cluster.agents.entries()) expect(stackLines(agent), cluster.names[i]).toEqual([]);
  }, 180_000);
});
