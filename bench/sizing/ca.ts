// The CA over HTTP, every row in one run with one load tool (wrk):
// - cached GETs: the agent's roots and a cached leaf against a bare-uWS ceiling answering bodies
//   of the same sizes (target >= 0.7x each);
// - authorize p99 idle, then while waves of 1,000 distinct services request their first leaf at
//   once (target: see bench/README.md): back to back for the whole measured run, and one wave per
//   1 s window, repeated and interleaved with two floors measured the same way: the same 1,000
//   services again (leaves cached: everything but signing) and 1,000 requests that need no work
//   at all (404s), which is what a burst of 1,000 requests costs before the CA does anything.
// Run: node dist/bench/sizing/ca.js [--duration 10] [--warmup 2] [--quiet-wait 15]
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AGENT_MISSING, agentBuilt, startAgent } from '../support/agent.js';
import { parseHttpBenchArgs, type HttpBenchArgs } from '../support/args.js';
import { spawnServer, type ServerProcess } from '../support/child.js';
import { probe } from '../support/kv-client.js';
import { firstLeafStorm, requestStorm } from '../support/request-storm.js';
import type { LoadRequest, LoadResult, LoadTool } from '../support/load.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { BENCH_OUT } from '../support/paths.js';
import { pickLoadTool } from '../support/pick-tool.js';
import { freePort, LOOPBACK } from '../support/ports.js';
import { readMainThreadSched, startCpuWatch } from '../support/proc-stats.js';
import { waitForQuiet } from '../support/quiet.js';
import { formatTable, round, writeJson } from '../support/report.js';
import { median } from '../support/stats.js';
import { AUTHORIZE_BODY } from './authorize.js';

const CEILING = fileURLToPath(new URL('./ca-ceiling.js', import.meta.url));
const MIN_GET_RATIO = 0.7;
/** The back-to-back row's bound (p99 during waves over p99 idle). */
const MAX_P99_RISE = 2;
/**
 * The one-wave target, restated for a shared 2-core machine whose idle p99 alone swings: the median
 * of the per-run ratios (each wave's p99 over the idle window beside it) at most 2.5x.
 */
const MAX_WAVE_RATIO_MEDIAN = 2.5;
/** Services per wave of first-leaf requests, all sent at once. */
export const WAVE = 1000;
/**
 * The window of the one-wave rows, about as long as a wave takes while wrk saturates the agent.
 * Back-to-back waves fill a fixed window with more waves the faster issuance is, so they also
 * measure issuance speed; one wave per window measures what one burst costs authorize.
 */
const WAVE_WINDOW_S = 1;
/**
 * One 1 s window swings by 2-3x between identical runs on a shared 2-core VM (a GC pause or a
 * descheduled wrk is a large share of it), so the one-wave rows are repeated, interleaved with
 * their idle window and floors, and each row reports the run with the median p99. With 5 repeats
 * that median still ranged 1.55-3.17x for one build; 9 cost a minute more.
 */
const WAVE_REPEATS = 9;

interface Row {
  readonly scenario: string;
  readonly result: LoadResult;
  readonly serverCpuPct: number;
  readonly otherCpuPct: number;
  /**
   * Milliseconds the server's event loop was runnable but waited for a CPU during the row: what
   * other threads (wrk, the storm client, the agent's own) and the hypervisor took from it.
   */
  readonly serverWaitMs: number;
  readonly bodyBytes?: number;
  ratio?: number;
  vs?: string;
  target?: string;
  note?: string;
}

// The rate limit would turn most of a 1,000-service wave into 429s (Consul's default is 50/s):
// the storm measures issuance itself, so the bench agent runs without it.
export const AGENT_CONFIG = { connect: { ca_config: { csr_max_per_second: 0 } } };

// As in kv.ts: a row during which other jobs took over a tenth of a core is measured again, at
// most twice, keeping the quietest sample (the CPU of this process, which runs the storm client,
// does not count as other).
const NOISY_OTHER_CPU_PCT = 10;
const MAX_NOISY_RETRIES = 2;

async function measure(
  tool: LoadTool,
  pid: number,
  request: LoadRequest,
  args: HttpBenchArgs,
  during?: () => { stop(): Promise<string> },
): Promise<Omit<Row, 'scenario'> & { note?: string }> {
  let sample = await measureOnce(tool, pid, request, args, during);
  for (let retry = 1; retry <= MAX_NOISY_RETRIES && sample.otherCpuPct > NOISY_OTHER_CPU_PCT; retry++) {
    process.stderr.write(
      `    other jobs took ${sample.otherCpuPct.toFixed(0)}% CPU; measuring again (${retry}/${MAX_NOISY_RETRIES})\n`,
    );
    const again = await measureOnce(tool, pid, request, args, during);
    if (again.otherCpuPct < sample.otherCpuPct) sample = again;
  }
  return sample;
}

async function measureOnce(
  tool: LoadTool,
  pid: number,
  request: LoadRequest,
  args: HttpBenchArgs,
  during?: () => { stop(): Promise<string> },
): Promise<Omit<Row, 'scenario'> & { note?: string }> {
  const settings = { durationS: args.durationS, connections: args.connections, threads: args.threads };
  if (args.quietWaitS > 0 && !(await waitForQuiet(args.quietWaitS * 1000)))
    process.stderr.write(`    machine still busy after ${args.quietWaitS}s; measuring anyway\n`);
  if (args.warmupS > 0) await tool.run(request, { ...settings, durationS: args.warmupS });
  const cpu = startCpuWatch(pid);
  const waited0 = readMainThreadSched(pid)?.waitMs ?? Number.NaN;
  const side = during?.();
  const result = await tool.run(request, settings);
  const serverWaitMs = (readMainThreadSched(pid)?.waitMs ?? Number.NaN) - waited0;
  const note = await side?.stop();
  const { serverPct, otherPct } = cpu();
  const sample = { result, serverCpuPct: serverPct, otherCpuPct: otherPct, serverWaitMs };
  return note === undefined ? sample : { ...sample, note };
}

type Sample = Omit<Row, 'scenario'>;

/**
 * Authorize over 1 s windows, WAVE_REPEATS times: idle, during one wave of first leaves, during
 * the same services' second wave (cached leaves) and during a wave of 404s. Each row is the run
 * with the median p99; ratios are against the idle windows' median p99, and the floors show how
 * much of the first-leaf wave's rise any burst of WAVE requests causes on this machine.
 */
async function oneWaveRows(
  tool: LoadTool,
  pid: number,
  port: number,
  authorize: LoadRequest,
  args: HttpBenchArgs,
): Promise<Row[]> {
  const window = { ...args, durationS: WAVE_WINDOW_S };
  const samples: Record<'idle' | 'first' | 'cached' | 'noWork', Sample[]> = {
    idle: [],
    first: [],
    cached: [],
    noWork: [],
  };
  for (let run = 1; run <= WAVE_REPEATS; run++) {
    process.stderr.write(
      `  authorize over ${WAVE_WINDOW_S} s windows, run ${run}/${WAVE_REPEATS}: idle, first leaves, cached leaves, 404s ...\n`,
    );
    const names: string[] = [];
    samples.idle.push(await measure(tool, pid, authorize, window));
    samples.first.push(await measure(tool, pid, authorize, window, firstLeafStorm(port, WAVE, 1, names)));
    const again = names.slice(-WAVE);
    samples.cached.push(
      await measure(
        tool,
        pid,
        authorize,
        window,
        requestStorm(port, WAVE, (_, i) => `/v1/agent/connect/ca/leaf/${again[i] ?? 'web'}`, 1),
      ),
    );
    samples.noWork.push(
      await measure(
        tool,
        pid,
        authorize,
        window,
        requestStorm(port, WAVE, () => '/v1/no-such-endpoint', 1),
      ),
    );
  }
  const medianRun = (runs: readonly Sample[]): Sample => {
    const byP99 = [...runs].sort((a, b) => a.result.p99Ms - b.result.p99Ms);
    return byP99[Math.floor(byP99.length / 2)] as Sample;
  };
  const idle = medianRun(samples.idle);
  const label = `${WAVE_WINDOW_S} s window, median p99 of ${WAVE_REPEATS}`;
  const waits = (runs: readonly Sample[]): string =>
    `event loop waited for a CPU ${runs.map((r) => r.serverWaitMs.toFixed(0)).join(' ')} ms per run`;
  const rows: Row[] = [{ scenario: `agent authorize, idle, ${label}`, ...idle, note: waits(samples.idle) }];
  const during = [
    ['first', `one wave of ${WAVE} first leaves`, true],
    ['cached', `the same ${WAVE} services again (cached leaves; floor)`, false],
    ['noWork', `${WAVE} requests needing no work (404s; floor)`, false],
  ] as const;
  for (const [key, what, targeted] of during) {
    const runs = samples[key];
    const row: Row = { scenario: `agent authorize, ${what}, ${label}`, ...medianRun(runs) };
    row.ratio = row.result.p99Ms / idle.result.p99Ms;
    row.vs = 'p99 / idle window p99';
    const perRun = runs.map((r, i) => r.result.p99Ms / (samples.idle[i] as Sample).result.p99Ms);
    row.note = `${row.note ?? ''}; per-run ratios ${perRun.map((r) => r.toFixed(2)).join(' ')} (median ${median(perRun).toFixed(2)}); ${waits(runs)}`;
    const perRunMedian = median(perRun);
    if (targeted)
      row.target = `per-run median <=${MAX_WAVE_RATIO_MEDIAN}x ${perRunMedian <= MAX_WAVE_RATIO_MEDIAN ? 'ok' : 'MISS'}`;
    rows.push(row);
  }
  return rows;
}

export async function runCaBench(args: HttpBenchArgs): Promise<Row[]> {
  if (!agentBuilt()) {
    process.stdout.write(`skipped ca bench: ${AGENT_MISSING}\n`);
    return [];
  }
  const tool = await pickLoadTool(args.tool);
  const settings = `${tool.name} ${tool.version}, -t${args.threads} -c${args.connections}, ${args.warmupS}s warm-up + ${args.durationS}s per row`;
  process.stderr.write(`ca bench: ${settings}\n`);
  await mkdir(BENCH_OUT, { recursive: true });
  const configFile = join(BENCH_OUT, 'ca-bench-config.json');
  await writeFile(configFile, JSON.stringify(AGENT_CONFIG));

  const rows: Row[] = [];
  const agent = await startAgent('dev', ['-config-file', configFile]);
  let ceiling: ServerProcess | undefined;
  try {
    const base = `http://${LOOPBACK}:${agent.port}`;
    const roots = await probe(`${base}/v1/agent/connect/ca/roots`);
    await probe(`${base}/v1/agent/connect/ca/leaf/web`);
    const leaf = await probe(`${base}/v1/agent/connect/ca/leaf/web`);
    if (roots.status !== 200 || leaf.status !== 200)
      throw new Error(`agent answered roots ${roots.status}, leaf ${leaf.status}: ${leaf.body.slice(0, 200)}`);

    const ceilingPort = await freePort();
    ceiling = await spawnServer({
      name: 'ca ceiling (bare uWS)',
      args: [CEILING, String(ceilingPort), String(roots.bodyBytes), String(leaf.bodyBytes)],
      port: ceilingPort,
    });
    for (const [id, path, bytes] of [
      ['ceiling GET roots-sized', '/roots', roots.bodyBytes],
      ['ceiling GET leaf-sized', '/leaf', leaf.bodyBytes],
    ] as const) {
      process.stderr.write(`  ${id} ...\n`);
      const check = await probe(`http://${LOOPBACK}:${ceilingPort}${path}`);
      rows.push({
        scenario: id,
        bodyBytes: check.bodyBytes,
        ...(await measure(tool, ceiling.pid, { url: `http://${LOOPBACK}:${ceilingPort}${path}`, method: 'GET' }, args)),
      });
      if (check.bodyBytes !== bytes) throw new Error(`ceiling body ${check.bodyBytes} B, agent ${bytes} B`);
    }
    await ceiling.stop();
    ceiling = undefined;

    const gets = [
      [
        'agent GET /v1/agent/connect/ca/roots (HIT)',
        '/v1/agent/connect/ca/roots',
        roots.bodyBytes,
        'ceiling GET roots-sized',
      ],
      [
        'agent GET /v1/agent/connect/ca/leaf/web (cached)',
        '/v1/agent/connect/ca/leaf/web',
        leaf.bodyBytes,
        'ceiling GET leaf-sized',
      ],
    ] as const;
    for (const [id, path, bytes, vs] of gets) {
      process.stderr.write(`  ${id} ...\n`);
      const row: Row = {
        scenario: id,
        bodyBytes: bytes,
        ...(await measure(tool, agent.pid, { url: `${base}${path}`, method: 'GET' }, args)),
      };
      const reference = rows.find((r) => r.scenario === vs);
      if (reference !== undefined) {
        row.ratio = row.result.rps / reference.result.rps;
        row.vs = vs;
        row.target = `>=${MIN_GET_RATIO}x ${row.ratio >= MIN_GET_RATIO ? 'ok' : 'MISS'}`;
      }
      rows.push(row);
    }

    const authorize: LoadRequest = { url: `${base}/v1/agent/connect/authorize`, method: 'POST', body: AUTHORIZE_BODY };
    const check = await probe(authorize.url, { method: 'POST', body: AUTHORIZE_BODY });
    if (check.status !== 200) throw new Error(`authorize answered ${check.status}: ${check.body.slice(0, 200)}`);
    process.stderr.write('  authorize idle ...\n');
    const idle: Row = { scenario: 'agent authorize, idle', ...(await measure(tool, agent.pid, authorize, args)) };
    rows.push(idle);
    process.stderr.write(`  authorize during first-leaf waves of ${WAVE} ...\n`);
    const storm: Row = {
      scenario: `agent authorize, ${WAVE} services' first leaves at once, repeated`,
      ...(await measure(tool, agent.pid, authorize, args, firstLeafStorm(agent.port, WAVE))),
    };
    storm.ratio = storm.result.p99Ms / idle.result.p99Ms;
    storm.vs = 'p99 / idle p99';
    storm.target = `<${MAX_P99_RISE}x ${storm.ratio < MAX_P99_RISE ? 'ok' : 'MISS'}`;
    rows.push(storm);

    rows.push(...(await oneWaveRows(tool, agent.pid, agent.port, authorize, args)));
  } finally {
    await ceiling?.stop();
    await agent.stop();
  }

  const table = formatTable(
    [
      'scenario',
      'req/s',
      'p50 ms',
      'p99 ms',
      'ratio',
      'vs',
      'srv cpu%',
      'srv wait ms',
      'other cpu%',
      'body B',
      'err',
      'non2xx',
      'target',
    ],
    rows.map((r) => [
      r.scenario,
      r.result.rps,
      r.result.p50Ms,
      r.result.p99Ms,
      r.ratio,
      r.vs,
      r.serverCpuPct,
      r.serverWaitMs,
      r.otherCpuPct,
      r.bodyBytes,
      r.result.errors,
      r.result.non2xx,
      r.target,
    ]),
  );
  process.stdout.write(`\nCA over HTTP (${settings})\n${table}\n`);
  for (const r of rows) if (r.note !== undefined) process.stdout.write(`  ${r.scenario}: ${r.note}\n`);
  const path = await writeJson('ca', {
    tool: { name: tool.name, version: tool.version },
    settings: args,
    rows: rows.map((r) => ({
      scenario: r.scenario,
      rps: round(r.result.rps),
      p50Ms: r.result.p50Ms,
      p99Ms: r.result.p99Ms,
      ratio: r.ratio === undefined ? undefined : round(r.ratio),
      vs: r.vs,
      target: r.target,
      serverCpuPct: round(r.serverCpuPct),
      serverWaitMs: round(r.serverWaitMs),
      otherCpuPct: round(r.otherCpuPct),
      note: r.note,
    })),
  });
  process.stdout.write(`wrote ${path}\n`);
  return rows;
}

if (isEntryPoint(import.meta.url)) {
  runMain(async () => {
    await runCaBench(parseHttpBenchArgs());
  });
}
