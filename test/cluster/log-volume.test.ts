// What a whole-etcd outage costs the log (issue 40, item 7): two servers and a client agent on a
// 3-member etcd, every member hung for half the outage, then killed, then started again, while each
// agent takes a steady trickle of requests that fail meanwhile (KV writes and reads, new leaves).
// Each agent says what went wrong once per cause (a handful of distinct WARN-or-worse lines, not
// one per failed request or retry), and the client reports the count of its failed requests once
// they stop failing (src/core/log-gate.ts). SVC_LOG_OUTAGE_SECONDS changes the outage's length by hand.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentProcess } from '../integration/support/agent-process.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { newTally, printSaid, startClusterAgents, workload, type ClusterAgents, type Tally } from './support.js';

const OUTAGE_S = Number(process.env.SVC_LOG_OUTAGE_SECONDS ?? '60');
/** The bound: a handful of lines per agent for a whole outage, however many requests failed. */
const MAX_LOUD_LINES = 10;
/** Pause between two rounds of the trickle: about 10 failed requests a second per agent. */
const TRICKLE_PAUSE_MS = 100;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const loud = (l: Record<string, unknown>): boolean => l.level === 'warn' || l.level === 'error';
/** A line as an operator reads it, without its time. */
const text = (l: Record<string, unknown>): string => JSON.stringify({ ...l, time: undefined });

interface Trickle {
  /** Every call made, and those that failed. */
  readonly tally: Tally;
  /** Resolves at the first round after `since()` in which every call succeeded. */
  readonly healthy: Promise<void>;
  readonly done: Promise<void>;
}

/** One round at a time through `agent` (a KV write, its read back, a new service's leaf) until `stop()`. */
function trickle(agent: AgentProcess, run: string, stop: () => boolean, since: () => boolean): Trickle {
  const tally = newTally();
  let markHealthy: () => void = () => {};
  const healthy = new Promise<void>((r) => (markHealthy = r));
  const done = (async () => {
    for (let n = 0; !stop(); n++) {
      const round = await workload(agent, `${run}-${n}`, 1, undefined, 1);
      tally.ops += round.ops;
      tally.failures += round.failures;
      if (tally.samples.length < 5) tally.samples.push(...round.samples.slice(0, 5 - tally.samples.length));
      if (round.failures === 0 && since()) markHealthy();
      await sleep(TRICKLE_PAUSE_MS);
    }
  })();
  return { tally, healthy, done };
}

describe('log volume of a whole-etcd outage', () => {
  let etcd: EtcdCluster;
  let cluster: ClusterAgents;

  beforeAll(async () => {
    etcd = await startEtcdCluster({ size: 3 });
    cluster = await startClusterAgents(etcd, { prefix: `/svc-log-volume-${process.pid}/` });
  }, 60_000);

  afterAll(async () => {
    etcd?.members.forEach((m) => m.resume());
    await cluster?.stop();
    await etcd?.stop();
  });

  it(`of ${OUTAGE_S} s: a handful of distinct lines per agent, and the count of what failed once it ends`, async () => {
    // Every kind of call works before the outage (the client has a server to sign its leaves).
    for (const [i, agent] of cluster.agents.entries()) {
      const warm = await workload(agent, `warm-${i}`, 3, undefined, 1);
      expect(warm.samples, cluster.names[i]).toEqual([]);
    }
    const logFrom = cluster.agents.map((a) => a.logs.length);
    let stopped = false;
    let recovered = false;
    const load = cluster.agents.map((a, i) =>
      trickle(
        a,
        `outage-${i}`,
        () => stopped,
        () => recovered,
      ),
    );

    await Promise.all(etcd.members.map((m) => m.pause()));
    await sleep((OUTAGE_S * 1000) / 2);
    await Promise.all(etcd.members.map((m) => m.kill()));
    await sleep((OUTAGE_S * 1000) / 2);
    await Promise.all(etcd.members.map((m) => m.start()));
    await etcd.waitHealthy();
    recovered = true;
    // Each agent answers every kind of call again; then the trickle stops.
    await Promise.all(load.map((l) => l.healthy));
    stopped = true;
    await Promise.all(load.map((l) => l.done));
    const failed = load.map((l) => l.tally.failures);
    // The outage failed requests on every agent: what the lines below are measured against.
    for (const [i, n] of failed.entries()) expect(n, cluster.names[i]).toBeGreaterThan(0);

    // The client's failed requests end with their count (once no more came for a while).
    const client = cluster.agents[2]!;
    // Or, were each failed request logged, the line past the bound: the assertions below say which.
    let loudSeen = 0;
    const counted = await client.waitForLog(
      (l) =>
        (l.level === 'info' && /^request failed \(repeated [\d,]+ times over \S+\)$/.test(String(l.msg))) ||
        (loud(l) && ++loudSeen > MAX_LOUD_LINES),
      logFrom[2],
    );

    const report = cluster.agents.map((agent, i) => {
      const lines = agent.logs.slice(logFrom[i]).filter(loud);
      return { agent: cluster.names[i], failedRequests: failed[i], loudLines: lines.length, lines: lines.map(text) };
    });
    console.log(`log volume of a ${OUTAGE_S} s outage: ${String(counted.msg)}`, JSON.stringify(report, null, 1));
    if (report.some((r) => r.loudLines > MAX_LOUD_LINES)) printSaid(cluster, logFrom, 'the outage', { max: 30 });
    for (const r of report) {
      expect(r.loudLines, r.agent).toBeLessThanOrEqual(MAX_LOUD_LINES);
      expect(new Set(r.lines).size, `${r.agent}: each line distinct`).toBe(r.lines.length);
    }
    // The count: each of them one of the client's requests that failed, the first logged on its own.
    expect(counted.msg).toMatch(/^request failed \(repeated/);
    expect(Number(counted.repeated)).toBeGreaterThan(0);
    expect(Number(counted.repeated) + 1).toBeLessThanOrEqual(failed[2]!);
  }, 600_000);
});
