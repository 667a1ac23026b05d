// Transactions across a cluster (servers a and b, client c, on a 3-member etcd): in each of 40
// rounds every agent sends at once a transaction that CASes the same two keys from the index both
// had; exactly one applies per round (200), the others fail whole (409, index stale), and both keys
// then hold the winner's values (read back through every agent). A transaction whose check fails
// applies nothing. Every call's answer is counted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentProcess } from '../integration/support/agent-process.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { startClusterAgents, type ClusterAgents } from './support.js';

const ROUNDS = 40;
const b64 = (text: string): string => Buffer.from(text).toString('base64');

interface TxnReply {
  Results: { KV: { Key: string; Value: string | null; ModifyIndex: number } }[] | null;
  Errors: { OpIndex: number; What: string }[] | null;
}

async function txn(agent: AgentProcess, ops: unknown): Promise<{ status: number; body: TxnReply }> {
  const res = await fetch(`${agent.url}/v1/txn`, { method: 'PUT', body: JSON.stringify(ops) });
  return { status: res.status, body: (await res.json()) as TxnReply };
}

describe('transactions across a cluster', () => {
  let etcd: EtcdCluster;
  let cluster: ClusterAgents;

  beforeAll(async () => {
    etcd = await startEtcdCluster({ size: 3 });
    cluster = await startClusterAgents(etcd, { prefix: `/svc-txn-${process.pid}/` });
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
    await etcd?.stop();
  });

  it(`lets exactly one of three concurrent CAS transactions apply per index, ${ROUNDS} rounds`, async () => {
    const agents = cluster.agents;
    const first = await txn(agents[0]!, [
      { KV: { Verb: 'set', Key: 'pair/x', Value: b64('start') } },
      { KV: { Verb: 'set', Key: 'pair/y', Value: b64('start') } },
    ]);
    expect(first.status).toBe(200);
    let x = first.body.Results![0]!.KV.ModifyIndex;
    let y = first.body.Results![1]!.KV.ModifyIndex;
    const tally = { applied: 0, stale: 0, other: [] as string[] };
    for (let round = 0; round < ROUNDS; round++) {
      const answers = await Promise.all(
        agents.map((agent, i) =>
          txn(agent, [
            { KV: { Verb: 'cas', Key: 'pair/x', Value: b64(`r${round}-agent${i}`), Index: x } },
            { KV: { Verb: 'cas', Key: 'pair/y', Value: b64(`r${round}-agent${i}`), Index: y } },
          ]),
        ),
      );
      const winners = answers.flatMap((a, i) => (a.status === 200 ? [i] : []));
      for (const a of answers) {
        if (a.status === 200) tally.applied++;
        else if (a.status === 409 && a.body.Errors?.every((e) => e.What.endsWith('index is stale'))) tally.stale++;
        else tally.other.push(`${a.status} ${JSON.stringify(a.body)}`);
      }
      expect(winners).toHaveLength(1);
      const won = answers[winners[0]!]!.body.Results!;
      x = won[0]!.KV.ModifyIndex;
      y = won[1]!.KV.ModifyIndex;
      // Every agent reads the winner's pair.
      for (const agent of agents) {
        const read = await txn(agent, [{ KV: { Verb: 'get', Key: 'pair/x' } }, { KV: { Verb: 'get', Key: 'pair/y' } }]);
        expect(read.body.Results!.map((r) => r.KV.Value)).toEqual([
          b64(`r${round}-agent${winners[0]}`),
          b64(`r${round}-agent${winners[0]}`),
        ]);
      }
    }
    console.log('txn-cas', JSON.stringify(tally));
    expect(tally).toEqual({ applied: ROUNDS, stale: 2 * ROUNDS, other: [] });
  }, 120_000);

  it('applies nothing when a check fails, whichever agent runs it', async () => {
    for (const [i, agent] of cluster.agents.entries()) {
      const failed = await txn(agent, [
        { KV: { Verb: 'set', Key: `half/${i}`, Value: b64('never') } },
        { KV: { Verb: 'check-not-exists', Key: 'pair/x' } },
      ]);
      expect(failed.status).toBe(409);
      expect(failed.body.Errors).toEqual([{ OpIndex: 1, What: 'key "pair/x" exists' }]);
      for (const reader of cluster.agents) {
        expect((await fetch(`${reader.url}/v1/kv/half/${i}`)).status).toBe(404);
      }
    }
  });
});
