// A whole-etcd outage while three agents keep taking writes: every member hung (SIGSTOP) for half
// of it, then killed, then restarted with its data. Afterwards: exactly one lease per live agent
// (etcd's own lease list), each agent's connections to etcd no more than before, its memory
// within 20 % of before, and writes working within 5 s of etcd having a leader. The outage lengths
// are 10 s, 60 s and 5 minutes (issue 27); SVC_OUTAGE_SECONDS="10" runs a shorter list by hand.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentProcess } from '../integration/support/agent-process.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { clientPorts, etcdConnections, rssBytes, settled, startClusterAgents, stackLines } from './support.js';
import { printSaid, workload } from './support.js';
import type { ClusterAgents } from './support.js';

const OUTAGES_S = (process.env.SVC_OUTAGE_SECONDS ?? '10,60,300').split(',').map(Number);
/** The bound: writes work again this soon after etcd has a leader. */
const WRITES_BACK_WITHIN_MS = 5_000;
/** Writes per agent counted after that bound, each of which must succeed. */
const WRITES_AFTER = 100;
/**
 * The counted writes end by this long after the bound, sent or not: writes that hang until their own
 * timeout would otherwise run out the test's clock before any is reported (those not sent count as failures).
 */
const WRITES_WITHIN_MS = 120_000;
const PASSWORD = 'outage-root-pw';
/** How long leases (member TTL 3 s) and connections are given to settle before they are asserted. */
const SETTLE_MS = 15_000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Footprint {
  connections: number;
  rss: number;
}

async function footprint(agent: AgentProcess, ports: readonly number[]): Promise<Footprint> {
  const pid = agent.child.pid!;
  return { connections: await etcdConnections(pid, ports), rss: await rssBytes(pid) };
}

/** Writes through `agent` until `stop()` says so, a pause between them; failures expected and not counted. */
async function writeThrough(agent: AgentProcess, run: string, stop: () => boolean): Promise<void> {
  for (let i = 0; !stop(); i++) {
    const init = { method: 'PUT', body: 'x', signal: AbortSignal.timeout(10_000) };
    await fetch(`${agent.url}/v1/kv/outage/${run}/${i}`, init).catch(() => undefined);
    await sleep(50);
  }
}

/** The suite for one auth setting; each setting has its own file, so the two run side by side. */
export function outageSuite(auth: boolean): void {
  describe(`a whole-etcd outage (etcd auth ${auth})`, () => {
    let etcd: EtcdCluster;
    let cluster: ClusterAgents;
    let ports: number[];

    beforeAll(async () => {
      etcd = await startEtcdCluster({ size: 3 });
      if (auth) await etcd.enableAuth(PASSWORD);
      ports = clientPorts(etcd);
      cluster = await startClusterAgents(etcd, {
        prefix: `/svc-outage-${process.pid}/`,
        ...(auth ? { auth: { username: 'root', password: PASSWORD } } : {}),
      });
    }, 60_000);

    afterAll(async () => {
      etcd?.members.forEach((m) => m.resume());
      await cluster?.stop();
      await etcd?.stop();
    });

    const title = 'of %i s ends cleanly: one lease per agent, connections and memory as before, writes back';
    it.each(OUTAGES_S)(
      title,
      async (seconds) => {
        const run = `${auth ? 'auth' : 'plain'}-${seconds}`;
        // Warm up (the first writes grow every agent's heap), then take the measures to come back to.
        await Promise.all(cluster.agents.map((a, i) => workload(a, `${run}-warm-${i}`, 200)));
        const leasesBefore = await settled(
          () => etcd.leases(),
          (l) => l.length === cluster.agents.length,
          SETTLE_MS,
        );
        expect(leasesBefore.length, `leases before the outage: ${leasesBefore.join(' ')}`).toBe(cluster.agents.length);
        const before = await Promise.all(cluster.agents.map((a) => footprint(a, ports)));
        const logFrom = cluster.agents.map((a) => a.logs.length);

        let outage = true;
        const load = cluster.agents.map((a, i) => writeThrough(a, `${run}-${i}`, () => !outage));
        await Promise.all(etcd.members.map((m) => m.pause()));
        await sleep((seconds * 1000) / 2);
        await Promise.all(etcd.members.map((m) => m.kill()));
        await sleep((seconds * 1000) / 2);
        await Promise.all(etcd.members.map((m) => m.start()));
        await etcd.waitHealthy();
        const leaderAt = performance.now();
        outage = false;
        await Promise.all(load);

        // Writes from the leader on; only those sent after the bound are counted.
        const counted = await Promise.all(
          cluster.agents.map(async (agent, i) => {
            let failures = 0;
            let sent = 0;
            const samples: string[] = [];
            const end = leaderAt + WRITES_BACK_WITHIN_MS + WRITES_WITHIN_MS;
            for (let n = 0; sent < WRITES_AFTER && performance.now() < end; n++) {
              const afterBound = performance.now() - leaderAt >= WRITES_BACK_WITHIN_MS;
              const init = { method: 'PUT', body: 'y', signal: AbortSignal.timeout(10_000) };
              const began = performance.now();
              const res = await fetch(`${agent.url}/v1/kv/outage/${run}-after-${i}/${n}`, init).then(
                async (r) => `${r.status} ${await r.text()}`,
                (err: Error) => err.message,
              );
              if (!afterBound) continue;
              sent++;
              if (res.trim() !== '200 true') {
                failures++;
                const at = Math.round(began - leaderAt);
                if (samples.length < 3)
                  samples.push(
                    `${res.trim()} (sent ${at} ms after the leader, ${Math.round(performance.now() - began)} ms)`,
                  );
              }
            }
            if (sent < WRITES_AFTER) {
              failures += WRITES_AFTER - sent;
              samples.push(`${WRITES_AFTER - sent} not sent within ${WRITES_WITHIN_MS / 1000} s of the bound`);
            }
            return { failures, samples };
          }),
        );

        // etcd's lease list: the leases of the attempts before settle (revoked, or expired after their TTL).
        const leases = await settled(
          () => etcd.leases(),
          (l) => l.length === cluster.agents.length,
          SETTLE_MS,
        );
        // Connections come back as the streams that moved settle; memory is read once that is so.
        const after = await Promise.all(
          cluster.agents.map((a, i) =>
            settled(
              () => footprint(a, ports),
              (f) => f.connections <= before[i]!.connections,
              SETTLE_MS,
            ),
          ),
        );
        const report = cluster.names.map((n, i) => ({
          agent: n,
          connections: `${before[i]!.connections} -> ${after[i]!.connections}`,
          rssMb: `${Math.round(before[i]!.rss / 2 ** 20)} -> ${Math.round(after[i]!.rss / 2 ** 20)}`,
          leaseLostLines: cluster.agents[i]!.logs.slice(logFrom[i]).filter((l) => String(l.msg).includes('lease lost'))
            .length,
        }));
        console.log(`outage ${run}: leases ${leases.length}`, JSON.stringify(report), JSON.stringify(counted));
        if (counted.some((c) => c.failures > 0) || leases.length !== cluster.agents.length) {
          // What each agent said since the outage began: the one trace a failure here leaves.
          printSaid(cluster, logFrom, 'the outage');
          console.log(`leases: ${leases.join(' ')}`);
        }

        expect(counted).toEqual(cluster.agents.map(() => ({ failures: 0, samples: [] })));
        expect(leases.length).toBe(cluster.agents.length);
        // A leak is more connections than before; fewer is etcd3 closing a member's idle channel.
        for (const [i, footprint] of after.entries()) {
          expect(footprint.connections, cluster.names[i]).toBeLessThanOrEqual(before[i]!.connections);
        }
        for (const [i, agent] of cluster.agents.entries()) {
          expect(after[i]!.rss, cluster.names[i]).toBeLessThanOrEqual(before[i]!.rss * 1.2);
          // One line when the lease went, not one per attempt to put it back.
          expect(report[i]!.leaseLostLines, cluster.names[i]).toBeLessThanOrEqual(1);
          expect(stackLines(agent), cluster.names[i]).toEqual([]);
        }
      },
      600_000,
    );
  });
}
