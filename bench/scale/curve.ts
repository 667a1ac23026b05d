// The scale curve (issue 46 item 2): for each N, one run of the harness (harness.ts) measuring what
// the agents cost etcd and each other, idle and under a workload, and how long a change takes to
// reach every view. Each figure is printed beside the host's load (the machine is shared), and the
// whole run goes to .bench-out/scale.json. docs/scale.md reads the figures.
//
//   node dist/bench/scale/curve.js --agents 100,300,1000 [--hosts 4] [--grpc-proxy] [--probe-interval 500ms]
//     [--member-ttl 10s] [--window 20] [--changes 10] [--flips-per-second 0] [--kv-per-second 0]
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { readCpuSeconds, readMachineBusySeconds, readRssKiB } from '../support/proc-stats.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { formatTable, round, writeJson, type Cell } from '../support/report.js';
import { quantileSorted } from '../support/stats.js';
import { ratesBetween } from './etcd-metrics.js';
import { ScaleHarness, type Propagation, type ScaleOptions } from './harness.js';

export interface CurveArgs {
  readonly agents: readonly number[];
  readonly hosts: number;
  readonly grpcProxy: boolean;
  readonly probeInterval: string;
  readonly memberTtl: string;
  /** Seconds of each measured window (idle, then under the workload). */
  readonly windowS: number;
  /** Intention writes and check flips timed to every view, one after another. */
  readonly changes: number;
  readonly flipsPerSecond: number;
  readonly kvPerSecond: number;
}

export function parseCurveArgs(argv: readonly string[]): CurveArgs {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      agents: { type: 'string', default: '100,300,1000' },
      hosts: { type: 'string', default: '4' },
      'grpc-proxy': { type: 'boolean', default: false },
      'probe-interval': { type: 'string', default: '500ms' },
      'member-ttl': { type: 'string', default: '10s' },
      window: { type: 'string', default: '20' },
      changes: { type: 'string', default: '10' },
      'flips-per-second': { type: 'string', default: '0' },
      'kv-per-second': { type: 'string', default: '0' },
    },
  });
  return {
    agents: values.agents.split(',').map(Number),
    hosts: Number(values.hosts),
    grpcProxy: values['grpc-proxy'],
    probeInterval: values['probe-interval'],
    memberTtl: values['member-ttl'],
    windowS: Number(values.window),
    changes: Number(values.changes),
    flipsPerSecond: Number(values['flips-per-second']),
    kvPerSecond: Number(values['kv-per-second']),
  };
}

/** Lag quantiles over every view of every timed change; `missed`: views that never held. */
export interface LagFigures {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly missed: number;
}

export function lagFigures(runs: readonly Propagation[]): LagFigures {
  const all = runs.flatMap((r) => r.lags);
  const seen = all.filter((l): l is number => l !== undefined).sort((a, b) => a - b);
  return {
    p50: quantileSorted(seen, 0.5),
    p99: quantileSorted(seen, 0.99),
    max: seen.at(-1) ?? Number.NaN,
    missed: all.length - seen.length,
  };
}

/** What the machine did besides our processes over a window, and its load average. */
function hostLoad(pids: readonly number[]): () => { load1: number; otherCores: number } {
  const t0 = performance.now();
  const busy0 = readMachineBusySeconds();
  const ours0 = pids.reduce((s, p) => s + (readCpuSeconds(p) ?? 0), 0);
  return () => {
    const elapsed = (performance.now() - t0) / 1000;
    const ours = pids.reduce((s, p) => s + (readCpuSeconds(p) ?? 0), 0) - ours0;
    const machine = readMachineBusySeconds() - busy0;
    return { load1: loadavg()[0] ?? 0, otherCores: Math.max(0, (machine - ours) / elapsed) };
  };
}

/** CPU cores each role's processes used over a window (from /proc). */
function roleCpu(harness: ScaleHarness): () => Record<string, number> {
  const t0 = performance.now();
  const start = new Map(harness.processes.map((p) => [p.pid, readCpuSeconds(p.pid) ?? 0]));
  return () => {
    const elapsed = (performance.now() - t0) / 1000;
    const byRole: Record<string, number> = {};
    for (const p of harness.processes) {
      const used = (readCpuSeconds(p.pid) ?? 0) - (start.get(p.pid) ?? 0);
      byRole[p.role] = (byRole[p.role] ?? 0) + used / elapsed;
    }
    return byRole;
  };
}

export async function measureOne(n: number, args: CurveArgs): Promise<Record<string, unknown>> {
  const options: ScaleOptions = {
    agents: n,
    hosts: args.hosts,
    grpcProxy: args.grpcProxy,
    probeInterval: args.probeInterval,
    memberTtl: args.memberTtl,
  };
  const t0 = performance.now();
  const startLoad = hostLoad([]);
  const harness = await ScaleHarness.start(options);
  try {
    const pids = (): number[] => harness.processes.map((p) => p.pid);
    const joined = await harness.awaitAllNodes(600_000);
    const startup = { seconds: (performance.now() - t0) / 1000, ...startLoad(), lag: lagFigures([joined]) };
    log(n, `all ${harness.names.length} nodes in every view after ${startup.seconds.toFixed(1)} s`);

    // Idle: only the agents' own upkeep (keepalives, probes, anti-entropy).
    const idle = await window(harness, args.windowS, pids);
    log(n, `idle: etcd ${idle.etcd.cpuPerSecond.toFixed(3)} cores, load ${idle.load.load1.toFixed(1)}`);

    // Under the workload: flips and KV writes at their rates while intention writes and flips are timed.
    await harness.churnChecks(args.flipsPerSecond);
    const kv = startKv(harness, args.kvPerSecond);
    const busyWindow = window(harness, args.windowS, pids);
    const intentions: Propagation[] = [];
    const flips: Propagation[] = [];
    const changeLoad = hostLoad(pids());
    const instance = harness.instanceNames[0] as string;
    for (let i = 0; i < args.changes; i++) {
      intentions.push(
        await harness.intentionWrite(`scale-src-${i}`, 'scale-dst', i % 2 === 0 ? 'allow' : 'deny', 120_000),
      );
      flips.push(await harness.checkFlip(instance, 0, i % 2 === 0 ? 'warning' : 'passing', 120_000));
    }
    const changesLoad = changeLoad();
    const busy = await busyWindow;
    kv.stop();
    await harness.churnChecks(0);
    log(n, `busy: etcd ${busy.etcd.cpuPerSecond.toFixed(3)} cores, load ${busy.load.load1.toFixed(1)}`);

    // A crash: the last host killed; its nodes turn critical in every other view.
    const ttlLoad = hostLoad(pids());
    const killed = await harness.killHost(harness.hostCount - 1, 600_000);
    const crash = { nodes: killed.nodes.length, lag: lagFigures([killed]), ...ttlLoad() };

    const leaveStarted = performance.now();
    await harness.leaveAll();
    const leaveSeconds = (performance.now() - leaveStarted) / 1000;
    const after = await harness.etcdSample();
    return {
      n,
      options,
      startup,
      idle,
      busy,
      intention: lagFigures(intentions),
      flip: lagFigures(flips),
      changesLoad,
      crash,
      leave: { seconds: leaveSeconds, watchersAfter: after.watchers, baseline: harness.baseline },
    };
  } finally {
    await harness.stop();
  }
}

interface Window {
  readonly etcd: ReturnType<typeof ratesBetween>;
  readonly cpu: Record<string, number>;
  readonly load: { load1: number; otherCores: number };
  /** Heap per instance held (bytes), over every host; and the hosts' RSS per instance. */
  readonly heapPerInstance: number;
  readonly rssPerInstance: number;
  readonly loopDelayP99Ms: number;
  readonly viewEventsPerSecond: number;
  readonly realAgentRssMiB: number;
  readonly flips: number;
}

async function window(harness: ScaleHarness, seconds: number, pids: () => number[]): Promise<Window> {
  const e0 = await harness.etcdSample();
  const h0 = await harness.hostStats();
  const cpu = roleCpu(harness);
  const load = hostLoad(pids());
  await sleep(seconds * 1000);
  const e1 = await harness.etcdSample();
  const h1 = await harness.hostStats();
  const instances = h1.reduce((s, h) => s + h.instances, 0);
  const events = (hs: typeof h0): number => hs.reduce((s, h) => s + h.viewEvents, 0);
  const flips = (hs: typeof h0): number => hs.reduce((s, h) => s + h.flips, 0);
  const real = [...harness.servers, ...harness.realClients].map((a) => readRssKiB(a.pid) ?? 0);
  return {
    etcd: ratesBetween(e0, e1),
    cpu: cpu(),
    load: load(),
    heapPerInstance: h1.reduce((s, h) => s + h.heapUsed - h.heapBefore, 0) / Math.max(1, instances),
    rssPerInstance: h1.reduce((s, h) => s + h.rss, 0) / Math.max(1, instances),
    loopDelayP99Ms: Math.max(0, ...h1.map((h) => h.loopDelayP99Ms)),
    viewEventsPerSecond: (events(h1) - events(h0)) / ((e1.at - e0.at) / 1000),
    realAgentRssMiB: real.reduce((s, r) => s + r, 0) / 1024 / Math.max(1, real.length),
    flips: flips(h1) - flips(h0),
  };
}

/** KV writes through the servers at `perSecond` until stopped; failures are counted, not thrown. */
function startKv(harness: ScaleHarness, perSecond: number): { stop(): void; failures(): number } {
  let failed = 0;
  let i = 0;
  const timer =
    perSecond > 0
      ? setInterval(() => void harness.kvWrite(`scale/${i++ % 1000}`, `v${i}`).catch(() => failed++), 1000 / perSecond)
      : undefined;
  return { stop: () => clearInterval(timer), failures: () => failed };
}

function log(n: number, line: string): void {
  process.stderr.write(`[N=${n}] ${line}\n`);
}

function table(results: readonly Record<string, unknown>[]): string {
  const rows: Cell[][] = results.map((r) => {
    const x = r as unknown as {
      n: number;
      startup: { seconds: number; load1: number };
      idle: Window;
      busy: Window;
      intention: LagFigures;
      flip: LagFigures;
      crash: { lag: LagFigures; load1: number };
    };
    return [
      x.n,
      round(x.startup.seconds),
      round(x.idle.etcd.cpuPerSecond),
      round(x.idle.etcd.rssBytes / 2 ** 20),
      round(x.idle.etcd.watchers),
      round(x.idle.etcd.keepAlivesPerSecond),
      round(x.idle.etcd.statusPerSecond),
      round(x.busy.etcd.cpuPerSecond),
      round(x.busy.etcd.eventsPerSecond),
      round(x.idle.heapPerInstance / 1024),
      round(x.intention.p50),
      round(x.intention.p99),
      round(x.intention.max),
      round(x.flip.p50),
      round(x.flip.p99),
      round(x.flip.max),
      round(x.crash.lag.max / 1000),
      round(x.idle.load.load1),
      round(x.busy.load.load1),
    ];
  });
  return formatTable(
    [
      'N',
      'start s',
      'etcd cpu idle',
      'etcd MiB',
      'watchers',
      'keepalive/s',
      'status/s',
      'etcd cpu busy',
      'events/s busy',
      'heap KiB/inst',
      'int p50',
      'int p99',
      'int max',
      'flip p50',
      'flip p99',
      'flip max',
      'crash s',
      'load idle',
      'load busy',
    ],
    rows,
  );
}

async function main(): Promise<void> {
  const args = parseCurveArgs(process.argv.slice(2));
  const results: Record<string, unknown>[] = [];
  for (const n of args.agents) {
    results.push(await measureOne(n, args));
    process.stdout.write(`${table(results)}\n`);
  }
  const path = await writeJson(args.grpcProxy ? 'scale-grpc-proxy' : 'scale', { args, results });
  process.stdout.write(`written to ${path}\n`);
}

if (isEntryPoint(import.meta.url)) runMain(main);
