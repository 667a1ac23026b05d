// POST /v1/agent/connect/authorize over HTTP on a host where another process wants the agent's
// core: the agent pinned to core 0 with a busy loop (`sh`, never sleeping) started on core 0
// before it, against the same agent alone on core 0, the load generator on core 1. The headline is
// the ratio busy / alone of the same run: the kernel shares the core between the two processes, so
// roughly half is what fair sharing gives, and far below that means some thread the event loop
// waits for is starved (what SCHED_IDLE on V8's helper threads did: about 0.1x). Rows alternate within each round,
// and the order flips from one round to the next. Linux with taskset (util-linux), 2+ cores.
// Run: node dist/bench/sizing/authorize-busy-host.js [--duration 10] [--warmup 2] [--rounds 3]
// (SVC_BENCH_AGENT=<other build>/dist/src/cli/main.js measures another build.)
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { readFileSync } from 'node:fs';
import { AGENT_MISSING, agentBuilt } from '../support/agent.js';
import { parseHttpBenchArgs, type HttpBenchArgs } from '../support/args.js';
import { spawnServer, type ServerProcess } from '../support/child.js';
import { probe } from '../support/kv-client.js';
import type { LoadRequest, LoadResult, LoadTool } from '../support/load.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { AGENT_MAIN } from '../support/paths.js';
import { pickLoadTool } from '../support/pick-tool.js';
import { freePort, LOOPBACK } from '../support/ports.js';
import { readCpuSeconds, readThreadPriorities, startCpuWatch } from '../support/proc-stats.js';
import { waitForQuiet } from '../support/quiet.js';
import { brief, formatTable, round, writeJson } from '../support/report.js';
import { median } from '../support/stats.js';
import { seedAgent } from './authorize.js';

/** Below this the agent is starved rather than sharing: fair sharing gives about 0.5x. */
const MIN_RATIO = 0.3;
const AGENT_CORE = '0';
/** Generous: an agent whose start-up threads are starved may take far longer than the usual second. */
const AGENT_START_TIMEOUT_MS = 60_000;
const LOAD_CORE = '1';
const AUTHORIZE_PATH = '/v1/agent/connect/authorize';
/** One decision that matches an exact intention (a deny) among the 10,000 seeded. */
const BODY = JSON.stringify({
  Target: 'svc-5',
  Namespace: 'ns-5',
  ClientCertURI: 'spiffe://11111111-2222-3333-4444-555555555555.consul/ns/ns-5/dc/dc1/svc/src-5',
  ClientCertSerial: '3e:9d:0c:11:62:aa:4f:30',
});
/**
 * Spins without a pause, but ends itself when the bench is gone (checked every 100,000 turns, a
 * fraction of a second), so that even a bench killed with SIGKILL leaves no busy core behind.
 */
const BUSY_LOOP =
  'i=0; while :; do i=$((i+1)); if [ "$i" -ge 100000 ]; then i=0; kill -0 "$PPID" 2>/dev/null || exit 0; fi; done';

type Host = 'alone' | 'busy';

interface Sample {
  readonly result: LoadResult;
  readonly serverCpuPct: number;
  /** CPU of the busy loop during the measured run (100 = a whole core). */
  readonly busyCpuPct: number;
  /** Threads of the agent under a policy other than SCHED_OTHER. */
  readonly nonDefaultPolicyThreads: number;
  /** The agent's allowed CPUs, as the kernel shows them. */
  readonly agentCpus: string;
}

/** Why this machine cannot run the bench, or undefined. */
function unsupported(): string | undefined {
  if (process.platform !== 'linux') return `needs Linux, not ${process.platform}`;
  if (availableParallelism() < 2) return 'needs 2 cores (agent on one, load generator on the other)';
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
  } catch {
    return 'needs taskset (util-linux)';
  }
  return undefined;
}

/** Pins every thread of `pid` to `cores`; children it starts from then on inherit that. */
function pin(pid: number, cores: string): void {
  execFileSync('taskset', ['--all-tasks', '--cpu-list', '--pid', cores, String(pid)], { stdio: 'ignore' });
}

function allowedCpus(pid: number): string {
  return /^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? '?';
}

/** The busy loops alive now: killed on every way out of the bench. */
const busyLoops = new Set<ChildProcess>();
function killBusyLoops(): void {
  for (const loop of busyLoops) loop.kill('SIGKILL');
  busyLoops.clear();
}
process.once('exit', killBusyLoops);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    killBusyLoops();
    process.exit(130);
  });
}

function startBusyLoop(): ChildProcess {
  const loop = spawn('taskset', ['--cpu-list', AGENT_CORE, 'sh', '-c', BUSY_LOOP], { stdio: 'ignore' });
  busyLoops.add(loop);
  loop.once('exit', () => busyLoops.delete(loop));
  return loop;
}

async function stopBusyLoop(loop: ChildProcess): Promise<void> {
  if (loop.exitCode !== null || loop.signalCode !== null) return;
  const exited = new Promise((resolve) => loop.once('exit', resolve));
  loop.kill('SIGKILL');
  await exited;
}

/** The agent (-dev) started on AGENT_CORE: the bench moves there to start it, then back to LOAD_CORE. */
async function startPinnedAgent(): Promise<ServerProcess> {
  const port = await freePort();
  pin(process.pid, AGENT_CORE);
  try {
    const args = [AGENT_MAIN, 'agent', '-dev', '-http-port', String(port), '-log-level', 'warn'];
    return await spawnServer({ name: 'agent (dev)', args, port, startTimeoutMs: AGENT_START_TIMEOUT_MS });
  } finally {
    pin(process.pid, LOAD_CORE);
  }
}

async function measure(tool: LoadTool, host: Host, args: HttpBenchArgs): Promise<Sample> {
  // Wait for other jobs before the busy loop starts: once it runs, the machine is never quiet.
  if (args.quietWaitS > 0 && !(await waitForQuiet(args.quietWaitS * 1000))) {
    process.stderr.write(`    machine still busy after ${args.quietWaitS}s; measuring anyway\n`);
  }
  const loop = host === 'busy' ? startBusyLoop() : undefined;
  let agent: ServerProcess | undefined;
  try {
    agent = await startPinnedAgent();
    await seedAgent(agent.port);
    const request: LoadRequest = {
      url: `http://${LOOPBACK}:${agent.port}${AUTHORIZE_PATH}`,
      method: 'POST',
      body: BODY,
    };
    const check = await probe(request.url, { method: 'POST', body: BODY });
    if (check.status !== 200)
      throw new Error(`POST ${request.url} answered ${check.status}: ${check.body.slice(0, 200)}`);
    const settings = { durationS: args.durationS, connections: args.connections, threads: args.threads };
    if (args.warmupS > 0) await tool.run(request, { ...settings, durationS: args.warmupS });
    const cpu = startCpuWatch(agent.pid);
    const busy0 = loop?.pid === undefined ? 0 : (readCpuSeconds(loop.pid) ?? Number.NaN);
    const started = performance.now();
    const result = await tool.run(request, settings);
    const elapsedS = (performance.now() - started) / 1000;
    const busyCpuPct =
      loop?.pid === undefined ? 0 : (((readCpuSeconds(loop.pid) ?? Number.NaN) - busy0) / elapsedS) * 100;
    return {
      result,
      serverCpuPct: cpu().serverPct,
      busyCpuPct,
      nonDefaultPolicyThreads: readThreadPriorities(agent.pid).filter((t) => t.policy !== 0).length,
      agentCpus: allowedCpus(agent.pid),
    };
  } finally {
    await agent?.stop();
    if (loop !== undefined) await stopBusyLoop(loop);
  }
}

export async function runAuthorizeBusyHostBench(args: HttpBenchArgs): Promise<Record<string, unknown> | undefined> {
  const why = unsupported();
  if (why !== undefined) {
    process.stdout.write(`skipped authorize busy-host bench: ${why}\n`);
    return undefined;
  }
  if (!agentBuilt()) throw new Error(AGENT_MISSING);
  const tool = await pickLoadTool(args.tool);
  const settings = `${tool.name} ${tool.version}, -t${args.threads} -c${args.connections}, ${args.warmupS}s warm-up + ${args.durationS}s per row, ${args.rounds} round(s)`;
  process.stderr.write(`authorize busy-host bench (${AGENT_MAIN}): ${settings}\n`);
  const ownCpus = allowedCpus(process.pid);
  const samples: Record<Host, Sample[]> = { alone: [], busy: [] };
  const errors: Record<Host, string[]> = { alone: [], busy: [] };
  const ratios: number[] = [];
  try {
    for (let r = 1; r <= args.rounds; r++) {
      const order: readonly Host[] = r % 2 === 1 ? ['alone', 'busy'] : ['busy', 'alone'];
      const pair: Partial<Record<Host, Sample>> = {};
      for (const host of order) {
        process.stderr.write(
          `  round ${r}/${args.rounds}: agent ${host === 'busy' ? 'beside a busy loop' : 'alone'} on core ${AGENT_CORE} ...\n`,
        );
        try {
          const sample = await measure(tool, host, args);
          samples[host].push(sample);
          pair[host] = sample;
        } catch (err) {
          errors[host].push(err instanceof Error ? err.message : String(err));
        }
      }
      if (pair.alone !== undefined && pair.busy !== undefined)
        ratios.push(pair.busy.result.rps / pair.alone.result.rps);
    }
  } finally {
    killBusyLoops();
    execFileSync('taskset', ['--all-tasks', '--cpu-list', '--pid', ownCpus, String(process.pid)], { stdio: 'ignore' });
  }

  const rows = (['alone', 'busy'] as const).map((host) => {
    const s = samples[host];
    return {
      host,
      rps: median(s.map((x) => x.result.rps)),
      p50Ms: median(s.map((x) => x.result.p50Ms)),
      p99Ms: median(s.map((x) => x.result.p99Ms)),
      serverCpuPct: median(s.map((x) => x.serverCpuPct)),
      busyCpuPct: median(s.map((x) => x.busyCpuPct)),
      nonDefaultPolicyThreads: s.length === 0 ? Number.NaN : Math.max(...s.map((x) => x.nonDefaultPolicyThreads)),
      agentCpus: [...new Set(s.map((x) => x.agentCpus))].join(' '),
      errors: s.reduce((n, x) => n + x.result.errors, 0),
      non2xx: s.reduce((n, x) => n + x.result.non2xx, 0),
      failedRuns: errors[host].length,
    };
  });
  const labels: Record<Host, string> = {
    alone: `agent alone on core ${AGENT_CORE}`,
    busy: `agent + busy loop on core ${AGENT_CORE}`,
  };
  const table = formatTable(
    [
      'host',
      'req/s',
      'p50 ms',
      'p99 ms',
      'agent cpu%',
      'busy loop cpu%',
      'non-default policy threads',
      'agent cpus',
      'err',
      'non2xx',
      'failed runs',
    ],
    rows.map((x) => [
      labels[x.host],
      x.rps,
      x.p50Ms,
      x.p99Ms,
      x.serverCpuPct,
      x.busyCpuPct,
      x.nonDefaultPolicyThreads,
      x.agentCpus,
      x.errors,
      x.non2xx,
      x.failedRuns,
    ]),
  );
  const ratio = median(ratios);
  process.stdout.write(
    `\nPOST ${AUTHORIZE_PATH} with a busy process on the agent's core (${settings}; load on core ${LOAD_CORE})\n${table}\n`,
  );
  const verdict = `>=${MIN_RATIO}x ${ratio >= MIN_RATIO ? 'ok' : 'MISS'}`;
  process.stdout.write(
    `busy / alone: ${ratio.toFixed(2)}x [${verdict}] (median of ${ratios.length} alternated round(s): ${ratios.map((x) => x.toFixed(2)).join(' ')})\n`,
  );
  for (const host of ['alone', 'busy'] as const)
    for (const e of errors[host]) process.stdout.write(`! ${labels[host]}: ${brief(e, 4)}\n`);
  const summary = {
    agent: AGENT_MAIN,
    tool: { name: tool.name, version: tool.version },
    settings: args,
    ratio: round(ratio),
    verdict,
    ratios: ratios.map(round),
    errors,
    rows: rows.map((x) =>
      Object.fromEntries(Object.entries(x).map(([k, v]) => [k, typeof v === 'number' ? round(v) : v])),
    ),
  };
  process.stdout.write(`wrote ${await writeJson('authorize-busy-host', summary)}\n`);
  return summary;
}

if (isEntryPoint(import.meta.url)) {
  runMain(async () => {
    await runAuthorizeBusyHostBench(parseHttpBenchArgs());
  });
}
