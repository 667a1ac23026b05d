// Authorize beside 10,000 HTTP checks: a -dev agent (uWS on loopback) running 10,000 HTTP checks
// every 10 s against a loopback server, all passing, against the same build's agent without checks,
// one agent at a time, fresh each round and the order alternated, so the ratio holds the checks'
// whole cost on this host (the check-runner thread and the probe target share the 2 cores with the
// agent and wrk; the main thread's own share is http/checks-cpu.ts's figure). Authorize as the
// cluster bench's authorize rows send it: 10,000 intentions, one body. The figure is the median of
// the per-round ratios, with each side's median req/s and p99 and the load average of each round.
// Run: node dist/bench/sizing/authorize-checks.js [--duration 10] [--warmup 2] [--rounds 3]
import { setTimeout as sleep } from 'node:timers/promises';
import { AGENT_MISSING, agentBuilt, startAgent } from '../support/agent.js';
import { parseHttpBenchArgs, type HttpBenchArgs } from '../support/args.js';
import type { LoadTool } from '../support/load.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { pickLoadTool } from '../support/pick-tool.js';
import { formatTable, round, writeJson } from '../support/report.js';
import { median } from '../support/stats.js';
import { seedAgent } from './authorize.js';
import { loadavg } from './catalog.js';
import { probeTarget, registerChecks, untilAllPass } from './checks-cpu.js';
import { authorizeRps } from './cluster.js';

const CHECKS = 10_000;
/** The checks' interval: once every check passes, one more goes by before measuring (runs spread out). */
const SETTLE_MS = 10_000;

type Side = 'with checks' | 'without checks';

interface Sample {
  readonly rps: number;
  readonly p99Ms: number;
  /** Everything on the machine but the agent, wrk's core included. */
  readonly otherPct: number;
  /** Probes the target answered per second, and this process's CPU (the target's, mostly), over the row. */
  readonly probesPerS: number;
  readonly targetCpuPct: number;
  readonly loadavg: string;
}

async function measureSide(
  side: Side,
  tool: LoadTool,
  args: HttpBenchArgs,
  target: Awaited<ReturnType<typeof probeTarget>>,
): Promise<Sample> {
  const agent = await startAgent('dev');
  try {
    await seedAgent(agent.port);
    if (side === 'with checks') {
      await registerChecks(agent, CHECKS, target.url);
      await untilAllPass(agent, CHECKS);
      await sleep(SETTLE_MS);
    }
    const served0 = target.served();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const result = await authorizeRps(tool, agent, args);
    const seconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    return {
      ...result,
      probesPerS: (target.served() - served0) / seconds,
      targetCpuPct: (cpu.user + cpu.system) / 1e4 / seconds,
      loadavg: loadavg(),
    };
  } finally {
    await agent.stop();
  }
}

export async function runAuthorizeChecksBench(argv: readonly string[]): Promise<Record<string, unknown>> {
  if (!agentBuilt()) throw new Error(AGENT_MISSING);
  const args = parseHttpBenchArgs(argv);
  const tool = await pickLoadTool(args.tool);
  const rounds = Math.max(3, args.rounds);
  const loadBefore = loadavg();
  process.stderr.write(`authorize beside checks: ${tool.name} -c${args.connections}, ${rounds} rounds\n`);
  const target = await probeTarget();
  const samples: Record<Side, Sample[]> = { 'with checks': [], 'without checks': [] };
  const ratios: { rps: number; p99: number }[] = [];
  try {
    for (let r = 0; r < rounds; r++) {
      const order: Side[] = r % 2 === 0 ? ['with checks', 'without checks'] : ['without checks', 'with checks'];
      for (const side of order) {
        const sample = await measureSide(side, tool, args, target);
        samples[side].push(sample);
        process.stderr.write(
          `  round ${r + 1} ${side}: ${Math.round(sample.rps)} req/s, p99 ${sample.p99Ms} ms, ` +
            `${Math.round(sample.probesPerS)} probes/s, load ${sample.loadavg}\n`,
        );
      }
      const [w, o] = [samples['with checks'][r], samples['without checks'][r]];
      ratios.push({ rps: (w?.rps ?? NaN) / (o?.rps ?? NaN), p99: (w?.p99Ms ?? NaN) / (o?.p99Ms ?? NaN) });
    }
  } finally {
    target.server.close();
  }
  const loadAfter = loadavg();
  const summary = (side: Side) => {
    const s = samples[side];
    return {
      side,
      rps: median(s.map((x) => x.rps)),
      p99Ms: median(s.map((x) => x.p99Ms)),
      otherPct: median(s.map((x) => x.otherPct)),
      probesPerS: median(s.map((x) => x.probesPerS)),
      targetCpuPct: median(s.map((x) => x.targetCpuPct)),
      roundsRps: s.map((x) => Math.round(x.rps)),
    };
  };
  const rows = [summary('with checks'), summary('without checks')];
  const ratio = { rps: median(ratios.map((x) => x.rps)), p99: median(ratios.map((x) => x.p99)) };
  const perRound = (key: 'rps' | 'p99'): string => ratios.map((x) => x[key].toFixed(2)).join(', ');
  const table = formatTable(
    ['agent', 'req/s', 'p99 ms', 'rounds req/s', 'probes/s', 'target cpu%', 'other cpu%'],
    rows.map((x) => [
      x.side === 'with checks' ? `${CHECKS.toLocaleString('en-US')} HTTP checks every 10s` : 'no checks',
      x.rps,
      x.p99Ms,
      x.roundsRps.join(' '),
      x.probesPerS,
      x.targetCpuPct,
      x.otherPct,
    ]),
  );
  process.stdout.write(
    `\nauthorize beside ${CHECKS} passing HTTP checks against the agent without checks ` +
      `(${tool.name} -c${args.connections}, median of ${rounds} alternated rounds)\n${table}\n` +
      `with / without, medians of the rounds' ratios: req/s ${ratio.rps.toFixed(3)}x (${perRound('rps')}), ` +
      `p99 ${ratio.p99.toFixed(2)}x (${perRound('p99')})\n` +
      `/proc/loadavg before: ${loadBefore}; after: ${loadAfter}\n`,
  );
  const report = {
    tool: tool.name,
    settings: args,
    checks: CHECKS,
    rounds,
    ratio: { rps: round(ratio.rps), p99: round(ratio.p99) },
    ratios,
    rows: rows.map((x) => ({ ...x, rps: round(x.rps), p99Ms: round(x.p99Ms) })),
    samples,
    loadavg: { before: loadBefore, after: loadAfter },
  };
  process.stdout.write(`wrote ${await writeJson('authorize-checks', report)}\n`);
  return report;
}

if (isEntryPoint(import.meta.url)) runMain(async () => void (await runAuthorizeChecksBench(process.argv.slice(2))));
