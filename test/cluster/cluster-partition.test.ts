// One etcd member of three cut off by a network partition (each member in a network namespace of
// its own; the cut takes its link down on both sides, so its packets are dropped, not refused; the
// leader in one case, a follower in the other) while three agents take KV writes, KV reads,
// intention writes and new leaves; then the link comes back while they go on. The cluster keeps a
// quorum throughout, so every call through every agent must succeed: each counts once, none is
// retried until it succeeds. Each agent's log names the member once when it goes and once when it
// answers again, with no stack; the member rejoins and catches up with what was written without it.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AgentProcess } from '../integration/support/agent-process.js';
import { requestStatus, startEtcdCluster, type EtcdCluster, type EtcdMember } from '../support/etcd.js';
import { createMemberNetwork, type MemberNetwork } from '../support/netns.js';
import {
  newTally,
  printSaid,
  stackLines,
  startClusterAgents,
  timed,
  until,
  whenAllReach,
  workload,
} from './support.js';
import type { ClusterAgents, Tally } from './support.js';

/** Writes per agent with the member cut off (each also read back; a new leaf every 25). */
const WRITES = 1_000;
/** The cut comes once every agent has done this many writes. */
const CUT_AT = 50;
/** Writes per agent at least after the heal, and until every agent has used the member again. */
const AFTER_HEAL = 200;
/** KV writes per workload round: the loop checks between rounds whether it is done (or failing). */
const ROUND = 10;
/** Intention writes after each round. */
const INTENTIONS_PER_ROUND = 1;
/**
 * Each agent uses the healed member again within this: gRPC reconnects within 2 s, but a connection
 * attempt begun during the cut waits for a retransmission of its dropped SYN.
 */
const BACK_WITHIN_MS = 30_000;

/** The agent's log lines when an etcd member stops answering, and when it answers again. */
const GOING = 'etcd member not answering; using the other members';
const BACK = 'etcd member answers again';

type Victim = 'follower' | 'leader';

interface Phase {
  /** Writes each agent had done when the link came back (Infinity before). */
  healedAt: number[];
  /** Every agent has said the member answers again (or the case failed): loops may end. */
  back: boolean;
  /** Some call failed: the case has failed, so every loop ends after its round. */
  failing: boolean;
}

function merge(into: Tally, from: Tally): void {
  into.ops += from.ops;
  into.failures += from.failures;
  into.slowestMs = Math.max(into.slowestMs, from.slowestMs);
  for (const sample of from.samples) if (into.samples.length < 5) into.samples.push(sample);
}

/**
 * `count` intention writes through `agent`, a source name each, the action flipped per round (few
 * rows: every agent's view re-sorts on each write).
 */
async function intentionWrites(agent: AgentProcess, run: string, round: number, count: number, tally: Tally) {
  for (let i = 0; i < count; i++) {
    const url = `${agent.url}/v1/connect/intentions/exact?source=web-${run}-${i}&destination=db`;
    const init = { method: 'PUT', body: JSON.stringify({ Action: round % 2 === 0 ? 'allow' : 'deny' }) };
    await timed(url, init, (s, t) => s === 200 && t.trim() === 'true', tally);
  }
}

/** The store revision a member has applied. */
async function revisionOf(member: EtcdMember): Promise<number> {
  const res = await requestStatus(member.clientUrl);
  const body = (await res.json()) as { header?: { revision?: string } };
  return Number(body.header?.revision ?? Number.NaN);
}

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, fail) => (timer = setTimeout(() => fail(new Error(what)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

describe('one etcd member of three cut off by a network partition', () => {
  let network: MemberNetwork;
  let etcd: EtcdCluster;
  let cluster: ClusterAgents;

  beforeAll(async () => {
    network = await createMemberNetwork(3);
    etcd = await startEtcdCluster({ size: 3, places: network.places });
    // At debug each agent says why a call failed: a failed case prints it.
    cluster = await startClusterAgents(etcd, { prefix: `/svc-partition-${process.pid}/`, logLevel: 'debug' });
  }, 60_000);

  afterEach(async () => {
    // A failed case must not leave a member cut off for the next.
    for (const i of etcd.members.keys()) await network.heal(i);
    await etcd.waitHealthy();
  }, 90_000);

  afterAll(async () => {
    await cluster?.stop();
    await etcd?.stop();
    await network?.remove();
  });

  it.each<Victim>(['follower', 'leader'])(
    'cut-off %s: every call through every agent succeeds, during the cut and after the heal',
    async (victim) => {
      await etcd.waitHealthy();
      const leader = await etcd.leader();
      const member = victim === 'leader' ? leader : etcd.members.find((m) => m !== leader)!;
      const index = etcd.members.indexOf(member);
      const host = new URL(member.clientUrl).host;
      const logFrom = cluster.agents.map((a) => a.logs.length);
      const run = `cut-${victim}`;
      const n = cluster.agents.length;
      const cutGate = whenAllReach(n, CUT_AT);
      const healGate = whenAllReach(n, CUT_AT + WRITES);
      const written = cluster.agents.map(() => 0);
      const phase: Phase = { healedAt: cluster.agents.map(() => Infinity), back: false, failing: false };
      let failed: () => void = () => {};
      const failing = new Promise<void>((r) => (failed = r));
      const unlessFailing = (step: Promise<void>): Promise<void> => Promise.race([step, failing]);

      const drive = async (agent: AgentProcess, i: number): Promise<{ tally: Tally; intentions: Tally }> => {
        const tally = newTally();
        const intentions = newTally();
        const done = (): boolean => phase.failing || (phase.back && written[i]! >= phase.healedAt[i]! + AFTER_HEAL);
        for (let r = 0; !done(); r++) {
          const before = written[i]!;
          const report = (writes: number): void => {
            written[i] = before + writes;
            cutGate.report(i, written[i]);
            healGate.report(i, written[i]);
          };
          merge(tally, await workload(agent, `${run}-${cluster.names[i]}-${r}`, ROUND, report));
          await intentionWrites(agent, `${run}-${cluster.names[i]}`, r, INTENTIONS_PER_ROUND, intentions);
          if (tally.failures + intentions.failures > 0) {
            phase.failing = true;
            failed();
          }
        }
        return { tally, intentions };
      };
      const loads = cluster.agents.map(drive);
      let healedTime = 0;
      let backAfterMs: number[] = [];
      let back: Record<string, unknown>[] = [];

      try {
        await unlessFailing(cutGate.reached);
        await network.cut(index);
        try {
          await unlessFailing(healGate.reached);
        } finally {
          await network.heal(index);
        }
        phase.healedAt = [...written];
        healedTime = Date.now();
        const backLine = (agent: AgentProcess, i: number): Promise<Record<string, unknown>> =>
          within(
            agent.waitForLog((l) => l.msg === BACK && String(l.member).includes(host), logFrom[i]),
            BACK_WITHIN_MS,
            `${cluster.names[i]} did not use ${host} again within ${BACK_WITHIN_MS} ms of the heal`,
          );
        if (!phase.failing) {
          await unlessFailing(Promise.all(cluster.agents.map(backLine)).then((l) => void (back = l)));
          backAfterMs = back.map((l) => Date.parse(String(l.time)) - healedTime);
        }
      } finally {
        phase.back = true;
      }
      const results = await Promise.all(loads);
      const seen = results.map(({ tally, intentions }, i) => [
        cluster.names[i],
        {
          writes: written[i],
          afterHeal: written[i]! - phase.healedAt[i]!,
          backAfterMs: backAfterMs[i],
          ops: tally.ops + intentions.ops,
          intentionWrites: intentions.ops,
          failures: tally.failures + intentions.failures,
          slowestMs: Math.round(Math.max(tally.slowestMs, intentions.slowestMs)),
        },
      ]);
      console.log(`${run}:`, JSON.stringify(Object.fromEntries(seen)));
      const failures = results.map(({ tally, intentions }, i) => [
        cluster.names[i],
        { failures: tally.failures + intentions.failures, samples: [...tally.samples, ...intentions.samples] },
      ]);
      if (results.some(({ tally, intentions }) => tally.failures + intentions.failures > 0)) {
        printSaid(cluster, logFrom, `the ${run} case began`, { debug: true, max: 80 });
      }
      expect(Object.fromEntries(failures)).toEqual(
        Object.fromEntries(cluster.names.map((name) => [name, { failures: 0, samples: [] }])),
      );
      // Rejoined: a leader known, and every write made without it applied.
      await etcd.waitHealthy(member);
      const leaderNow = await etcd.leader();
      await until(
        async () => [await revisionOf(member), await revisionOf(leaderNow)],
        ([mine, theirs]) => mine === theirs,
      );

      for (const [i, agent] of cluster.agents.entries()) {
        expect(written[i]).toBeGreaterThanOrEqual(CUT_AT + WRITES + AFTER_HEAL);
        expect(results[i]!.intentions.ops, cluster.names[i]).toBeGreaterThan(0);
        const naming = agent.logs
          .slice(logFrom[i])
          .filter((l) => l.level !== 'debug' && JSON.stringify(l).includes(host));
        // Once when it went (never a line per failed call), once when it came back, nothing else.
        expect(
          naming.map((l) => l.msg),
          cluster.names[i],
        ).toEqual([GOING, BACK]);
        expect(stackLines(agent), cluster.names[i]).toEqual([]);
      }
    },
    180_000,
  );
});
