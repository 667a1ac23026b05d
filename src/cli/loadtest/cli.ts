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
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { LoadThreadData } from '../../loadgen/thread-data.js';
import { Aggregate } from '../../loadgen/aggregate.js';
import type { ThreadTick } from '../../loadgen/types.js';
import { epochClock } from '../../loadgen/scheduler.js';
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
  threads: { kind: 'int', doc: 'Generator threads (default: one per core but one).' },
};

const SCENARIOS: Readonly<Record<string, { readonly synopsis: string; readonly flags: FlagSpecs }>> = {
  authorize: { synopsis: 'Keep-alive authorize calls over a seeded intention set', flags: authorizeFlags },
  'connection-rate': { synopsis: 'A new TCP connection for every authorize call (Connection: close): connections per second', flags: authorizeFlags },
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
  const perConnection = name === 'connection-rate';
  const setup = await setUpAuthorize(api, prefix, flags, perConnection ? { ...headers, Connection: 'close' } : headers);
  const threads = Math.min(connections, Number(flags.threads ?? defaultThreads()));
  if (!(threads >= 1)) throw new ClientError('-threads must be at least 1');
  const workers: Worker[] = [];
  let stopped = false;
  const onSignal = (): void => {
    if (stopped) process.exit(130);
    stopped = true;
    for (const w of workers) w.postMessage('stop');
    io.err('\nstopping: writing what was measured (Ctrl-C again to quit at once)\n');
  };
  process.on('SIGINT', onSignal);
  try {
    const before = await counters(api);
    const aggregate = new Aggregate(threads);
    const warmupFrom = epochClock.now() + 100; // the threads' start-up
    const from = warmupFrom + warmupMs;
    const until = from + measureMs;
    let warmupOk = 0;
    const cpuStart = process.cpuUsage();
    const hostPorts = targets.map((t) => {
      const url = new URL(t.base);
      return { host: url.hostname, port: Number(url.port || 80) };
    });
    await Promise.all(
      Array.from({ length: threads }, (_, i) => {
        const share = Math.floor(connections / threads) + (i < connections % threads ? 1 : 0);
        const data: LoadThreadData = { targets: hostPorts, requests: setup.requests, connections: share, rate: rate === undefined ? undefined : rate / threads, warmupFrom, from, until, connectionPerRequest: perConnection, offset: Math.floor((i * setup.requests.length) / threads) };
        const worker = new Worker(workerFile(), { workerData: data });
        workers.push(worker);
        return new Promise<void>((resolve, reject) => {
          worker.on('message', (message: { type: string; tick?: ThreadTick; warmupOk?: number }) => {
            if (message.type === 'tick' && message.tick !== undefined) {
              const point = aggregate.add(message.tick);
              if (point !== undefined) {
                const line = `[${String(point.t).padStart(3)}s] ${point.requests.toLocaleString('en-US')} req/s  p50 ${(point.p50Us / 1000).toFixed(2)} ms  p99 ${(point.p99Us / 1000).toFixed(2)} ms  errors ${point.errors}`;
                io.err(io.isTty ? `\r${line}   ` : `${line}\n`);
              }
            } else if (message.type === 'done') {
              warmupOk += message.warmupOk ?? 0;
              resolve();
            }
          });
          worker.on('error', reject);
          worker.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`a load thread exited with code ${code}`))));
        });
      }),
    );
    const elapsedMs = Math.min(epochClock.now(), until) - from;
    const cpu = process.cpuUsage(cpuStart);
    const after = await counters(api);
    if (io.isTty) io.err('\n');
    const result = resultOf({ name, prefix, targets: targets.map((t) => t.base), connections, threads, rate, measureMs, warmupMs, elapsedMs, aggregate, warmupOk, cpuPct: ((cpu.user + cpu.system) / 1000 / (elapsedMs + warmupMs)) * 100, before, after, seeded: setup.seeded, stopped });
    io.out(summary(result));
    if (typeof flags.out === 'string') await writeFile(flags.out, `${JSON.stringify(result, null, 2)}\n`);
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
    for (const w of workers) void w.terminate();
    await setup.cleanup();
  }
}

/** One thread per core but one, which the target (or the rest of the machine) keeps. */
function defaultThreads(): number {
  return Math.max(1, availableParallelism() - 1);
}

/** The compiled worker, from this file's place in dist/ (or in src/ under vitest). */
function workerFile(): string {
  const here = fileURLToPath(import.meta.url);
  const root = resolve(dirname(here), '../../..');
  return join(here.endsWith('.js') ? root : join(root, 'dist'), 'workers', 'loadtest.worker.js');
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
  readonly threads: number;
  readonly aggregate: Aggregate;
  readonly warmupOk: number;
  readonly cpuPct: number;
  readonly before: number | undefined;
  readonly after: number | undefined;
  readonly seeded: number;
  readonly stopped: boolean;
}

export type LoadtestResult = ReturnType<typeof resultOf>;

function resultOf(f: RunFacts) {
  const a = f.aggregate;
  const h = a.total;
  const targetCounted = f.before === undefined || f.after === undefined ? null : f.after - f.before;
  const answered = a.ok + f.warmupOk;
  return {
    schema: RESULT_SCHEMA,
    scenario: f.name,
    prefix: f.prefix,
    targets: f.targets,
    settings: { connections: f.connections, threads: f.threads, mode: f.rate === undefined ? 'closed' : 'open', rate: f.rate ?? null, durationMs: f.measureMs, warmupMs: f.warmupMs, seededIntentions: f.seeded },
    stoppedEarly: f.stopped,
    summary: {
      elapsedMs: Math.round(f.elapsedMs),
      requests: a.requests,
      ok: a.ok,
      errors: Object.fromEntries(a.errors),
      rps: Math.round((a.requests / f.elapsedMs) * 1000),
      latencyUs: { p50: h.percentile(50), p90: h.percentile(90), p99: h.percentile(99), p999: h.percentile(99.9), max: h.max, mean: Math.round(h.mean) },
    },
    series: a.series,
    distribution: h.distribution(),
    limitedBy: limitOf(a.errors, f.cpuPct > 90 * f.threads),
    client: { cpuPct: Math.round(f.cpuPct), threads: f.threads, limit: f.cpuPct > 90 * f.threads ? 'the load generator kept its threads busy: the client, not the target, may have been the limit' : null },
    // The target's count spans the warm-up too (read before any load), so the generator's does.
    crossCheck: { generatorAnswered: answered, targetCounted, agrees: targetCounted === null ? null : targetCounted === answered },
  };
}

function summary(r: LoadtestResult): string {
  const l = r.summary.latencyUs;
  const ms = (us: number): string => (us / 1000).toFixed(2);
  const rows = [
    ['requests', r.summary.requests.toLocaleString('en-US')],
    ['throughput', `${r.summary.rps.toLocaleString('en-US')} ${r.scenario === 'connection-rate' ? 'connections/s' : 'req/s'} (${r.settings.mode} loop${r.settings.rate === null ? '' : `, ${r.settings.rate}/s asked`})`],
    ['limited by', r.limitedBy],
    ['latency ms', `p50 ${ms(l.p50)}  p90 ${ms(l.p90)}  p99 ${ms(l.p99)}  p99.9 ${ms(l.p999)}  max ${ms(l.max)}`],
    ['errors', Object.keys(r.summary.errors).length === 0 ? 'none' : Object.entries(r.summary.errors).map(([k, v]) => `${k}: ${v}`).join(', ')],
    ['target counted', r.crossCheck.targetCounted === null ? 'n/a (no svc-agent metrics)' : `${r.crossCheck.targetCounted} decisions, warm-up included (${r.crossCheck.agrees ? 'agrees with' : 'DIFFERS from'} the ${r.crossCheck.generatorAnswered} answered)`],
    ['client cpu', `${r.client.cpuPct}%${r.client.limit === null ? '' : ` (${r.client.limit})`}`],
  ];
  return `\n${r.scenario} against ${r.targets.join(', ')}, ${r.settings.connections} connections, ${(r.summary.elapsedMs / 1000).toFixed(1)} s\n${rows.map(([k, v]) => `  ${(k as string).padEnd(16)}${v}`).join('\n')}\n`;
}

/** What most likely capped the run: the generator's machine (ports, descriptors, CPU) or the target. */
function limitOf(errors: ReadonlyMap<string, number>, clientBusy: boolean): string {
  if (errors.has('EADDRNOTAVAIL')) return 'client ports: the generator ran out of local ports (TIME_WAIT; see ip_local_port_range)';
  if (errors.has('EMFILE') || errors.has('ENFILE')) return "file descriptors: the generator's open-files limit";
  if (clientBusy) return 'the client: the generator kept its threads busy';
  return 'the target';
}
