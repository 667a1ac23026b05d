// A blocking `GET /v1/health/service/<svc>?index=N` parked on agent C of a cluster on three etcd
// members (data on the repository's disk), woken by a check's status flipped through agent A
// (`PUT /v1/catalog/register`, the check's Status passing and critical in turn): the time from A's
// acknowledgement to C's answer (and from the write's sending), p50/p99 over F flips. Beside it,
// the same on one agent parked and written on itself (the embedded store: -data-dir on the same
// disk, and -dev). Rounds rotate the three, F/rounds flips each; the quantiles pool every flip.
// Run: node dist/bench/sizing/cluster-wake.js [--flips 1000] [--rounds 4]
import { mkdir } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { startEtcdCluster } from '../../test/support/etcd.js';
import { AGENT_MISSING, agentBuilt, startAgent } from '../support/agent.js';
import type { ServerProcess } from '../support/child.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { BENCH_OUT } from '../support/paths.js';
import { LOOPBACK } from '../support/ports.js';
import { formatTable, round, writeJson } from '../support/report.js';
import { loadavg } from './catalog.js';
import { clusterAgent, latencies, propagation, type Latencies } from './cluster.js';

const SERVICE = 'web-flip';
const READ_PATH = `/v1/health/service/${SERVICE}`;
const POLL_MS = 20;

type SideId = 'cluster: write on A, parked on C' | 'one agent, -data-dir' | 'one agent, -dev';

interface Side {
  readonly id: SideId;
  /** Where the read parks; `flip` writes the check's other status through the writing agent. */
  readonly reader: ServerProcess;
  readonly flip: () => Promise<void>;
  readonly fromSend: number[];
  readonly fromAck: number[];
  readonly rounds: Latencies[];
}

/** The flipped instance, on an external node (anti-entropy owns only an agent's own node). */
function registration(status: 'passing' | 'critical'): string {
  return JSON.stringify({
    Node: 'flip-node',
    Address: '127.0.0.2',
    Service: { ID: `${SERVICE}-1`, Service: SERVICE, Port: 8080 },
    Check: { CheckID: `${SERVICE}-1-http`, Name: 'http', ServiceID: `${SERVICE}-1`, Status: status },
  });
}

async function register(agent: ServerProcess, status: 'passing' | 'critical'): Promise<void> {
  const res = await fetch(`http://${LOOPBACK}:${agent.port}/v1/catalog/register`, {
    method: 'PUT',
    body: registration(status),
  });
  if (res.status !== 200) throw new Error(`catalog register: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
}

/** Until the reader lists the instance, so the first parked read is not answered by its arrival. */
async function untilListed(reader: ServerProcess): Promise<void> {
  for (;;) {
    const entries = (await (await fetch(`http://${LOOPBACK}:${reader.port}${READ_PATH}`)).json()) as unknown[];
    if (entries.length === 1) return;
    await sleep(POLL_MS);
  }
}

function pooled(side: Side): { fromAck: Latencies; fromSend: Latencies; answeredBeforeAck: number } {
  return {
    fromAck: latencies(side.fromAck),
    fromSend: latencies(side.fromSend),
    answeredBeforeAck: side.fromAck.filter((ms) => ms < 0).length,
  };
}

const ratio = (x: number, to: number): string => (x / to).toFixed(2);

export async function runClusterWakeBench(argv: readonly string[]): Promise<Record<string, unknown>> {
  if (!agentBuilt()) throw new Error(AGENT_MISSING);
  const { values } = parseArgs({ args: [...argv], options: { flips: { type: 'string' }, rounds: { type: 'string' } } });
  const flips = Number(values.flips ?? 1000);
  const rounds = Number(values.rounds ?? 4);
  const perRound = Math.ceil(flips / rounds);
  const loadBefore = loadavg();
  await mkdir(BENCH_OUT, { recursive: true });
  const etcd = await startEtcdCluster({ size: 3, dataRoot: BENCH_OUT });
  const agents: ServerProcess[] = [];
  const sides: Side[] = [];
  try {
    const a = await clusterAgent(etcd, 'wake', 'wake-a');
    agents.push(a, await clusterAgent(etcd, 'wake', 'wake-b', false));
    const c = await clusterAgent(etcd, 'wake', 'wake-c', false);
    agents.push(c);
    const durable = await startAgent('durable');
    agents.push(durable);
    const dev = await startAgent('dev');
    agents.push(dev);
    const side = async (id: SideId, writer: ServerProcess, reader: ServerProcess): Promise<Side> => {
      await register(writer, 'passing');
      await untilListed(reader);
      // The first flip turns the check critical, the next passing again, and so on across rounds.
      let flipped = 0;
      const flip = (): Promise<void> => register(writer, flipped++ % 2 === 0 ? 'critical' : 'passing');
      return { id, reader, flip, fromSend: [], fromAck: [], rounds: [] };
    };
    sides.push(
      await side('cluster: write on A, parked on C', a, c),
      await side('one agent, -data-dir', durable, durable),
      await side('one agent, -dev', dev, dev),
    );
    process.stderr.write(`cluster wake: etcd ${etcd.endpoints.join(',')}, ${rounds} rounds of ${perRound} flips\n`);
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < sides.length; k++) {
        const s = sides[(r + k) % sides.length] as Side;
        const got = await propagation(s.reader, perRound, READ_PATH, s.flip, (fromSend, fromAck) => {
          s.fromSend.push(fromSend);
          s.fromAck.push(fromAck);
        });
        s.rounds.push(got);
        process.stderr.write(
          `  round ${r + 1} ${s.id}: from send p50 ${got.p50Ms.toFixed(2)} / p99 ${got.p99Ms.toFixed(2)} ms\n`,
        );
      }
    }
  } finally {
    await Promise.all(agents.map((x) => x.stop()));
    await etcd.stop();
  }
  const loadAfter = loadavg();
  const results = sides.map((s) => ({ id: s.id, ...pooled(s) }));
  const baseline = results.find((x) => x.id === 'one agent, -data-dir');
  const table = formatTable(
    ['', 'ack→answer p50', 'p99', 'max', 'send→answer p50', 'p99', 'x -data-dir p50/p99', 'before ack', 'flips'],
    results.map((x) => [
      x.id,
      round(x.fromAck.p50Ms),
      round(x.fromAck.p99Ms),
      round(x.fromAck.maxMs),
      round(x.fromSend.p50Ms),
      round(x.fromSend.p99Ms),
      baseline === undefined
        ? undefined
        : `${ratio(x.fromSend.p50Ms, baseline.fromSend.p50Ms)} / ${ratio(x.fromSend.p99Ms, baseline.fromSend.p99Ms)}`,
      x.answeredBeforeAck,
      x.fromAck.count,
    ]),
  );
  process.stdout.write(
    `\na check flip written through one agent until a blocking health/service read answers (ms; ` +
      `"before ack": answers that came before the write's own acknowledgement; ratios from send)\n${table}\n` +
      `/proc/loadavg before: ${loadBefore}; after: ${loadAfter}\n`,
  );
  const report = {
    flips,
    rounds,
    results,
    perRound: sides.map((s) => ({ id: s.id, rounds: s.rounds })),
    loadavg: { before: loadBefore, after: loadAfter },
  };
  process.stdout.write(`wrote ${await writeJson('cluster-wake', report)}\n`);
  return report;
}

if (isEntryPoint(import.meta.url)) runMain(async () => void (await runClusterWakeBench(process.argv.slice(2))));
