// KV over HTTP, every row in one run with one load tool: the bare-uWS ceiling (GET and PUT), the
// agent in memory (-dev: GET, PUT) and durable (-data-dir: PUT, target >= 2,000/s through group
// commit). Each agent row is read as a fraction of the ceiling row with the same method.
// Run: node dist/bench/sizing/kv.js [--duration 10] [--warmup 2] [--threads 1] [--rounds 1] [--node-http]
import { AGENT_MISSING, agentBuilt, startAgent } from '../support/agent.js';
import { parseHttpBenchArgs, type HttpBenchArgs } from '../support/args.js';
import type { ServerProcess } from '../support/child.js';
import { GET_KEY, PUT_KEY, VALUE } from '../support/fixtures.js';
import { kvUrl, probe, putKey } from '../support/kv-client.js';
import type { LoadRequest, LoadResult, LoadTool, Method } from '../support/load.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { pickLoadTool } from '../support/pick-tool.js';
import { waitForQuiet } from '../support/quiet.js';
import { readRssKiB, startCpuWatch } from '../support/proc-stats.js';
import { brief, formatTable, round, writeJson } from '../support/report.js';
import { startCeiling, startNodeHttpBaseline } from '../support/servers.js';
import { median } from '../support/stats.js';

type ServerKind = 'ceiling' | 'node-http' | 'agent-dev' | 'agent-durable';

interface Scenario {
  id: string;
  server: ServerKind;
  method: Method;
  /** The row this one is divided by; both always ran with the same tool and settings. */
  ratioTo?: string;
  /** A target (bench/README.md), checked and printed. */
  minRps?: number;
}

// Ceiling first, agents after: a row's reference has always been measured by the time it prints.
const SCENARIOS: readonly Scenario[] = [
  { id: 'ceiling GET', server: 'ceiling', method: 'GET' },
  // PUT rows are compared with a ceiling that also reads a body, so the ratio is the agent's own cost.
  { id: 'ceiling PUT', server: 'ceiling', method: 'PUT' },
  { id: 'node:http GET', server: 'node-http', method: 'GET', ratioTo: 'ceiling GET' },
  { id: 'node:http PUT', server: 'node-http', method: 'PUT', ratioTo: 'ceiling PUT' },
  { id: 'agent GET -dev', server: 'agent-dev', method: 'GET', ratioTo: 'ceiling GET' },
  { id: 'agent PUT -dev', server: 'agent-dev', method: 'PUT', ratioTo: 'ceiling PUT' },
  { id: 'agent PUT -data-dir', server: 'agent-durable', method: 'PUT', ratioTo: 'ceiling PUT', minRps: 2000 },
];

// Server and load generator fill both cores; another job taking more than a tenth of one core
// visibly moves req/s (seen: ceiling 117k/s alone, ~70k/s beside a tsc + vitest run).
const NOISY_OTHER_CPU_PCT = 10;
// A noisy row is measured again, at most this often, keeping the quietest sample; bounded so a
// machine that never quietens costs at most 3x the planned time.
const MAX_NOISY_RETRIES = 2;

interface Sample {
  result: LoadResult;
  /** Share of one core the server used during the measured run (100 = one core flat out). */
  serverCpuPct: number;
  /** CPU used by anything else on the machine meanwhile (other jobs): high means a noisy row. */
  otherCpuPct: number;
  serverRssKiB: number;
  /** Body size of one response, checked before loading; GET rows should match the ceiling's. */
  bodyBytes: number;
}

interface Row {
  scenario: Scenario;
  samples: Sample[];
  error?: string;
}

function requestFor(scenario: Scenario, port: number): LoadRequest {
  return scenario.method === 'GET'
    ? { url: kvUrl(port, GET_KEY), method: 'GET' }
    : { url: kvUrl(port, PUT_KEY), method: 'PUT', body: VALUE };
}

async function startServer(kind: ServerKind): Promise<ServerProcess> {
  switch (kind) {
    case 'ceiling':
      return startCeiling();
    case 'node-http':
      return startNodeHttpBaseline();
    case 'agent-dev':
    case 'agent-durable': {
      const agent = await startAgent(kind === 'agent-dev' ? 'dev' : 'durable');
      // The GET rows read GET_KEY; it must hold the value whose response the ceiling imitates.
      await putKey(agent.port, GET_KEY, VALUE).catch(async (err: unknown) => {
        await agent.stop();
        throw err;
      });
      return agent;
    }
  }
}

async function measure(
  tool: LoadTool,
  server: ServerProcess,
  scenario: Scenario,
  args: HttpBenchArgs,
): Promise<Sample> {
  const request = requestFor(scenario, server.port);
  const check = await probe(request.url, { method: request.method, body: request.body });
  if (check.status !== 200) {
    throw new Error(`${request.method} ${request.url} answered ${check.status}: ${check.body.slice(0, 200)}`);
  }
  const settings = { durationS: args.durationS, connections: args.connections, threads: args.threads };
  if (args.quietWaitS > 0 && !(await waitForQuiet(args.quietWaitS * 1000))) {
    process.stderr.write(`    machine still busy after ${args.quietWaitS}s; measuring anyway\n`);
  }
  if (args.warmupS > 0) await tool.run(request, { ...settings, durationS: args.warmupS });
  const cpu = startCpuWatch(server.pid);
  const result = await tool.run(request, settings);
  const { serverPct, otherPct } = cpu();
  return {
    result,
    serverCpuPct: serverPct,
    otherCpuPct: otherPct,
    serverRssKiB: readRssKiB(server.pid) ?? Number.NaN,
    bodyBytes: check.bodyBytes,
  };
}

/** One pass over every scenario, one server process per kind, stopped before the next starts. */
async function runRound(
  tool: LoadTool,
  scenarios: readonly Scenario[],
  rows: Map<string, Row>,
  args: HttpBenchArgs,
): Promise<void> {
  const kinds = [...new Set(scenarios.map((s) => s.server))];
  for (const kind of kinds) {
    let server: ServerProcess | undefined;
    try {
      server = await startServer(kind);
      for (const scenario of scenarios.filter((s) => s.server === kind)) {
        process.stderr.write(`  ${scenario.id} ...\n`);
        const row = rows.get(scenario.id);
        try {
          let sample = await measure(tool, server, scenario, args);
          for (let retry = 1; retry <= MAX_NOISY_RETRIES && sample.otherCpuPct > NOISY_OTHER_CPU_PCT; retry++) {
            process.stderr.write(
              `    other jobs took ${sample.otherCpuPct.toFixed(0)}% CPU; measuring again (${retry}/${MAX_NOISY_RETRIES})\n`,
            );
            const again = await measure(tool, server, scenario, args);
            if (again.otherCpuPct < sample.otherCpuPct) sample = again;
          }
          row?.samples.push(sample);
        } catch (err) {
          if (row !== undefined) row.error = err instanceof Error ? err.message : String(err);
        }
      }
    } catch (err) {
      for (const s of scenarios.filter((x) => x.server === kind)) {
        const row = rows.get(s.id);
        if (row !== undefined) row.error = err instanceof Error ? err.message : String(err);
      }
    } finally {
      await server?.stop();
    }
  }
}

interface Summary {
  scenario: string;
  tool: string;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  ratio?: number;
  ratioTo?: string;
  target?: string;
  serverCpuPct: number;
  otherCpuPct: number;
  serverRssMiB: number;
  bodyBytes: number;
  errors: number;
  non2xx: number;
  rounds: number;
  error?: string;
}

function summarise(row: Row, all: Map<string, Summary>): Summary {
  const s = row.samples;
  const rps = median(s.map((x) => x.result.rps));
  const summary: Summary = {
    scenario: row.scenario.id,
    tool: s[0]?.result.tool ?? '-',
    rps,
    p50Ms: median(s.map((x) => x.result.p50Ms)),
    p99Ms: median(s.map((x) => x.result.p99Ms)),
    serverCpuPct: median(s.map((x) => x.serverCpuPct)),
    otherCpuPct: median(s.map((x) => x.otherCpuPct)),
    serverRssMiB: median(s.map((x) => x.serverRssKiB)) / 1024,
    bodyBytes: median(s.map((x) => x.bodyBytes)),
    errors: s.reduce((n, x) => n + x.result.errors, 0),
    non2xx: s.reduce((n, x) => n + x.result.non2xx, 0),
    rounds: s.length,
  };
  const reference = row.scenario.ratioTo === undefined ? undefined : all.get(row.scenario.ratioTo);
  if (reference !== undefined && reference.rounds > 0) {
    summary.ratio = rps / reference.rps;
    summary.ratioTo = reference.scenario;
  }
  if (row.scenario.minRps !== undefined && s.length > 0) {
    summary.target = `>=${row.scenario.minRps}/s ${rps >= row.scenario.minRps ? 'ok' : 'MISS'}`;
  }
  if (row.error !== undefined) summary.error = row.error;
  return summary;
}

export async function runKvBench(args: HttpBenchArgs): Promise<Summary[]> {
  const tool = await pickLoadTool(args.tool);
  let scenarios = SCENARIOS.filter((s) => args.nodeHttp || s.server !== 'node-http');
  const skipped: string[] = [];
  if (!agentBuilt()) {
    skipped.push(`agent rows: ${AGENT_MISSING}`);
    scenarios = scenarios.filter((s) => !s.server.startsWith('agent'));
  }
  const settings =
    `${tool.name} ${tool.version}, -t${args.threads} -c${args.connections}, ` +
    `${args.warmupS}s warm-up + ${args.durationS}s per row, ${args.rounds} round(s)`;
  process.stderr.write(`kv bench: ${settings}\n`);

  const rows = new Map<string, Row>(scenarios.map((s) => [s.id, { scenario: s, samples: [] }]));
  for (let r = 1; r <= args.rounds; r++) {
    process.stderr.write(`round ${r}/${args.rounds}\n`);
    await runRound(tool, scenarios, rows, args);
  }

  const summaries = new Map<string, Summary>();
  for (const row of rows.values()) summaries.set(row.scenario.id, summarise(row, summaries));
  const list = [...summaries.values()];

  const table = formatTable(
    [
      'scenario',
      'req/s',
      'p50 ms',
      'p99 ms',
      'ratio',
      'vs',
      'srv cpu%',
      'other cpu%',
      'srv MiB',
      'body B',
      'err',
      'non2xx',
      'target',
    ],
    list.map((x) => [
      x.scenario,
      x.rps,
      x.p50Ms,
      x.p99Ms,
      x.ratio,
      x.ratioTo,
      x.serverCpuPct,
      x.otherCpuPct,
      x.serverRssMiB,
      x.bodyBytes,
      x.errors,
      x.non2xx,
      x.target,
    ]),
  );
  process.stdout.write(`\nKV over HTTP (${settings})\n${table}\n`);
  // Rows of one server usually fail for one reason (it did not start): say it once.
  const errors = new Map<string, string[]>();
  for (const x of list) if (x.error !== undefined) errors.set(x.error, [...(errors.get(x.error) ?? []), x.scenario]);
  for (const [error, rowIds] of errors) process.stdout.write(`! ${rowIds.join(', ')}: ${brief(error, 8)}\n`);
  for (const s of skipped) process.stdout.write(`skipped ${s}\n`);
  const noisy = list.filter((x) => x.otherCpuPct > NOISY_OTHER_CPU_PCT).map((x) => x.scenario);
  if (noisy.length > 0) {
    process.stdout.write(
      `! other jobs took > ${NOISY_OTHER_CPU_PCT}% CPU during: ${noisy.join(', ')}, even after retries; `,
    );
    process.stdout.write('rerun later for firm figures\n');
  }

  const path = await writeJson('kv', {
    tool: { name: tool.name, version: tool.version },
    settings: args,
    rows: list.map((x) =>
      Object.fromEntries(Object.entries(x).map(([k, v]) => [k, typeof v === 'number' ? round(v) : v])),
    ),
    skipped,
  });
  process.stdout.write(`wrote ${path}\n`);
  return list;
}

if (isEntryPoint(import.meta.url)) {
  runMain(async () => {
    await runKvBench(parseHttpBenchArgs());
  });
}
