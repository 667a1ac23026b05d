// One etcd member of three down (killed, or hung with SIGSTOP; the leader or a follower) while
// three agents take writes, reads and new leaves: the cluster still has a quorum, so every call
// through every agent must succeed. Each call counts once; none is retried until it succeeds.
// The log says once that the member stopped answering (and that it is back), and carries no stack.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEtcdCluster, type EtcdCluster, type EtcdMember } from '../support/etcd.js';
import { startClusterAgents, stackLines, whenAllReach, workload, type ClusterAgents, type Tally } from './support.js';

/** Writes per agent in each case (each also read back; a new leaf every 25). */
const WRITES = 1_000;
/** The fault starts once every agent has done this many writes. */
const FAULT_AT = 50;

/** The agent's log lines when an etcd member stops answering, and when it answers again. */
const GOING = 'etcd member not answering; using the other members';
const BACK = 'etcd member answers again';

type Fault = 'killed' | 'paused';
type Victim = 'follower' | 'leader';

describe('one etcd member of three down', () => {
  let etcd: EtcdCluster;
  let cluster: ClusterAgents;

  beforeAll(async () => {
    etcd = await startEtcdCluster({ size: 3 });
    cluster = await startClusterAgents(etcd, { prefix: `/svc-faults-${process.pid}/` });
  }, 60_000);

  afterEach(async () => {
    // A failed or timed-out case must not leave a member down for the next.
    for (const m of etcd.members) {
      m.resume();
      if (!m.running) await m.start();
    }
  }, 90_000);

  afterAll(async () => {
    etcd?.members.forEach((m) => m.resume());
    await cluster?.stop();
    await etcd?.stop();
  });

  const pick = async (victim: Victim): Promise<EtcdMember> => {
    const leader = await etcd.leader();
    return victim === 'leader' ? leader : etcd.members.find((m) => m !== leader)!;
  };

  it.each<[Fault, Victim]>([
    ['killed', 'follower'],
    ['paused', 'follower'],
    ['killed', 'leader'],
    ['paused', 'leader'],
  ])(
    '%s %s: every write, KV read and new leaf through every agent succeeds',
    async (fault, victim) => {
      await etcd.waitHealthy();
      const member = await pick(victim);
      const host = new URL(member.clientUrl).host;
      const logFrom = cluster.agents.map((a) => a.logs.length);
      const gate = whenAllReach(cluster.agents.length, FAULT_AT);
      const run = `${fault}-${victim}`;
      const loads = cluster.agents.map((agent, i) =>
        workload(agent, `${run}-${cluster.names[i]}`, WRITES, (done) => gate.report(i, done)),
      );
      await gate.reached;
      if (fault === 'killed') await member.kill();
      else await member.pause();
      let tallies: Tally[];
      try {
        tallies = await Promise.all(loads);
      } finally {
        if (fault === 'paused') member.resume();
        else await member.start();
      }
      await etcd.waitHealthy();

      const byAgent = Object.fromEntries(
        tallies.map((t, i) => [cluster.names[i], { failures: t.failures, samples: t.samples }]),
      );
      const seen = tallies.map((t, i) => [
        cluster.names[i],
        { ops: t.ops, failures: t.failures, slowestMs: Math.round(t.slowestMs) },
      ]);
      console.log(`${run}:`, JSON.stringify(Object.fromEntries(seen)));
      expect(byAgent).toEqual(Object.fromEntries(cluster.names.map((n) => [n, { failures: 0, samples: [] }])));
      for (const [i, agent] of cluster.agents.entries()) {
        const lines = agent.logs.slice(logFrom[i]);
        const naming = lines.filter((l) => JSON.stringify(l).includes(host));
        const going = naming.filter((l) => l.msg === GOING);
        // Once when it went (never a line per failed call); the only other line is its return.
        expect(going.length, `${cluster.names[i]}: ${JSON.stringify(going)}`).toBeLessThanOrEqual(1);
        expect(
          naming.filter((l) => l.msg !== GOING && l.msg !== BACK),
          cluster.names[i],
        ).toEqual([]);
        expect(stackLines(agent), cluster.names[i]).toEqual([]);
      }
    },
    180_000,
  );
});
