// Where the agent's time goes while it answers authorize on varied traffic, and how two builds
// compare, read from the split of one run's CPU time instead of from req/s: on this shared 2-core
// machine one build's req/s moves by up to 40% between rounds a minute apart, while the shares of
// a profile repeat within about a point (bench/HISTORY.md, "where a distinct call waits for
// memory"). The agent (uWS, the 10,000 intentions) runs with `--perf-basic-prof` (names for its
// JIT code) under `perf record -e cpu-clock -g` while wrk sends the 10,000 distinct bodies. The
// kernel's share, the same socket work per request in every build, is the yardstick: a build whose
// own code costs less shows a larger kernel share. Runs alternate between the builds. Needs Linux
// `perf` (Debian: linux-perf) and wrk; says so and skips without them.
// Run: node dist/bench/probes/authorize-profile.js [--seconds 7] [--runs 3] [--before <dist/src/cli/main.js>]
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { AGENT_MISSING, agentBuilt } from '../support/agent.js';
import { spawnServer, type ServerProcess } from '../support/child.js';
import type { LoadResult, LoadTool } from '../support/load.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { AGENT_MAIN } from '../support/paths.js';
import { pickLoadTool } from '../support/pick-tool.js';
import { freePort, LOOPBACK } from '../support/ports.js';
import { formatTable } from '../support/report.js';
import { runCommand } from '../support/run-command.js';
import { distinctAuthorizeBodies } from '../micro/authorize.js';
import { seedAgent } from '../sizing/authorize.js';

const PATH = '/v1/agent/connect/authorize';
const WARMUP_S = 3;
const CONNECTIONS = 64;
const BODIES = distinctAuthorizeBodies();
// A prime rate, so sampling does not beat against a periodic timer.
const SAMPLE_HZ = '2999';

/** The shares each run reports: dso totals (self), then symbols and their callees (inclusive). */
const DSO_ROWS: readonly { readonly label: string; readonly pattern: RegExp }[] = [
  { label: 'kernel', pattern: /^\[kernel/ },
  { label: 'node', pattern: /^node$/ },
  { label: 'JIT', pattern: /^\[JIT\]/ },
  { label: 'uws', pattern: /^uws_/ },
  { label: 'libc', pattern: /^libc[.-]/ },
];
const SYMBOL_ROWS: readonly { readonly label: string; readonly pattern: RegExp }[] = [
  { label: 'authorize handler', pattern: /JS:\*handler \S*\/handlers\/authorize\.js/ },
  { label: 'body parse', pattern: /JS:\*parse \S*\/handlers\/authorize\.js/ },
  { label: 'header walk', pattern: /req_forEach/ },
  { label: 'Map lookups', pattern: /Builtins_FindOrderedHashMapEntry$/ },
  { label: 'buffers to uWS', pattern: /v8::ArrayBuffer::GetBackingStore$/ },
];

interface Build {
  readonly label: string;
  readonly main: string;
}

interface Profile {
  readonly build: string;
  readonly load: LoadResult;
  readonly dso: ReadonlyMap<string, number>;
  readonly symbols: ReadonlyMap<string, number>;
}

function hasPerf(): boolean {
  return spawnSync('perf', ['--version'], { stdio: 'ignore' }).status === 0;
}

async function startAgent(build: Build): Promise<ServerProcess> {
  const port = await freePort();
  const agent = await spawnServer({
    name: `agent (${build.label})`,
    args: [build.main, 'agent', '-dev', '-http-port', String(port), '-log-level', 'warn', '-http-transport', 'uws'],
    port,
    env: { NODE_OPTIONS: '--perf-basic-prof' },
  });
  try {
    await seedAgent(port);
  } catch (err) {
    await agent.stop();
    throw err;
  }
  return agent;
}

/** `perf report` lines `  12.34%  [ 5.67%]  name`: the first percentage and the name. */
function shares(report: string): { pct: number; name: string }[] {
  const out: { pct: number; name: string }[] = [];
  for (const line of report.split('\n')) {
    const m = /^\s+([\d.]+)%\s+(?:[\d.]+%\s+)?(.*)$/.exec(line);
    if (m !== null) out.push({ pct: Number(m[1]), name: (m[2] ?? '').trim() });
  }
  return out;
}

/** Sums the shares of the names each row's pattern takes (the first row that takes a name). */
function tally(
  lines: readonly { pct: number; name: string }[],
  rows: readonly { readonly label: string; readonly pattern: RegExp }[],
  first: boolean,
): Map<string, number> {
  const out = new Map<string, number>();
  for (const { pct, name } of lines) {
    const row = rows.find((r) => r.pattern.test(name));
    if (row === undefined || (first && out.has(row.label))) continue;
    out.set(row.label, (out.get(row.label) ?? 0) + pct);
  }
  return out;
}

async function report(data: string, args: readonly string[]): Promise<string> {
  const r = await runCommand('perf', ['report', '-i', data, '--stdio', ...args]);
  if (r.code !== 0) throw new Error(`perf report: ${r.stderr.trim()}`);
  return r.stdout;
}

async function profileOnce(build: Build, tool: LoadTool, seconds: number, dir: string): Promise<Profile> {
  const agent = await startAgent(build);
  const data = join(dir, `${build.label}-${Date.now()}.data`);
  try {
    const request = { url: `http://${LOOPBACK}:${agent.port}${PATH}`, method: 'POST' as const, bodies: BODIES };
    await tool.run(request, { durationS: WARMUP_S, connections: CONNECTIONS, threads: 1 });
    // The load runs a second either side of the recording, so perf sees only the steady state.
    const load = tool.run(request, { durationS: seconds + 2, connections: CONNECTIONS, threads: 1 });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const record = await runCommand('perf', [
      'record',
      '-q',
      '-g',
      '-e',
      'cpu-clock',
      '-F',
      SAMPLE_HZ,
      '-p',
      String(agent.pid),
      '-o',
      data,
      '--',
      'sleep',
      String(seconds),
    ]);
    if (record.code !== 0) throw new Error(`perf record: ${record.stderr.trim()}`);
    const result = await load;
    // Read while the agent's /tmp/perf-<pid>.map (its JIT code's names) is still there.
    const dsoReport = await report(data, ['--no-children', '--sort', 'dso']);
    const symReport = await report(data, ['--children', '--sort', 'sym', '-g', 'none']);
    // A dso's share is the sum of its lines; a function's is its largest line (inclusive shares nest).
    const dso = tally(shares(dsoReport), DSO_ROWS, false);
    const symbols = tally(shares(symReport), SYMBOL_ROWS, true);
    return { build: build.label, load: result, dso, symbols };
  } finally {
    await agent.stop();
    await rm(data, { force: true });
    await rm(`/tmp/perf-${agent.pid}.map`, { force: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      seconds: { type: 'string', default: '7' },
      runs: { type: 'string', default: '3' },
      before: { type: 'string' },
    },
  });
  if (!agentBuilt()) {
    console.log(AGENT_MISSING);
    return;
  }
  if (!hasPerf()) {
    console.log('authorize profile: skipped, `perf` not found (Debian: apt-get install linux-perf)');
    return;
  }
  const tool = await pickLoadTool('wrk');
  if (tool.name !== 'wrk') {
    console.log('authorize profile: skipped, the distinct bodies need wrk');
    return;
  }
  const builds: Build[] = [{ label: 'this', main: AGENT_MAIN }];
  if (values.before !== undefined) builds.push({ label: 'before', main: values.before });
  const seconds = Number(values.seconds);
  const dir = await mkdtemp(join(tmpdir(), 'svc-bench-perf-'));
  const profiles: Profile[] = [];
  try {
    for (let run = 0; run < Number(values.runs); run++) {
      // Alternate which build goes first, so a drift in the machine's speed falls on both.
      const order = run % 2 === 0 ? builds : [...builds].reverse();
      for (const build of order) {
        process.stderr.write(`  run ${run + 1}: ${build.label} ...\n`);
        profiles.push(await profileOnce(build, tool, seconds, dir));
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const pct = (n: number | undefined): string => (n === undefined ? '-' : n.toFixed(1));
  console.log(
    `\nPOST ${PATH}, 10,000 distinct bodies over 10,000 intentions (wrk -t1 -c${CONNECTIONS}); ` +
      `agent on uWS under perf (cpu-clock, ${seconds} s). Shares of the agent's CPU time, %: ` +
      'dso columns count time spent in each, the rest count a function and all it calls.',
  );
  console.log(
    formatTable(
      ['build', 'req/s', ...DSO_ROWS.map((d) => d.label), ...SYMBOL_ROWS.map((s) => s.label)],
      profiles.map((p) => [
        p.build,
        Math.round(p.load.rps),
        ...DSO_ROWS.map((d) => pct(p.dso.get(d.label))),
        ...SYMBOL_ROWS.map((s) => pct(p.symbols.get(s.label))),
      ]),
    ),
  );
}

if (isEntryPoint(import.meta.url)) runMain(main);
