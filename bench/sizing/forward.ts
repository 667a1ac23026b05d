// A write through a client agent against the same write through a server agent, on one etcd, in one
// run (docs/decisions.md D25: the client hands it to a server over etcd's mailbox
// `<prefix>sign/writes/`, the server commits it and answers): W sequential KV PUTs per round through
// each agent, the two alternated round by round; the row is the ratio of the medians of the rounds'
// median latencies (client / server: what the forwarding hop costs a write), with each side's p99.
// Run: node dist/bench/sizing/forward.js [--writes 300] [--rounds 4]
import { parseArgs } from 'node:util';
import { startEtcdCluster } from '../../test/support/etcd.js';
import { AGENT_MISSING, agentBuilt, startAgent } from '../support/agent.js';
import type { ServerProcess } from '../support/child.js';
import { putKey } from '../support/kv-client.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { formatTable, round, writeJson } from '../support/report.js';
import { median, quantileSorted } from '../support/stats.js';

const VALUE = 'x'.repeat(128);

/** Each PUT's latency in ms, one after the other. */
async function putRound(agent: ServerProcess, tag: string, writes: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < writes; i++) {
    const started = performance.now();
    await putKey(agent.port, `bench/${tag}/${i}`, VALUE);
    out.push(performance.now() - started);
  }
  return out;
}

async function runForwardBench(writes: number, rounds: number): Promise<Record<string, unknown>> {
  const etcd = await startEtcdCluster({ size: 1 });
  const agents: ServerProcess[] = [];
  try {
    const flags = (name: string, server: boolean): string[] => [
      ...etcd.endpoints.flatMap((url) => ['-etcd', url]),
      ...(server ? ['-server'] : []),
      '-node',
      name,
    ];
    const server = await startAgent('dev', flags('bench-server', true));
    agents.push(server);
    const client = await startAgent('dev', flags('bench-client', false));
    agents.push(client);
    // Warm both paths (JIT, etcd connections, the mailbox watches) before anything is measured.
    await putRound(server, 'warm-server', 50);
    await putRound(client, 'warm-client', 50);
    const byRound: { server: number[]; client: number[] }[] = [];
    for (let r = 0; r < rounds; r++) {
      // Alternate which goes first, so neither always meets a warmer etcd.
      const first = r % 2 === 0 ? 'server' : 'client';
      const one = await putRound(first === 'server' ? server : client, `${first}-${r}`, writes);
      const second = first === 'server' ? 'client' : 'server';
      const two = await putRound(second === 'server' ? server : client, `${second}-${r}`, writes);
      byRound.push(first === 'server' ? { server: one, client: two } : { server: two, client: one });
    }
    const side = (name: 'server' | 'client') => {
      const medians = byRound.map((x) => median(x[name]));
      const all = byRound.flatMap((x) => x[name]).sort((a, b) => a - b);
      return { medianMs: median(medians), p99Ms: quantileSorted(all, 0.99), roundMedians: medians };
    };
    const viaServer = side('server');
    const viaClient = side('client');
    return {
      writes,
      rounds,
      server: viaServer,
      client: viaClient,
      ratio: viaClient.medianMs / viaServer.medianMs,
    };
  } finally {
    for (const agent of agents.reverse()) await agent.stop();
    await etcd.stop();
  }
}

async function main(): Promise<void> {
  if (!agentBuilt()) {
    process.stdout.write(`${AGENT_MISSING}\n`);
    return;
  }
  const { values } = parseArgs({ options: { writes: { type: 'string' }, rounds: { type: 'string' } } });
  const result = await runForwardBench(Number(values.writes ?? 300), Number(values.rounds ?? 4));
  const row = (name: string, x: unknown) => {
    const s = x as { medianMs: number; p99Ms: number };
    return [name, round(s.medianMs), round(s.p99Ms)];
  };
  process.stdout.write(
    `${formatTable(
      ['KV PUT', 'median ms', 'p99 ms'],
      [row('through a server agent', result['server']), row('through a client agent', result['client'])],
    )}\nclient / server: ${(result['ratio'] as number).toFixed(2)}x\n`,
  );
  process.stderr.write(`written: ${await writeJson('forward', result)}\n`);
}

if (isEntryPoint(import.meta.url)) runMain(main);
