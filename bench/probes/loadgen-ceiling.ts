// The load generator's own ceiling (the target: within 0.9x of wrk on the same agent, connections and
// request): one agent on uWS, seeded with the 10,000 intentions, loaded closed loop at 64
// connections by wrk (-t1) and by `svc-agent loadtest` (one generator thread, its default on two
// cores), rows alternated round by round and reported as medians, each generator row as a ratio
// to wrk's row of the same request:
// - authorize, one body: wrk's exact request through the `http` scenario (-method POST -body);
// - the `authorize` scenario itself (its own seeded intentions and bodies, allow and deny told
//   apart): the path a user runs, against wrk's one body;
// - GET /v1/status/leader through the `http` scenario.
// With --before <main.js> (another build's CLI, e.g. main before a change) its generator runs the
// same rows against the same agent, so a change shows as before/after ratios from one run.
// Run: node dist/bench/probes/loadgen-ceiling.js [--duration 10] [--warmup 2] [--rounds 3]
//      [--before path/to/dist/src/cli/main.js]
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { AGENT_MAIN } from '../support/paths.js';
import { AGENT_MISSING, agentBuilt, startAgent } from '../support/agent.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { pickLoadTool } from '../support/pick-tool.js';
import { LOOPBACK } from '../support/ports.js';
import { formatTable, round, writeJson } from '../support/report.js';
import { runCommand } from '../support/run-command.js';
import { median } from '../support/stats.js';
import type { LoadTool } from '../support/load.js';
import { AUTHORIZE_BODY, seedAgent } from '../sizing/authorize.js';

const AUTHORIZE_PATH = '/v1/agent/connect/authorize';
const LEADER_PATH = '/v1/status/leader';
const CONNECTIONS = 64;

interface Settings {
  readonly durationS: number;
  readonly warmupS: number;
  readonly rounds: number;
  readonly before: string | undefined;
}

interface Measure {
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly errors: number;
}

interface Row {
  readonly id: string;
  /** The wrk row this one is divided by; none for wrk's own rows. */
  readonly wrk?: string;
  readonly run: (port: number) => Promise<Measure>;
}

function parse(argv: readonly string[]): Settings {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      duration: { type: 'string' },
      warmup: { type: 'string' },
      rounds: { type: 'string' },
      before: { type: 'string' },
    },
    strict: true,
  });
  return {
    durationS: Math.max(1, Number(values.duration ?? 10)),
    warmupS: Math.max(0, Number(values.warmup ?? 2)),
    rounds: Math.max(1, Number(values.rounds ?? 3)),
    before: values.before,
  };
}

/** One `svc-agent loadtest` run of the given build; its JSON result read back. */
async function loadtest(main: string, port: number, s: Settings, scenario: readonly string[]): Promise<Measure> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-loadgen-'));
  try {
    const out = join(dir, 'result.json');
    const args = [
      main,
      'loadtest',
      ...scenario,
      '-http-addr',
      `${LOOPBACK}:${port}`,
      '-connections',
      String(CONNECTIONS),
      '-threads',
      '1',
      '-duration',
      `${s.durationS}s`,
      '-warmup',
      `${s.warmupS}s`,
      '-out',
      out,
    ];
    const { code, stdout, stderr } = await runCommand(process.execPath, args);
    if (code !== 0) throw new Error(`loadtest exited ${code}: ${stderr || stdout}`);
    const result = JSON.parse(await readFile(out, 'utf8')) as {
      summary: { achievedRps: number; errors: Record<string, number>; latencyUs: { p50: number; p99: number } };
    };
    const { summary } = result;
    return {
      rps: summary.achievedRps,
      p50Ms: summary.latencyUs.p50 / 1000,
      p99Ms: summary.latencyUs.p99 / 1000,
      errors: Object.values(summary.errors).reduce((a, b) => a + b, 0),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function wrk(tool: LoadTool, port: number, s: Settings, path: string, body?: string): Promise<Measure> {
  const url = `http://${LOOPBACK}:${port}${path}`;
  const request = body === undefined ? { url, method: 'GET' as const } : { url, method: 'POST' as const, body };
  const settings = { connections: CONNECTIONS, threads: 1 };
  // wrk has no warm-up of its own: an unmeasured run first, as the generator's -warmup.
  if (s.warmupS > 0) await tool.run(request, { ...settings, durationS: s.warmupS });
  const r = await tool.run(request, { ...settings, durationS: s.durationS });
  return { rps: r.rps, p50Ms: r.p50Ms, p99Ms: r.p99Ms, errors: r.errors + r.non2xx };
}

function rows(tool: LoadTool, s: Settings): Row[] {
  const builds: [string, string][] = [['', AGENT_MAIN]];
  if (s.before !== undefined) builds.push([' (before)', s.before]);
  const authorizeOne = ['http', '-method', 'POST', '-path', AUTHORIZE_PATH, '-body', AUTHORIZE_BODY];
  const list: Row[] = [
    { id: 'wrk authorize, one body', run: (port) => wrk(tool, port, s, AUTHORIZE_PATH, AUTHORIZE_BODY) },
  ];
  for (const [tag, main] of builds)
    list.push({
      id: `loadtest http authorize, one body${tag}`,
      wrk: 'wrk authorize, one body',
      run: (port) => loadtest(main, port, s, authorizeOne),
    });
  for (const [tag, main] of builds)
    list.push({
      id: `loadtest authorize scenario${tag}`,
      wrk: 'wrk authorize, one body',
      run: (port) => loadtest(main, port, s, ['authorize', '-intentions', '100', '-destinations', '10']),
    });
  list.push({ id: 'wrk GET status/leader', run: (port) => wrk(tool, port, s, LEADER_PATH) });
  for (const [tag, main] of builds)
    list.push({
      id: `loadtest http GET status/leader${tag}`,
      wrk: 'wrk GET status/leader',
      run: (port) => loadtest(main, port, s, ['http', '-path', LEADER_PATH]),
    });
  return list;
}

export async function runLoadgenCeiling(s: Settings): Promise<Record<string, unknown>[]> {
  if (!agentBuilt()) throw new Error(AGENT_MISSING);
  const tool = await pickLoadTool('wrk');
  const list = rows(tool, s);
  const agent = await startAgent('dev', ['-http-transport', 'uws']);
  const samples = new Map<string, Measure[]>(list.map((r) => [r.id, []]));
  try {
    await seedAgent(agent.port);
    for (let round = 1; round <= s.rounds; round++) {
      for (const row of list) {
        const m = await row.run(agent.port);
        samples.get(row.id)?.push(m);
        process.stderr.write(`round ${round} ${row.id}: ${Math.round(m.rps)} req/s\n`);
      }
    }
  } finally {
    await agent.stop();
  }
  const rpsOf = (id: string): number[] => (samples.get(id) ?? []).map((m) => m.rps);
  return list.map((row) => {
    const ms = samples.get(row.id) ?? [];
    const rps = rpsOf(row.id);
    // Ratios round by round (the rows of one round ran minutes apart at most), then their median.
    const ratios = row.wrk === undefined ? [] : rps.map((r, i) => r / (rpsOf(row.wrk!)[i] ?? Number.NaN));
    return {
      row: row.id,
      rps: round(median(rps)),
      rounds: rps.map(Math.round),
      p50Ms: round(median(ms.map((m) => m.p50Ms))),
      p99Ms: round(median(ms.map((m) => m.p99Ms))),
      errors: ms.reduce((a, m) => a + m.errors, 0),
      xWrk: row.wrk === undefined ? undefined : round(median(ratios)),
      xWrkRounds: ratios.map((r) => round(r)),
    };
  });
}

if (isEntryPoint(import.meta.url)) {
  runMain(async () => {
    const s = parse(process.argv.slice(2));
    const results = await runLoadgenCeiling(s);
    const headers = ['row', 'req/s (median)', 'rounds', 'p50 ms', 'p99 ms', 'errors', 'x wrk', 'x wrk by round'];
    const table = results.map((r) => [
      r.row as string,
      r.rps as number,
      (r.rounds as number[]).join(' / '),
      r.p50Ms as number,
      r.p99Ms as number,
      r.errors as number,
      r.xWrk as number | undefined,
      (r.xWrkRounds as number[]).join(' / '),
    ]);
    process.stdout.write(`${formatTable(headers, table)}\n`);
    await writeJson('loadgen-ceiling', { settings: { ...s, connections: CONNECTIONS }, results });
  });
}
