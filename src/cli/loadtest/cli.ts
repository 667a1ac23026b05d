// `svc-agent loadtest <scenario> [flags]`: load against a running agent (or several of one cluster,
// or a Consul agent), measured honestly (HDR histograms; open loop measures from when a request
// was due), with a live progress line, a summary table and a versioned JSON result. The target's
// own counters are read before and after and shown beside the generator's.
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { ApiClient, ClientError, targetFrom } from '../client/api.js';
import { flagHelp, parseFlags, type FlagSpecs } from '../client/flags.js';
import { parseDuration } from '../../core/duration.js';
import { isAgentError } from '../../core/errors.js';
import { HttpChannel } from './http-channel.js';
import { Recorder } from './recorder.js';
import { drive, realClock } from './scheduler.js';
import { authorizeFlags, setUpAuthorize } from './scenarios/authorize.js';

/** The JSON result's schema name and version (docs/loadtest-result.md). */
export const RESULT_SCHEMA = 'svc-agent-loadtest/1';

const COMMON_FLAGS: FlagSpecs = {
  'http-addr': { kind: 'list', doc: 'An agent to load (host:port); repeat to spread the load over several agents of one cluster. Default SVC_HTTP_ADDR, then CONSUL_HTTP_ADDR, then 127.0.0.1:8500.' },
  token: { kind: 'string', doc: 'ACL token; default SVC_HTTP_TOKEN, then CONSUL_HTTP_TOKEN.' },
  'header-brand': { kind: 'string', doc: 'Svc or Consul: the header spelling the target uses (default Svc).' },
  duration: { kind: 'string', doc: 'Measured time (default 10s).' },
  warmup: { kind: 'string', doc: 'Unmeasured time first (default 2s).' },
  connections: { kind: 'int', doc: 'Keep-alive connections (default 64).' },
  rate: { kind: 'string', doc: 'Open loop: requests per second, e.g. 5000/s; absent: closed loop, as fast as the target answers.' },
  out: { kind: 'string', doc: 'Write the JSON result to this file.' },
};

const SCENARIOS: Readonly<Record<string, { readonly synopsis: string; readonly flags: FlagSpecs }>> = {
  authorize: { synopsis: 'Keep-alive authorize calls over a seeded intention set', flags: authorizeFlags },
};

export function loadtestHelp(): string {
  const scenarios = Object.entries(SCENARIOS).map(([name, s]) => `    ${name.padEnd(12)}${s.synopsis}`);
  const scenarioFlags = Object.entries(SCENARIOS).map(([name, s]) => `Options of ${name}:\n\n${flagHelp(s.flags)}`);
  return ['Usage: svc-agent loadtest <scenario> [options]', '', 'Scenarios:', ...scenarios, '', 'Options:', '', flagHelp(COMMON_FLAGS), '', ...scenarioFlags].join('\n');
}

export interface LoadtestIo {
  out(text: string): void;
  err(text: string): void;
  readonly isTty: boolean;
}

const systemIo: LoadtestIo = { out: (t) => void process.stdout.write(t), err: (t) => void process.stderr.write(t), isTty: process.stderr.isTTY === true };

export async function runLoadtest(argv: readonly string[], env: NodeJS.ProcessEnv, io: LoadtestIo = systemIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '-h' || name === '-help' || name === '--help' || rest.some((a) => a === '-h' || a === '-help' || a === '--help')) {
    io.out(`${loadtestHelp()}\n`);
    return 0;
  }
  const scenario = SCENARIOS[name];
  if (scenario === undefined) {
    io.err(`Unknown scenario ${JSON.stringify(name)}: one of ${Object.keys(SCENARIOS).join(', ')} (svc-agent loadtest --help)\n`);
    return 1;
  }
  try {
    const { values } = parseFlags(rest, { ...COMMON_FLAGS, ...scenario.flags });
    return await run(name, values, env, io);
  } catch (err) {
    io.err(`${isAgentError(err) ? err.message : err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

function durationMs(flag: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  const ms = parseDuration(String(value));
  if (ms === undefined || ms < 0) throw new ClientError(`invalid value ${JSON.stringify(value)} for flag -${flag}: expected a duration such as 10s`);
  return ms;
}

async function run(name: string, flags: Readonly<Record<string, unknown>>, env: NodeJS.ProcessEnv, io: LoadtestIo): Promise<number> {
  const addrs = (flags['http-addr'] as string[] | undefined) ?? [undefined];
  const targets = addrs.map((a) => targetFrom({ httpAddr: a, token: flags.token as string | undefined }, env));
  const brand = String(flags['header-brand'] ?? 'Svc');
  if (brand !== 'Svc' && brand !== 'Consul') throw new ClientError(`invalid value ${JSON.stringify(brand)} for flag -header-brand: Svc or Consul`);
  const measureMs = durationMs('duration', flags.duration, 10_000);
  const warmupMs = durationMs('warmup', flags.warmup, 2_000);
  const connections = Number(flags.connections ?? 64);
  if (connections < 1) throw new ClientError('-connections must be at least 1');
  const rateText = flags.rate as string | undefined;
  const rate = rateText === undefined ? undefined : Number(/^(\d+(?:\.\d+)?)(?:\/s)?$/.exec(rateText)?.[1] ?? NaN);
  if (rate !== undefined && !(rate > 0)) throw new ClientError(`invalid value ${JSON.stringify(rateText)} for flag -rate: expected requests per second, such as 5000/s`);

  const api = new ApiClient(targets[0]!);
  const token = targets[0]?.token;
  const headers: Record<string, string> = token === undefined ? {} : { Authorization: `Bearer ${token}` };
  const prefix = `lt-${randomBytes(3).toString('hex')}`;
  io.err(`loadtest ${name}: seeding under prefix ${prefix} ...\n`);
  const setup = await setUpAuthorize(api, prefix, flags, headers);
  let stopped = false;
  const onSignal = (): void => {
    if (stopped) process.exit(130);
    stopped = true;
    io.err('\nstopping: writing what was measured (Ctrl-C again to quit at once)\n');
  };
  process.on('SIGINT', onSignal);
  try {
    let turn = 0;
    const next = (): Buffer => setup.requests[turn++ % setup.requests.length] as Buffer;
    const channels = Array.from({ length: connections }, (_, i) => {
      const url = new URL(targets[i % targets.length]!.base);
      return new HttpChannel({ host: url.hostname, port: Number(url.port || 80) }, next);
    });
    if (warmupMs > 0) await drive({ channels, rate, until: realClock.now() + warmupMs, clock: realClock, record: () => undefined, stopped: () => stopped });
    const before = await counters(api);
    const recorder = new Recorder();
    const started = realClock.now();
    const cpuStart = process.cpuUsage();
    const ticker = setInterval(() => {
      const p = recorder.tick(Math.round((realClock.now() - started) / 1000));
      const line = `[${String(p.t).padStart(3)}s] ${p.requests.toLocaleString('en-US')} req/s  p50 ${(p.p50Us / 1000).toFixed(2)} ms  p99 ${(p.p99Us / 1000).toFixed(2)} ms  errors ${p.errors}`;
      io.err(io.isTty ? `\r${line}   ` : `${line}\n`);
    }, 1000);
    await drive({ channels, rate, from: started, until: started + measureMs, clock: realClock, record: (o, us) => recorder.record(o, us), stopped: () => stopped });
    clearInterval(ticker);
    const elapsedMs = realClock.now() - started;
    recorder.tick(Math.round(elapsedMs / 1000));
    const cpu = process.cpuUsage(cpuStart);
    for (const c of channels) c.close();
    const after = await counters(api);
    if (io.isTty) io.err('\n');
    const result = resultOf({ name, prefix, targets: targets.map((t) => t.base), connections, rate, measureMs, warmupMs, elapsedMs, recorder, cpuPct: ((cpu.user + cpu.system) / 1000 / elapsedMs) * 100, before, after, seeded: setup.seeded, stopped });
    io.out(summary(result));
    if (typeof flags.out === 'string') await writeFile(flags.out, `${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
    await setup.cleanup();
  }
}

/** The target's authorize counters (svc-agent's JSON metrics); undefined where it has none. */
async function counters(api: ApiClient): Promise<number | undefined> {
  const answer = await api.call('GET', '/v1/agent/metrics');
  if (answer.status !== 200) return undefined;
  const body = JSON.parse(answer.text) as { Counters?: { Name: string; Count: number }[] };
  const find = (n: string): number | undefined => body.Counters?.find((c) => c.Name === n)?.Count;
  const allowed = find('svc.connect.authorize.allowed');
  const denied = find('svc.connect.authorize.denied');
  return allowed === undefined || denied === undefined ? undefined : allowed + denied;
}

interface RunFacts {
  readonly name: string;
  readonly prefix: string;
  readonly targets: readonly string[];
  readonly connections: number;
  readonly rate: number | undefined;
  readonly measureMs: number;
  readonly warmupMs: number;
  readonly elapsedMs: number;
  readonly recorder: Recorder;
  readonly cpuPct: number;
  readonly before: number | undefined;
  readonly after: number | undefined;
  readonly seeded: number;
  readonly stopped: boolean;
}

export type LoadtestResult = ReturnType<typeof resultOf>;

function resultOf(f: RunFacts) {
  const h = f.recorder.total;
  const targetCounted = f.before === undefined || f.after === undefined ? null : f.after - f.before;
  return {
    schema: RESULT_SCHEMA,
    scenario: f.name,
    prefix: f.prefix,
    targets: f.targets,
    settings: { connections: f.connections, mode: f.rate === undefined ? 'closed' : 'open', rate: f.rate ?? null, durationMs: f.measureMs, warmupMs: f.warmupMs, seededIntentions: f.seeded },
    stoppedEarly: f.stopped,
    summary: {
      elapsedMs: Math.round(f.elapsedMs),
      requests: f.recorder.requests,
      ok: f.recorder.ok,
      errors: Object.fromEntries(f.recorder.errors),
      rps: Math.round((f.recorder.requests / f.elapsedMs) * 1000),
      latencyUs: { p50: h.percentile(50), p90: h.percentile(90), p99: h.percentile(99), p999: h.percentile(99.9), max: h.max, mean: Math.round(h.mean) },
    },
    series: f.recorder.series,
    distribution: h.distribution(),
    client: { cpuPct: Math.round(f.cpuPct), limit: f.cpuPct > 90 ? 'the load generator used a whole core: the client, not the target, may have been the limit' : null },
    crossCheck: { generatorAnswered: f.recorder.ok, targetCounted, agrees: targetCounted === null ? null : targetCounted === f.recorder.ok },
  };
}

function summary(r: LoadtestResult): string {
  const l = r.summary.latencyUs;
  const ms = (us: number): string => (us / 1000).toFixed(2);
  const rows = [
    ['requests', r.summary.requests.toLocaleString('en-US')],
    ['throughput', `${r.summary.rps.toLocaleString('en-US')} req/s (${r.settings.mode} loop${r.settings.rate === null ? '' : `, ${r.settings.rate}/s asked`})`],
    ['latency ms', `p50 ${ms(l.p50)}  p90 ${ms(l.p90)}  p99 ${ms(l.p99)}  p99.9 ${ms(l.p999)}  max ${ms(l.max)}`],
    ['errors', Object.keys(r.summary.errors).length === 0 ? 'none' : Object.entries(r.summary.errors).map(([k, v]) => `${k}: ${v}`).join(', ')],
    ['target counted', r.crossCheck.targetCounted === null ? 'n/a (no svc-agent metrics)' : `${r.crossCheck.targetCounted} decisions (${r.crossCheck.agrees ? 'agrees' : 'DIFFERS from'} the ${r.crossCheck.generatorAnswered} answered)`],
    ['client cpu', `${r.client.cpuPct}%${r.client.limit === null ? '' : ` (${r.client.limit})`}`],
  ];
  return `\n${r.scenario} against ${r.targets.join(', ')}, ${r.settings.connections} connections, ${(r.summary.elapsedMs / 1000).toFixed(1)} s\n${rows.map(([k, v]) => `  ${(k as string).padEnd(16)}${v}`).join('\n')}\n`;
}
