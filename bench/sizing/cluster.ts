// The cluster on etcd (docs/decisions.md D12, D15), each figure against a baseline of the same run:
// - authorize over HTTP on an agent of the cluster against the same build's -dev agent, the same
//   10,000 intentions, one wrk setting, rounds alternated (target >= 0.95x: reads are local);
// - propagation: W writes through agent A, each timed until a blocking query parked on agent B has
//   answered, for a KV key (read through from etcd) and for an intention (B's view), p50/p99
//   (target p99 <= 50 ms), beside etcd's own floor: a put by one etcd3 client until a second
//   client's watch delivers it; the three in turn per round, each round's first rotated;
// - KV PUT through a cluster agent against a bare etcd3 client putting the same values with as
//   many writes in flight, on the same etcd, its data on the repository's disk (target >= 0.5x);
// - one member down: KV PUT through an agent on a three-member etcd (data on disk) with a follower
//   killed against all members up, rounds alternated: writes/s and p99 (reported, no target);
// - fan-out: 3 agents x Q parked queries on one key, one write: until the last answer on each;
// - a client agent against a server agent of one mesh, ACLs on (docs/decisions.md D23, D24, D25): authorize
//   over HTTP with a token (the client resolves it from its view of hashes) and leaf issuance, each a
//   new service's first leaf, one at a time (the client's signed by a server over etcd's mailbox);
//   with --before <another build's dist/src/cli/main.js>, also authorize with a token on a client
//   agent of this build against one of that build, each build a mesh of its own (a server and a client).
// Every ratio is the median of per-round ratios taken in the same run.
// Run: node dist/bench/sizing/cluster.js [--duration 10] [--rounds 2] [--writes 1000] [--queries 5000]
//      [--leaves 100] [--only authorize,propagation,put,fanout,member-down,client-server]
//      [--before <main.js>]
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startEtcdCluster, type EtcdCluster } from '../../test/support/etcd.js';
import { connectEtcd, type EtcdConnection } from '../../src/state/etcd/index.js';
import { AGENT_MISSING, agentBuilt, startAgent } from '../support/agent.js';
import { parseHttpBenchArgs, type HttpBenchArgs } from '../support/args.js';
import type { ServerProcess } from '../support/child.js';
import { kvUrl, probe, putKey } from '../support/kv-client.js';
import type { LoadRequest, LoadResult, LoadTool } from '../support/load.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { parkQueries } from '../support/parked-queries.js';
import { pickLoadTool } from '../support/pick-tool.js';
import { LOOPBACK } from '../support/ports.js';
import { startCpuWatch } from '../support/proc-stats.js';
import { BENCH_OUT } from '../support/paths.js';
import { formatTable, round, writeJson, type Cell } from '../support/report.js';
import { median, quantileSorted } from '../support/stats.js';
import { AUTHORIZE_BODY, seedAgent } from './authorize.js';

const PREFIX = '/svc-bench/';
const PUT_VALUE = 'x'.repeat(128);
const WAKE_TIMEOUT_MS = 30_000;

const PARTS = ['authorize', 'propagation', 'put', 'fanout', 'member-down', 'client-server'] as const;
type Part = (typeof PARTS)[number];

interface ClusterArgs extends HttpBenchArgs {
  readonly writes: number;
  readonly queries: number;
  /** Leaves per side per round in the client-server rows. */
  readonly leaves: number;
  readonly only: ReadonlySet<Part>;
  /** Another build's CLI entry: the client-server part also compares a client agent of each build. */
  readonly before: string | undefined;
}

function parseArgs(argv: readonly string[]): ClusterArgs {
  const own = { writes: 1000, queries: 5000, leaves: 100 };
  let only: ReadonlySet<Part> = new Set(PARTS);
  let before: string | undefined;
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === '--writes' || flag === '--queries' || flag === '--leaves')
      own[flag.slice(2) as 'writes' | 'queries' | 'leaves'] = Number(argv[++i]);
    else if (flag === '--only') {
      const names = (argv[++i] ?? '').split(',');
      for (const name of names) if (!PARTS.includes(name as Part)) throw new Error(`--only: no part ${name}`);
      only = new Set(names as Part[]);
    } else if (flag === '--before') before = argv[++i];
    else rest.push(flag as string);
  }
  return { ...parseHttpBenchArgs(rest), ...own, only, before };
}

/** An agent of the mesh under `/svc-bench/<mesh>/`: each part of the bench starts from an empty mesh. */
export async function clusterAgent(
  etcd: EtcdCluster,
  mesh: string,
  name: string,
  server = true,
  settings: Record<string, unknown> = {},
  main?: string,
): Promise<ServerProcess> {
  const config = join(BENCH_OUT, `cluster-${mesh}-${name}.json`);
  await writeFile(config, JSON.stringify({ cluster: { etcd: { prefix: `${PREFIX}${mesh}/` } }, ...settings }));
  const flags = [
    ...etcd.endpoints.flatMap((url) => ['-etcd', url]),
    ...(server ? ['-server'] : []),
    '-node',
    name,
    '-config-file',
    config,
  ];
  return startAgent('dev', flags, main);
}

// ---- authorize ---------------------------------------------------------------------------------

export async function authorizeRps(
  tool: LoadTool,
  agent: ServerProcess,
  args: HttpBenchArgs,
): Promise<{ rps: number; p99Ms: number; otherPct: number }> {
  const request = {
    url: `http://${LOOPBACK}:${agent.port}/v1/agent/connect/authorize`,
    method: 'POST' as const,
    body: AUTHORIZE_BODY,
  };
  const check = await probe(request.url, { method: 'POST', body: AUTHORIZE_BODY });
  if (check.status !== 200) throw new Error(`authorize answered ${check.status}: ${check.body.slice(0, 200)}`);
  const settings = { durationS: args.durationS, connections: args.connections, threads: args.threads };
  if (args.warmupS > 0) await tool.run(request, { ...settings, durationS: args.warmupS });
  const cpu = startCpuWatch(agent.pid);
  const result = await tool.run(request, settings);
  return { rps: result.rps, p99Ms: result.p99Ms, otherPct: cpu().otherPct };
}

async function authorizeRows(tool: LoadTool, etcd: EtcdCluster, args: HttpBenchArgs): Promise<Record<string, unknown>> {
  const dev = await startAgent('dev');
  const cluster = await clusterAgent(etcd, 'authorize', 'authorize');
  try {
    await Promise.all([seedAgent(dev.port), seedAgent(cluster.port)]);
    const ratios: number[] = [];
    const samples: { dev: number; cluster: number; otherPct: number }[] = [];
    for (let r = 0; r < args.rounds; r++) {
      // Alternated, so drift on the machine lands on both sides.
      const first = r % 2 === 0 ? dev : cluster;
      const a = await authorizeRps(tool, first, args);
      const b = await authorizeRps(tool, first === dev ? cluster : dev, args);
      const [d, c] = first === dev ? [a, b] : [b, a];
      ratios.push(c.rps / d.rps);
      samples.push({ dev: d.rps, cluster: c.rps, otherPct: Math.max(a.otherPct, b.otherPct) });
      process.stderr.write(
        `  authorize round ${r + 1}: -dev ${Math.round(d.rps)}/s, cluster ${Math.round(c.rps)}/s (${(c.rps / d.rps).toFixed(3)}x)\n`,
      );
    }
    return { ratio: median(ratios), ratios, samples };
  } finally {
    await Promise.all([dev.stop(), cluster.stop()]);
  }
}

// ---- propagation -------------------------------------------------------------------------------

export interface Latencies {
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly count: number;
}

export function latencies(ms: number[]): Latencies {
  const sorted = [...ms].sort((x, y) => x - y);
  return {
    p50Ms: quantileSorted(sorted, 0.5),
    p99Ms: quantileSorted(sorted, 0.99),
    maxMs: sorted[sorted.length - 1] ?? Number.NaN,
    count: sorted.length,
  };
}

async function gauge(agent: ServerProcess, name: string): Promise<number> {
  const metrics = (await (await fetch(`http://${LOOPBACK}:${agent.port}/v1/agent/metrics`)).json()) as {
    Gauges: { Name: string; Value: number }[];
  };
  return metrics.Gauges.find((g) => g.Name === name)?.Value ?? 0;
}

const parkedOn = (agent: ServerProcess): Promise<number> => gauge(agent, 'svc.blocking.parked');

/**
 * Each write (through agent A) timed until B's blocking read of `readPath` answers with a later index;
 * `onWrite` hears each write's times to that answer from its sending and from its acknowledgement.
 */
export async function propagation(
  b: ServerProcess,
  writes: number,
  readPath: string,
  write: (i: number) => Promise<void>,
  onWrite?: (fromSendMs: number, fromAckMs: number) => void,
): Promise<Latencies> {
  const base = `http://${LOOPBACK}:${b.port}${readPath}`;
  const sep = readPath.includes('?') ? '&' : '?';
  let index = Number((await fetch(base)).headers.get('x-svc-index'));
  const idleWatches = await gauge(b, 'svc.state.watches');
  const ms: number[] = [];
  for (let i = 0; i < writes; i++) {
    let early: Response | undefined;
    const answered = fetch(`${base}${sep}index=${index}&wait=30s`).then((res) => (early = res));
    // Parked, its watch live (a KV read's etcd watch created), before the write: the figure is the
    // write's journey, not the read's set-up. A write racing the creation of an etcd watch from a
    // past revision waits for etcd's 100 ms catch-up loop.
    while (early === undefined && (await gauge(b, 'svc.state.watches')) <= idleWatches) {
      await new Promise((r) => setImmediate(r));
    }
    if (early !== undefined) {
      // Answered before the write (another change moved the index): park again from there.
      if (early.status !== 200) throw new Error(`${readPath}: ${early.status} while parked`);
      index = Number(early.headers.get('x-svc-index'));
      await early.arrayBuffer();
      i--;
      continue;
    }
    const t0 = performance.now();
    let ackedAt = Number.NaN;
    let answeredAt = Number.NaN;
    await Promise.all([
      write(i).then(() => (ackedAt = performance.now())),
      answered.then((res) => {
        answeredAt = performance.now();
        ms.push(answeredAt - t0);
        const next = Number(res.headers.get('x-svc-index'));
        if (!(next > index)) throw new Error(`${readPath}: index ${next} after ${index}`);
        index = next;
        return res.arrayBuffer();
      }),
    ]);
    onWrite?.(answeredAt - t0, answeredAt - ackedAt);
  }
  return latencies(ms);
}

/** etcd's own floor: a put by one client until a watch held by a second client delivers it. */
async function etcdFloor(etcd: EtcdCluster, writes: number): Promise<Latencies> {
  const writer = connectEtcd({ endpoints: etcd.endpoints });
  const watcher = connectEtcd({ endpoints: etcd.endpoints });
  const key = Buffer.from(`${PREFIX}floor`);
  const put = (value: string): Promise<number> =>
    writer
      .txn({ compares: [], success: [{ op: 'put', key, value: Buffer.from(value) }], failure: [] }, 5_000)
      .then((r) => r.revision);
  const ms: number[] = [];
  let delivered: (() => void) | undefined;
  let watch: { cancel(): void } | undefined;
  try {
    const from = await put('start');
    await new Promise<void>((ready, fail) => {
      watch = watcher.watchRange(key, Buffer.concat([key, Buffer.from([0])]), from + 1, {
        connected: ready,
        events: (events) => {
          if (events.length > 0) delivered?.();
        },
        disconnected: fail,
        cancelled: fail,
      });
    });
    for (let i = 0; i < writes; i++) {
      const seen = new Promise<void>((resolve) => {
        delivered = resolve;
      });
      const t0 = performance.now();
      await Promise.all([put(String(i)), seen]);
      ms.push(performance.now() - t0);
    }
  } finally {
    watch?.cancel();
    writer.close();
    watcher.close();
  }
  return latencies(ms);
}

/** Each round: KV and intention propagation and etcd's floor, `writes` each, the first rotated per round. */
async function propagationRows(etcd: EtcdCluster, args: ClusterArgs): Promise<Record<string, unknown>> {
  const a = await clusterAgent(etcd, 'propagation', 'prop-a');
  const b = await clusterAgent(etcd, 'propagation', 'prop-b', false);
  const kvWrite = (i: number): Promise<void> => putKey(a.port, 'bench/prop', String(i));
  const intentionWrite = async (i: number): Promise<void> => {
    const res = await fetch(`http://${LOOPBACK}:${a.port}/v1/connect/intentions/exact?source=web&destination=db`, {
      method: 'PUT',
      body: JSON.stringify({ Action: i % 2 === 0 ? 'deny' : 'allow' }),
    });
    if (res.status !== 200) throw new Error(`intention write: ${res.status}`);
    await res.arrayBuffer();
  };
  const parts = {
    kv: () => propagation(b, args.writes, '/v1/kv/bench/prop', kvWrite),
    intention: () => propagation(b, args.writes, '/v1/connect/intentions', intentionWrite),
    etcdFloor: () => etcdFloor(etcd, args.writes),
  };
  const names = Object.keys(parts) as (keyof typeof parts)[];
  const rounds: Record<keyof typeof parts, Latencies>[] = [];
  try {
    for (let r = 0; r < args.rounds; r++) {
      const round: Partial<Record<keyof typeof parts, Latencies>> = {};
      for (let k = 0; k < names.length; k++) {
        const name = names[(r + k) % names.length] as keyof typeof parts;
        round[name] = await parts[name]();
      }
      const full = round as Record<keyof typeof parts, Latencies>;
      rounds.push(full);
      process.stderr.write(
        `  propagation round ${r + 1}: p50/p99 ms KV ${round2(full.kv)}, intention ${round2(full.intention)}, etcd floor ${round2(full.etcdFloor)}\n`,
      );
    }
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
  const over = (part: keyof typeof parts, q: 'p50Ms' | 'p99Ms'): number =>
    median(rounds.map((x) => x[part][q] / x.etcdFloor[q]));
  return {
    kv: medianLatencies(rounds.map((x) => x.kv)),
    intention: medianLatencies(rounds.map((x) => x.intention)),
    etcdFloor: medianLatencies(rounds.map((x) => x.etcdFloor)),
    overFloor: {
      kv: { p50: over('kv', 'p50Ms'), p99: over('kv', 'p99Ms') },
      intention: { p50: over('intention', 'p50Ms'), p99: over('intention', 'p99Ms') },
    },
    rounds,
  };
}

function round2(l: Latencies): string {
  return `${l.p50Ms.toFixed(2)}/${l.p99Ms.toFixed(2)}`;
}

/** Per-round latencies summarised: the median p50 and p99 across rounds, the worst max, every write. */
function medianLatencies(rounds: readonly Latencies[]): Latencies {
  return {
    p50Ms: median(rounds.map((l) => l.p50Ms)),
    p99Ms: median(rounds.map((l) => l.p99Ms)),
    maxMs: Math.max(...rounds.map((l) => l.maxMs)),
    count: rounds.reduce((sum, l) => sum + l.count, 0),
  };
}

// ---- durable PUT -------------------------------------------------------------------------------

/** Puts by a bare client, `inFlight` at once, for `seconds`: puts per second. */
async function bareEtcdPuts(connection: EtcdConnection, inFlight: number, seconds: number): Promise<number> {
  const end = performance.now() + seconds * 1000;
  let done = 0;
  const value = Buffer.from(PUT_VALUE);
  const lane = async (n: number): Promise<void> => {
    const key = Buffer.from(`${PREFIX}bare/${n}`);
    while (performance.now() < end) {
      await connection.txn({ compares: [], success: [{ op: 'put', key, value }], failure: [] }, 5_000);
      done++;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: inFlight }, (_, n) => lane(n)));
  return done / ((performance.now() - started) / 1000);
}

async function putRows(tool: LoadTool, etcd: EtcdCluster, args: HttpBenchArgs): Promise<Record<string, unknown>> {
  const agent = await clusterAgent(etcd, 'put', 'put');
  const bare = connectEtcd({ endpoints: etcd.endpoints });
  try {
    const request = putRequest(agent, args);
    const settings = { durationS: args.durationS, connections: args.connections, threads: args.threads };
    const ratios: number[] = [];
    const samples: { agent: number; bare: number; agentP99Ms: number }[] = [];
    for (let r = 0; r < args.rounds; r++) {
      const viaAgent = async (): Promise<{ rps: number; p99Ms: number }> => tool.run(request, settings);
      const viaBare = (): Promise<number> => bareEtcdPuts(bare, args.connections, args.durationS);
      let agentResult: { rps: number; p99Ms: number };
      let bareRps: number;
      if (r % 2 === 0) {
        agentResult = await viaAgent();
        bareRps = await viaBare();
      } else {
        bareRps = await viaBare();
        agentResult = await viaAgent();
      }
      ratios.push(agentResult.rps / bareRps);
      samples.push({ agent: agentResult.rps, bare: bareRps, agentP99Ms: agentResult.p99Ms });
      process.stderr.write(
        `  PUT round ${r + 1}: agent ${Math.round(agentResult.rps)}/s, bare etcd3 ${Math.round(bareRps)}/s\n`,
      );
    }
    return { ratio: median(ratios), ratios, samples };
  } finally {
    bare.close();
    await agent.stop();
  }
}

// ---- one member down --------------------------------------------------------------------------

/** KV PUTs through `agent`, the load of the PUT and member-down rows. */
function putRequest(agent: ServerProcess, args: HttpBenchArgs): LoadRequest {
  // One key per lane on both sides, as the bare client writes: commits of one key go in call order.
  const paths = Array.from({ length: args.connections * 4 }, (_, n) => `/v1/kv/bench/put/${n}`);
  return { url: kvUrl(agent.port, 'bench/put'), method: 'PUT', body: PUT_VALUE, paths };
}

/**
 * KV PUT through an agent on three members, all up against a follower killed (after the warm-up,
 * which is when the agent finds it gone), in alternated rounds; the member restarts with its data
 * and is healthy before the next run. A follower: with the leader killed the run would time an
 * election, which the fault tests bound instead.
 */
async function memberDownRows(tool: LoadTool, args: HttpBenchArgs): Promise<Record<string, unknown>> {
  const etcd = await startEtcdCluster({ size: 3, dataRoot: BENCH_OUT });
  const agent = await clusterAgent(etcd, 'member-down', 'member-down');
  try {
    const request = putRequest(agent, args);
    const settings = { durationS: args.durationS, connections: args.connections, threads: args.threads };
    const allUp = async (): Promise<LoadResult> => {
      if (args.warmupS > 0) await tool.run(request, { ...settings, durationS: args.warmupS });
      return tool.run(request, settings);
    };
    const oneDown = async (): Promise<LoadResult> => {
      const leader = await etcd.leader();
      const follower = etcd.members.find((m) => m !== leader)!;
      await follower.kill();
      try {
        await tool.run(request, { ...settings, durationS: Math.max(1, args.warmupS) });
        return await tool.run(request, settings);
      } finally {
        await follower.start();
      }
    };
    const ratios: { rps: number; p99: number }[] = [];
    const samples: { up: LoadResult; down: LoadResult }[] = [];
    for (let r = 0; r < args.rounds; r++) {
      // Alternated, so drift on the machine lands on both sides.
      let pair: { up: LoadResult; down: LoadResult };
      if (r % 2 === 0) {
        const up = await allUp();
        pair = { up, down: await oneDown() };
      } else {
        const down = await oneDown();
        pair = { up: await allUp(), down };
      }
      ratios.push({ rps: pair.down.rps / pair.up.rps, p99: pair.down.p99Ms / pair.up.p99Ms });
      samples.push(pair);
      process.stderr.write(
        `  member down round ${r + 1}: all up ${Math.round(pair.up.rps)}/s p99 ${pair.up.p99Ms} ms, ` +
          `one down ${Math.round(pair.down.rps)}/s p99 ${pair.down.p99Ms} ms ` +
          `(non-2xx ${pair.up.non2xx}/${pair.down.non2xx}, errors ${pair.up.errors}/${pair.down.errors})\n`,
      );
    }
    return {
      rpsRatio: median(ratios.map((x) => x.rps)),
      p99Ratio: median(ratios.map((x) => x.p99)),
      up: { rps: median(samples.map((x) => x.up.rps)), p99Ms: median(samples.map((x) => x.up.p99Ms)) },
      down: { rps: median(samples.map((x) => x.down.rps)), p99Ms: median(samples.map((x) => x.down.p99Ms)) },
      failed: samples.reduce((sum, x) => sum + x.up.non2xx + x.up.errors + x.down.non2xx + x.down.errors, 0),
      ratios,
      samples,
    };
  } finally {
    await agent.stop();
    await etcd.stop();
  }
}

// ---- fan-out -----------------------------------------------------------------------------------

async function fanout(etcd: EtcdCluster, queries: number): Promise<Record<string, unknown>> {
  const agents = await Promise.all([
    clusterAgent(etcd, 'fanout', 'fan-0'),
    clusterAgent(etcd, 'fanout', 'fan-1', false),
    clusterAgent(etcd, 'fanout', 'fan-2', false),
  ]);
  try {
    await putKey(agents[0]!.port, 'bench/fanout', 'v0');
    const parked = [];
    for (const agent of agents) {
      const seeded = await probe(kvUrl(agent.port, 'bench/fanout'));
      const set = await parkQueries({
        port: agent.port,
        path: `/v1/kv/bench/fanout?index=${seeded.index}&wait=5m`,
        count: queries,
      });
      parked.push(set);
      while ((await parkedOn(agent)) < set.parked) await new Promise((r) => setTimeout(r, 50));
    }
    const t0 = performance.now();
    await putKey(agents[0]!.port, 'bench/fanout', 'v1');
    const settled = await Promise.all(parked.map((set) => set.allSettled(WAKE_TIMEOUT_MS)));
    const perAgent = parked.map((set, i) => {
      const wake = Array.from(set.answeredAt, (at) => at - t0)
        .filter((ms) => Number.isFinite(ms))
        .sort((x, y) => x - y);
      let non200 = 0;
      for (const status of set.status) if (status !== 0 && status !== 200) non200++;
      return {
        agent: i,
        parked: set.parked,
        answered: set.answered,
        failed: set.failed,
        non200,
        firstMs: wake[0],
        lastMs: wake[wake.length - 1],
        complete: settled[i],
      };
    });
    for (const set of parked) for (const socket of set.sockets) socket.destroy();
    return { queriesPerAgent: queries, perAgent, lastMs: Math.max(...perAgent.map((a) => a.lastMs ?? Number.NaN)) };
  } finally {
    await Promise.all(agents.map((a) => a.stop()));
  }
}

// ---- a client agent against a server agent ------------------------------------------------------

const MANAGEMENT = '7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f';

/** An agent of `mesh` (default `client-server`) with ACLs on (default deny), the management token its default; `main`: another build's. */
async function aclAgent(
  etcd: EtcdCluster,
  name: string,
  server: boolean,
  mesh = 'client-server',
  main?: string,
): Promise<ServerProcess> {
  const tokens = { default: MANAGEMENT, ...(server ? { initial_management: MANAGEMENT } : {}) };
  const acl = { acl: { enabled: true, default_policy: 'deny', tokens } };
  return clusterAgent(etcd, mesh, name, server, acl, main);
}

/** Seeds the intentions through the server and waits until the client's view holds them all. */
async function seedMesh(server: ServerProcess, client: ServerProcess): Promise<void> {
  // Set-up, not measured: a commit that met a slow etcd (503) is put again; the puts are idempotent.
  for (let attempt = 1; ; attempt++) {
    try {
      await seedAgent(server.port);
      break;
    } catch (err) {
      if (attempt === 5 || !/ 503 /.test((err as Error).message)) throw err;
    }
  }
  // The client's view holds every intention once its intentions index reaches the server's.
  const seeded = await probe(`http://${LOOPBACK}:${server.port}/v1/connect/intentions`);
  const caught = await fetch(
    `http://${LOOPBACK}:${client.port}/v1/connect/intentions?index=${(seeded.index ?? 1) - 1}&wait=60s`,
  );
  if (Number(caught.headers.get('x-svc-index')) < (seeded.index ?? 0)) throw new Error('client view behind');
  await caught.arrayBuffer();
}

/** Each new service's first leaf, one after the other, the token in the header: ms per leaf, failures counted. */
async function leafRound(
  agent: ServerProcess,
  tag: string,
  leaves: number,
): Promise<{ ms: number[]; failed: number; samples: string[] }> {
  const out = { ms: [] as number[], failed: 0, samples: [] as string[] };
  for (let i = 0; i < leaves; i++) {
    const started = performance.now();
    const res = await fetch(`http://${LOOPBACK}:${agent.port}/v1/agent/connect/ca/leaf/${tag}-${i}`, {
      headers: { 'X-Svc-Token': MANAGEMENT },
    });
    const text = await res.text();
    if (res.status === 200) out.ms.push(performance.now() - started);
    else {
      out.failed++;
      if (out.samples.length < 3) out.samples.push(`${res.status} ${text.slice(0, 120)}`);
    }
  }
  return out;
}

/** Authorize with the management token in the header, as authorizeRps without it. */
async function tokenAuthorizeRps(tool: LoadTool, agent: ServerProcess, args: HttpBenchArgs): Promise<number> {
  const request = {
    url: `http://${LOOPBACK}:${agent.port}/v1/agent/connect/authorize`,
    method: 'POST' as const,
    body: AUTHORIZE_BODY,
    headers: { 'X-Svc-Token': MANAGEMENT },
  };
  const settings = { durationS: args.durationS, connections: args.connections, threads: args.threads };
  if (args.warmupS > 0) await tool.run(request, { ...settings, durationS: args.warmupS });
  return (await tool.run(request, settings)).rps;
}

/** Rounds of two sides, alternating which goes first (`first` in even rounds); per round, each side's result. */
async function alternated<S extends string, T>(
  rounds: number,
  [first, second]: readonly [S, S],
  run: (side: S, round: number) => Promise<T>,
): Promise<Record<S, T>[]> {
  const out: Record<S, T>[] = [];
  for (let r = 0; r < rounds; r++) {
    const [a, b] = r % 2 === 0 ? [first, second] : [second, first];
    const round = { [a]: await run(a, r) } as Record<S, T>;
    round[b] = await run(b, r);
    out.push(round);
  }
  return out;
}

async function withMemoryEtcd<T>(run: (etcd: EtcdCluster) => Promise<T>): Promise<T> {
  const etcd = await startEtcdCluster({ size: 1 });
  try {
    return await run(etcd);
  } finally {
    await etcd.stop();
  }
}

async function clientServerRows(
  tool: LoadTool,
  etcd: EtcdCluster,
  args: ClusterArgs,
): Promise<Record<string, unknown>> {
  const server = await aclAgent(etcd, 'cs-server', true);
  const client = await aclAgent(etcd, 'cs-client', false);
  const agents = { server, client };
  try {
    await seedMesh(server, client);
    for (const side of ['server', 'client'] as const) {
      const warm = await leafRound(agents[side], `warm-${side}`, 20);
      if (warm.failed > 0) throw new Error(`warm-up leaves through the ${side} agent: ${warm.samples.join('; ')}`);
    }

    const authorize = await alternated(args.rounds, ['server', 'client'], async (side, r) => {
      const rps = await tokenAuthorizeRps(tool, agents[side], args);
      process.stderr.write(`  authorize with a token, round ${r + 1}, ${side} agent: ${Math.round(rps)}/s\n`);
      return rps;
    });
    let failedLeaves = 0;
    const leaves = await alternated(args.rounds, ['server', 'client'], async (side, r) => {
      const got = await leafRound(agents[side], `leaf-${side}-${r}`, args.leaves);
      failedLeaves += got.failed;
      const ms = median(got.ms);
      const failed = got.failed === 0 ? '' : `, ${got.failed} failed: ${got.samples.join('; ')}`;
      process.stderr.write(`  leaf round ${r + 1}, ${side} agent: median ${ms.toFixed(2)} ms${failed}\n`);
      return ms;
    });
    return {
      authorize: {
        ratio: median(authorize.map((x) => x.client / x.server)),
        server: median(authorize.map((x) => x.server)),
        client: median(authorize.map((x) => x.client)),
        rounds: authorize,
      },
      leaf: {
        ratio: median(leaves.map((x) => x.client / x.server)),
        serverMedianMs: median(leaves.map((x) => x.server)),
        clientMedianMs: median(leaves.map((x) => x.client)),
        leavesPerRound: args.leaves,
        failed: failedLeaves,
        rounds: leaves,
      },
    };
  } finally {
    await Promise.all([client.stop(), server.stop()]);
  }
}

/**
 * Authorize with a token on a client agent of this build against a client agent of the build at
 * `before`, each build a mesh of its own on one etcd (their rows need not be alike); rounds
 * alternated, per round this / before.
 */
async function clientBuildRows(
  tool: LoadTool,
  etcd: EtcdCluster,
  args: HttpBenchArgs,
  before: string,
): Promise<Record<string, unknown>> {
  const started: ServerProcess[] = [];
  const mesh = async (name: string, main?: string): Promise<ServerProcess> => {
    const server = await aclAgent(etcd, `${name}-server`, true, `builds-${name}`, main);
    started.push(server);
    const client = await aclAgent(etcd, `${name}-client`, false, `builds-${name}`, main);
    started.push(client);
    await seedMesh(server, client);
    return client;
  };
  try {
    const clients = { before: await mesh('before', before), thisBuild: await mesh('this') };
    const rounds = await alternated(args.rounds, ['before', 'thisBuild'], async (side, r) => {
      const rps = await tokenAuthorizeRps(tool, clients[side], args);
      const build = side === 'thisBuild' ? 'this build' : 'the build before';
      process.stderr.write(
        `  authorize with a token on a client agent, round ${r + 1}, ${build}: ${Math.round(rps)}/s\n`,
      );
      return rps;
    });
    return {
      ratio: median(rounds.map((x) => x.thisBuild / x.before)),
      thisBuild: median(rounds.map((x) => x.thisBuild)),
      before: median(rounds.map((x) => x.before)),
      rounds,
    };
  } finally {
    await Promise.all(started.map((a) => a.stop()));
  }
}

// ---- the run -----------------------------------------------------------------------------------

export async function runClusterBench(args: ClusterArgs): Promise<Record<string, unknown>> {
  if (!agentBuilt()) throw new Error(AGENT_MISSING);
  const tool = await pickLoadTool(args.tool);
  // The repository's disk, not tmpfs: the PUT row compares durable writes.
  await mkdir(BENCH_OUT, { recursive: true });
  const etcd = await startEtcdCluster({ size: 1, dataRoot: BENCH_OUT });
  process.stderr.write(
    `cluster bench: etcd ${etcd.endpoints.join(',')}, ${tool.name} -t${args.threads} -c${args.connections}, ${args.durationS}s per row, ${args.rounds} round(s)\n`,
  );
  const only = args.only;
  try {
    const authorize = only.has('authorize') ? await authorizeRows(tool, etcd, args) : undefined;
    const propagation = only.has('propagation') ? await propagationRows(etcd, args) : undefined;
    const put = only.has('put') ? await putRows(tool, etcd, args) : undefined;
    const fan = only.has('fanout') ? await fanout(etcd, args.queries) : undefined;
    const memberDown = only.has('member-down') ? await memberDownRows(tool, args) : undefined;
    // An etcd of their own on tmpfs: these rows time the agents, not the disk's fsync.
    const clientServer = only.has('client-server')
      ? await withMemoryEtcd((e) => clientServerRows(tool, e, args))
      : undefined;
    const before = args.before;
    const clientBuilds =
      only.has('client-server') && before !== undefined
        ? await withMemoryEtcd((e) => clientBuildRows(tool, e, args, before))
        : undefined;
    return { authorize, propagation, put, memberDown, fanout: fan, clientServer, clientBuilds };
  } finally {
    await etcd.stop();
  }
}

// The result is the loose record written to the JSON file; its rows are read here as they were built.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function report(r: Record<string, any>): string {
  const cs = r['clientServer'];
  const clientServer =
    cs === undefined
      ? []
      : [
          `authorize with a token, client agent / server agent: ${cs.authorize.ratio.toFixed(3)}x ` +
            `(${Math.round(cs.authorize.client)} / ${Math.round(cs.authorize.server)} req/s, medians of ${cs.authorize.rounds.length} rounds)`,
          `leaf issuance (a new service's first leaf, one at a time), client agent / server agent: ${cs.leaf.ratio.toFixed(2)}x ` +
            `(median ${round(cs.leaf.clientMedianMs)} / ${round(cs.leaf.serverMedianMs)} ms, ` +
            `${cs.leaf.leavesPerRound} leaves per round, ` +
            `${cs.leaf.failed} failed)`,
        ];
  const cb = r['clientBuilds'];
  if (cb !== undefined)
    clientServer.push(
      `authorize with a token on a client agent, this build / the build before: ${cb.ratio.toFixed(3)}x ` +
        `(${Math.round(cb.thisBuild)} / ${Math.round(cb.before)} req/s, medians of ${cb.rounds.length} rounds)`,
    );
  if (r['authorize'] === undefined || r['propagation'] === undefined) return clientServer.join('\n');
  const lat = (name: string, l: Latencies, target: string): Cell[] => [
    name,
    round(l.p50Ms),
    round(l.p99Ms),
    round(l.maxMs),
    l.count,
    target,
  ];
  const rows: Cell[][] = [
    lat(
      'propagation: KV write on A → blocking KV read on B',
      r['propagation'].kv,
      `p99 <= 50 ms ${r['propagation'].kv.p99Ms <= 50 ? 'ok' : 'MISS'}`,
    ),
    lat(
      'propagation: intention write on A → blocking list on B',
      r['propagation'].intention,
      `p99 <= 50 ms ${r['propagation'].intention.p99Ms <= 50 ? 'ok' : 'MISS'}`,
    ),
    lat("floor: bare etcd3 put → second client's watch", r['propagation'].etcdFloor, ''),
  ];
  const overFloor = r['propagation'].overFloor;
  const down = r['memberDown'];
  const out = [
    `authorize, cluster agent / -dev agent: ${r['authorize'].ratio.toFixed(3)}x (rounds ${r['authorize'].ratios.map((x: number) => x.toFixed(3)).join(', ')}; target >= 0.95x)`,
    `KV PUT, cluster agent / bare etcd3: ${r['put'].ratio.toFixed(3)}x (rounds ${r['put'].ratios.map((x: number) => x.toFixed(3)).join(', ')}; target >= 0.5x)`,
    `propagation / etcd floor, p50 and p99: KV ${overFloor['kv'].p50.toFixed(2)}x ${overFloor['kv'].p99.toFixed(2)}x, ` +
      `intention ${overFloor['intention'].p50.toFixed(2)}x ${overFloor['intention'].p99.toFixed(2)}x ` +
      `(medians over ${r['propagation'].rounds.length} round(s))`,
    formatTable(['', 'p50 ms', 'p99 ms', 'max ms', 'writes', 'target'], rows),
    `KV PUT through an agent, one etcd follower of three down / all up: writes/s ${down['rpsRatio'].toFixed(3)}x ` +
      `(${Math.round(down['up'].rps)} → ${Math.round(down['down'].rps)}/s), p99 ${down['p99Ratio'].toFixed(2)}x ` +
      `(${round(down['up'].p99Ms)} → ${round(down['down'].p99Ms)} ms), failed requests ${down['failed']}`,
    `fan-out: 3 agents x ${r['fanout'].queriesPerAgent} parked queries, one write: last answer after ${round(r['fanout'].lastMs)} ms`,
    formatTable(
      ['agent', 'parked', 'answered', 'failed', 'non-200', 'first ms', 'last ms'],
      r['fanout'].perAgent.map((x: Record<string, number>) => [
        x['agent'],
        x['parked'],
        x['answered'],
        x['failed'],
        x['non200'],
        round(x['firstMs'] ?? NaN),
        round(x['lastMs'] ?? NaN),
      ]),
    ),
  ];
  return [...out, ...clientServer].join('\n');
}

/** Runs the bench with these command-line flags, prints its tables and writes its JSON. */
export async function runClusterBenchMain(argv: readonly string[]): Promise<void> {
  const result = await runClusterBench(parseArgs(argv));
  process.stdout.write(`${report(result)}\n`);
  process.stderr.write(`written: ${await writeJson('cluster', result)}\n`);
}

if (isEntryPoint(import.meta.url)) runMain(() => runClusterBenchMain(process.argv.slice(2)));
