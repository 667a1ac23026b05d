// `svc-agent loadtest <scenario> [flags]`: load against a running agent (or several of one cluster,
// or a Consul agent), measured honestly (HDR histograms; open loop measures from when a request
// was due), with a live progress line, a summary table, a versioned JSON result and an HTML
// report. `svc-agent loadtest compare a.json b.json` puts two results side by side.
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { ApiClient, ClientError, targetFrom } from '../client/api.js';
import { flagHelp, parseFlags, type FlagSpecs } from '../client/flags.js';
import { isAgentError } from '../../core/errors.js';
import type { Aggregate } from '../../loadgen/aggregate.js';
import type { SecondPoint } from '../../loadgen/types.js';
import { runCompare, compareHelp } from './compare.js';
import { durationFlag, rateFlag, stagesFlag } from './flag-values.js';
import { pointRate } from './rates.js';
import { renderReport } from './report.js';
import { defaultThreads } from './request-load.js';
import { ms, resultOf, summaryText, thresholdText } from './result.js';
import type { CommonSettings, RunContext, Scenario } from './scenario.js';
import { authorizeScenario, connectionRateScenario } from './scenarios/authorize.js';
import { httpScenario } from './scenarios/http.js';
import { kvScenario } from './scenarios/kv.js';
import { leafWaveScenario } from './scenarios/leaf-wave.js';
import { meshScenario } from './scenarios/mesh.js';
import { proxiesScenario } from './scenarios/proxies.js';
import { parseThreshold } from './thresholds.js';

export { RESULT_SCHEMA, type LoadtestResult } from './result.js';

const COMMON_FLAGS: FlagSpecs = {
  'http-addr': {
    kind: 'list',
    doc: 'An agent to load (host:port); repeat to spread the load over several agents of one cluster. Default SVC_HTTP_ADDR, then CONSUL_HTTP_ADDR, then 127.0.0.1:8500.',
  },
  token: { kind: 'string', doc: 'ACL token; default SVC_HTTP_TOKEN, then CONSUL_HTTP_TOKEN.' },
  'header-brand': {
    kind: 'string',
    doc: 'Svc or Consul: how the target spells its headers (X-Svc-Token and X-Svc-Index, or X-Consul-...); default Svc, or Consul when the address came from CONSUL_HTTP_ADDR.',
  },
  duration: { kind: 'string', doc: 'Measured time (default 10s).' },
  warmup: { kind: 'string', doc: 'Unmeasured time first (default 2s).' },
  connections: { kind: 'int', doc: 'Keep-alive connections (default 64).' },
  rate: {
    kind: 'string',
    doc: 'Open loop: requests per second, e.g. 5000/s (a call due while every connection is busy waits, late, in a backlog of one second of the rate, else is dropped; sending stops at -duration); absent: closed loop, as fast as the target answers.',
  },
  out: { kind: 'string', doc: 'Write the JSON result to this file.' },
  report: { kind: 'string', doc: 'Write a self-contained HTML report (charts) to this file.' },
  threads: { kind: 'int', doc: 'Generator threads (default: one per core but one).' },
  stages: {
    kind: 'string',
    doc: 'Open loop in stages instead of -rate: duration:rate (a hold; 0 is a pause) or duration:from-to (a linear ramp), e.g. 10s:1000,30s:1000-20000,10s:0; the summary gives each stage its asked and achieved rate over its own time, and its latency.',
  },
  threshold: {
    kind: 'list',
    doc: "A condition the run must hold, e.g. 'p99<5ms', 'errors<0.1%', 'rate>=0.95*asked', 'dropped<1%' (repeatable); one failing exits 2.",
  },
  'find-max': {
    kind: 'bool',
    doc: 'Raise the rate from -rate (default 100/s), one -duration step at a time (at least 5s), until a -threshold (default p99<100ms, errors<1%) or rate>=0.95*asked fails on the step; the best rate held is confirmed by a step twice as long, and reported with its figures.',
  },
  hgrm: {
    kind: 'string',
    doc: "Write the latency histogram in HdrHistogram's percentile format (.hgrm) to this file, and each outcome's beside it.",
  },
};

const SCENARIOS: Readonly<Record<string, Scenario>> = {
  authorize: authorizeScenario,
  'connection-rate': connectionRateScenario,
  proxies: proxiesScenario,
  'leaf-wave': leafWaveScenario,
  kv: kvScenario,
  http: httpScenario,
  mesh: meshScenario,
};

export function loadtestHelp(): string {
  const scenarios = Object.entries(SCENARIOS).map(([name, s]) => `    ${name.padEnd(16)}${s.synopsis}`);
  const scenarioFlags = Object.entries(SCENARIOS)
    .filter(([, s]) => Object.keys(s.flags).length > 0)
    .map(([name, s]) => `Options of ${name}:\n\n${flagHelp(s.flags)}\n`);
  return [
    'Usage: svc-agent loadtest <scenario> [options]',
    '       svc-agent loadtest compare <a.json> <b.json> [-report diff.html] [-force]',
    '',
    'Scenarios:',
    ...scenarios,
    '',
    'Options:',
    '',
    flagHelp(COMMON_FLAGS),
    '',
    ...scenarioFlags,
    compareHelp(),
  ].join('\n');
}

export interface LoadtestIo {
  out(text: string): void;
  err(text: string): void;
  readonly isTty: boolean;
}

const systemIo: LoadtestIo = {
  out: (t) => void process.stdout.write(t),
  err: (t) => void process.stderr.write(t),
  isTty: process.stderr.isTTY === true,
};

export async function runLoadtest(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  io: LoadtestIo = systemIo,
): Promise<number> {
  const [name, ...rest] = argv;
  if (
    name === undefined ||
    name === '-h' ||
    name === '-help' ||
    name === '--help' ||
    rest.some((a) => a === '-h' || a === '-help' || a === '--help')
  ) {
    io.out(`${loadtestHelp()}\n`);
    return 0;
  }
  try {
    if (name === 'compare') return await runCompare(rest, io);
    const scenario = SCENARIOS[name];
    if (scenario === undefined) {
      io.err(
        `Unknown scenario ${JSON.stringify(name)}: one of ${Object.keys(SCENARIOS).join(', ')}, or compare (svc-agent loadtest --help)\n`,
      );
      return 1;
    }
    const { values } = parseFlags(rest, { ...COMMON_FLAGS, ...scenario.flags });
    return await run(name, scenario, values, env, io);
  } catch (err) {
    io.err(`${isAgentError(err) ? err.message : err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

function commonSettings(flags: Readonly<Record<string, unknown>>): CommonSettings {
  const connections = Number(flags.connections ?? 64);
  if (connections < 1) throw new ClientError('CLI_LOADTEST_FLAG', '-connections must be at least 1');
  const rate = rateFlag('rate', flags.rate, 'requests', '5000/s');
  const threads = Number(flags.threads ?? defaultThreads());
  if (!(threads >= 1)) throw new ClientError('CLI_LOADTEST_FLAG', '-threads must be at least 1');
  const findMax = flags['find-max'] === true;
  const steps = stagesFlag(flags.stages);
  if (steps !== undefined && (rate !== undefined || findMax))
    throw new ClientError('CLI_LOADTEST_FLAG', '-stages sets the rate: not with -rate or -find-max');
  const measureMs =
    steps === undefined
      ? durationFlag('duration', flags.duration, 10_000, '10s')
      : steps.reduce((sum, s) => sum + s.ms, 0);
  const stages = steps ?? (rate !== undefined || findMax ? [{ ms: measureMs, rate: rate ?? 100 }] : undefined);
  const thresholds = ((flags.threshold as string[] | undefined) ?? []).map(parseThreshold);
  return {
    measureMs,
    warmupMs: durationFlag('warmup', flags.warmup, 2_000, '10s'),
    connections,
    rate: findMax ? (rate ?? 100) : rate,
    stages,
    threads,
    thresholds,
    findMax,
  };
}

async function run(
  name: string,
  scenario: Scenario,
  flags: Readonly<Record<string, unknown>>,
  env: NodeJS.ProcessEnv,
  io: LoadtestIo,
): Promise<number> {
  const addrs = (flags['http-addr'] as string[] | undefined) ?? [undefined];
  const targets = addrs.map((a) => targetFrom({ httpAddr: a, token: flags.token as string | undefined }, env));
  const consulByEnv =
    flags['http-addr'] === undefined && env.SVC_HTTP_ADDR === undefined && env.CONSUL_HTTP_ADDR !== undefined;
  const brand = String(flags['header-brand'] ?? (consulByEnv ? 'Consul' : 'Svc'));
  if (brand !== 'Svc' && brand !== 'Consul')
    throw new ClientError(
      'CLI_LOADTEST_FLAG',
      `invalid value ${JSON.stringify(brand)} for flag -header-brand: Svc or Consul`,
    );
  const common = commonSettings(flags);
  if (scenario.openLoop !== true) {
    const given = ['rate', 'stages', 'find-max'].filter((f) => flags[f] !== undefined);
    if (given.length > 0)
      throw new ClientError(
        'CLI_LOADTEST_FLAG',
        `${name} sets its own pace: -${given.join(', -')} apply to authorize, connection-rate, kv, http and mesh`,
      );
  }
  const unit = scenario.unitOf?.(flags) ?? scenario.unit;
  const token = targets[0]?.token;
  const stop = new AbortController();
  const onSignal = (): void => {
    if (stop.signal.aborted) process.exit(130);
    stop.abort();
    io.err('\nstopping: writing what was measured (Ctrl-C again to quit at once)\n');
  };
  const prefix = `lt-${randomBytes(3).toString('hex')}`;
  const ctx: RunContext = {
    api: new ApiClient(targets[0]!),
    targets,
    headers: token === undefined ? {} : { [`X-${brand}-Token`]: token },
    indexHeader: `x-${brand.toLowerCase()}-index`,
    prefix,
    flags,
    common,
    stop: stop.signal,
    progress: (point: SecondPoint) => {
      const lost = point.dropped > 0 ? `  dropped ${point.dropped.toLocaleString('en-US')}` : '';
      const at = (Math.round(point.endMs / 100) / 10).toString();
      const line = `[${at.padStart(4)}s] ${pointRate(point.answered, point).toLocaleString('en-US')} ${unit}  p50 ${ms(point.p50Us)} ms  p99 ${ms(point.p99Us)} ms  errors ${point.errors.toLocaleString('en-US')}${lost}`;
      io.err(io.isTty ? `\r${line}   ` : `${line}\n`);
    },
    say: (line) => io.err(`${io.isTty ? '\r' : ''}loadtest ${name}: ${line}\n`),
  };
  ctx.say(`names on the target start with ${prefix}`);
  process.on('SIGINT', onSignal);
  const startedAt = new Date().toISOString();
  try {
    const report = await scenario.run(ctx);
    if (io.isTty) io.err('\n');
    const result = resultOf({
      scenario: name,
      unit,
      prefix,
      targets: targets.map((t) => t.base),
      common,
      stoppedEarly: stop.signal.aborted,
      startedAt,
      report,
    });
    io.out(summaryText(result));
    if (typeof flags.out === 'string') await writeFile(flags.out, `${JSON.stringify(result, null, 2)}\n`);
    if (typeof flags.report === 'string') await writeFile(flags.report, await renderReport([result]));
    if (typeof flags.hgrm === 'string') await writeHgrm(flags.hgrm, report.measured.aggregate);
    const failed = result.thresholds.filter((t) => !t.passed);
    if (failed.length === 0) return 0;
    io.err(
      `loadtest ${name}: ${failed.length} of ${result.thresholds.length} thresholds failed: ${failed.map(thresholdText).join('; ')}\n`,
    );
    return 2;
  } finally {
    process.off('SIGINT', onSignal);
  }
}

/** The run's histogram at `file`, and each outcome's beside it (`latency.hgrm`, `latency.allow.hgrm`). */
async function writeHgrm(file: string, aggregate: Aggregate): Promise<void> {
  await writeFile(file, aggregate.total.hgrm());
  const stem = file.endsWith('.hgrm') ? file.slice(0, -5) : file;
  for (const [kind, o] of aggregate.outcomes) await writeFile(`${stem}.${kind}.hgrm`, o.histogram.hgrm());
}
