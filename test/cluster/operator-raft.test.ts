// /v1/operator/raft/configuration and `operator raft list-peers` in a cluster: the voters are
// etcd's members, each agent lists all three with exactly one leader, the one etcd names; no
// commit index is claimed (etcd does not say how far each member has applied).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../integration/support/agent-process.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { startClusterAgents, type ClusterAgents } from './support.js';

interface RaftServer {
  ID: string;
  Node: string;
  Address: string;
  Leader: boolean;
  Voter: boolean;
  LastIndex?: number;
}

describe('operator raft in a cluster', () => {
  let etcd: EtcdCluster;
  let cluster: ClusterAgents;

  beforeAll(async () => {
    etcd = await startEtcdCluster({ size: 3 });
    cluster = await startClusterAgents(etcd, { prefix: `/svc-raft-${process.pid}/` });
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
    await etcd?.stop();
  });

  it("lists etcd's members on every agent, the leader marked as etcd names it", async () => {
    await etcd.waitHealthy();
    const leader = new URL((await etcd.leader()).clientUrl).host;
    const members = etcd.members.map((m) => new URL(m.clientUrl).host).sort();
    for (const agent of cluster.agents) {
      const res = await fetch(`${agent.url}/v1/operator/raft/configuration`);
      expect(res.status).toBe(200);
      const { Servers } = (await res.json()) as { Servers: RaftServer[] };
      expect(Servers.map((s) => s.Address).sort()).toEqual(members);
      expect(Servers.filter((s) => s.Leader).map((s) => s.Address)).toEqual([leader]);
      expect(Servers.every((s) => s.Voter && s.LastIndex === undefined)).toBe(true);
    }
    const listed = await runCli(['operator', 'raft', 'list-peers', '-http-addr', cluster.agents[2]!.url]);
    expect(listed.code, listed.stderr).toBe(0);
    const leaderLine = listed.stdout.split('\n').find((l) => / leader /.test(l));
    expect(leaderLine).toContain(leader);
    expect(listed.stdout.split('\n').filter((l) => / follower /.test(l))).toHaveLength(2);
  });
});
