// User events across a cluster (two server agents and a client agent on a 3-member etcd): 1,000
// events fired round-robin through all three (the client's forwarded to a server) reach every
// agent, each listed once, in the same order of its index on every agent. Each agent is followed
// by a blocking /v1/event/list loop, as `consul watch -type event` follows one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentProcess } from '../integration/support/agent-process.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { startClusterAgents, type ClusterAgents } from './support.js';

const EVENTS = 1_000;

interface Event {
  ID: string;
  LTime: number;
}

/** Follows an agent's event list until stopped: every event seen, once, in the order first seen; and when. */
function follow(agent: AgentProcess): { seen: Map<string, number>; order: string[]; stop: () => Promise<void> } {
  const seen = new Map<string, number>();
  const order: string[] = [];
  let running = true;
  const abort = new AbortController();
  const loop = (async () => {
    let index = '';
    while (running) {
      const query = index === '' ? '' : `?index=${index}&wait=5s`;
      const res = await fetch(`${agent.url}/v1/event/list${query}`, { signal: abort.signal }).catch(() => undefined);
      if (res === undefined) return;
      index = res.headers.get('X-Svc-Index') ?? '';
      for (const event of (await res.json()) as Event[]) {
        if (seen.has(event.ID)) continue;
        seen.set(event.ID, Date.now());
        order.push(event.ID);
      }
    }
  })();
  return {
    seen,
    order,
    stop: async () => {
      running = false;
      abort.abort();
      await loop;
    },
  };
}

describe('user events across a cluster', () => {
  let etcd: EtcdCluster;
  let cluster: ClusterAgents;

  beforeAll(async () => {
    etcd = await startEtcdCluster({ size: 3 });
    cluster = await startClusterAgents(etcd, { prefix: `/svc-events-${process.pid}/` });
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
    await etcd?.stop();
  });

  it(`delivers ${EVENTS} events fired through every agent to every agent, once each, in index order`, async () => {
    const followers = cluster.agents.map(follow);
    const fired: { id: string; at: number }[] = [];
    let failures = 0;
    for (let i = 0; i < EVENTS; i++) {
      const agent = cluster.agents[i % cluster.agents.length]!;
      const res = await fetch(`${agent.url}/v1/event/fire/e${i}`, { method: 'PUT', body: String(i) });
      if (res.status !== 200) {
        failures++;
        continue;
      }
      fired.push({ id: ((await res.json()) as Event).ID, at: Date.now() });
    }
    const last = fired.at(-1)!.id;
    while (followers.some((f) => !f.seen.has(last))) await new Promise((resolve) => setTimeout(resolve, 50));
    await Promise.all(followers.map((f) => f.stop()));

    expect(failures).toBe(0);
    const ids = fired.map((f) => f.id);
    for (const [i, f] of followers.entries()) {
      expect(f.order, cluster.names[i]).toEqual(ids);
    }
    const lags = followers.flatMap((f) => fired.map((e) => f.seen.get(e.id)! - e.at)).sort((a, b) => a - b);
    console.log(
      `events: ${EVENTS} to ${followers.length} agents; lag p50 ${lags[lags.length >> 1]} ms, max ${lags.at(-1)} ms`,
    );
  }, 180_000);
});
