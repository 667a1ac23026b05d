// The HTTP transports on POST /v1/agent/connect/authorize (10,000 intentions), one load tool (wrk),
// rows alternated round by round and reported as medians with same-run ratios:
// - the agent on uWS against the bare-uWS ceiling and against itself with Prometheus off, and on
//   node:http against uWS;
// - with --before <main.js> (another build, e.g. main before a change), that build on uWS against
//   this one: the cost of a change on the hot path;
// - HTTPS (node:https): keep-alive, and a new TLS connection per request, each against a bare
//   node:https server answering a fixed body (tls-ceiling-server.ts).
// Run: node dist/bench/sizing/transports.js [--duration 10] [--warmup 2] [--rounds 3]
//      [--before path/to/main.js] [--only 'agent, uws']
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AGENT_MISSING, agentBuilt, startAgent } from '../support/agent.js';
import { parseHttpBenchArgs, type HttpBenchArgs } from '../support/args.js';
import { spawnServer, type ServerProcess } from '../support/child.js';
import type { LoadRequest, LoadResult, LoadTool } from '../support/load.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { BENCH_OUT } from '../support/paths.js';
import { pickLoadTool } from '../support/pick-tool.js';
import { freePort, LOOPBACK } from '../support/ports.js';
import { startCpuWatch } from '../support/proc-stats.js';
import { formatTable, round, writeJson } from '../support/report.js';
import { startCeiling } from '../support/servers.js';
import { median } from '../support/stats.js';
import { AUTHORIZE_BODY, seedAgent } from './authorize.js';

const TLS_CEILING = fileURLToPath(new URL('./tls-ceiling-server.js', import.meta.url));
const PATH = '/v1/agent/connect/authorize';

interface Tls {
  readonly certFile: string;
  readonly keyFile: string;
  readonly configFile: string;
  /** Turns the Prometheus collection off (telemetry.prometheus_retention_time 0s). */
  readonly metricsOffFile: string;
}

interface Row {
  readonly id: string;
  /** Starts the server and says where to send. */
  readonly start: () => Promise<{ server: ServerProcess; url: string }>;
  readonly method: 'PUT' | 'POST';
  readonly close?: boolean;
  readonly ratioTo?: readonly string[];
}

async function makeTls(): Promise<Tls> {
  const dir = join(BENCH_OUT, 'tls');
  await mkdir(dir, { recursive: true });
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'pipe' },
  );
  const configFile = join(dir, 'agent.json');
  await writeFile(configFile, JSON.stringify({ tls: { defaults: { cert_file: certFile, key_file: keyFile } } }));
  const metricsOffFile = join(dir, 'metrics-off.json');
  await writeFile(metricsOffFile, JSON.stringify({ telemetry: { prometheus_retention_time: '0s' } }));
  return { certFile, keyFile, configFile, metricsOffFile };
}

/** `transport` undefined: the build's own default (a --before build may predate the flag). */
async function seeded(
  transport: string | undefined,
  main?: string,
  extraArgs: readonly string[] = [],
): Promise<{ server: ServerProcess; url: string }> {
  const server = await startAgent(
    'dev',
    [...(transport === undefined ? [] : ['-http-transport', transport]), ...extraArgs],
    main,
  );
  await seedAgent(server.port).catch(async (err: unknown) => {
    await server.stop();
    throw err;
  });
  return { server, url: `http://${LOOPBACK}:${server.port}${PATH}` };
}

async function seededHttps(tls: Tls): Promise<{ server: ServerProcess; url: string }> {
  const httpsPort = await freePort();
  const server = await startAgent('dev', ['-https-port', String(httpsPort), '-config-file', tls.configFile]);
  await seedAgent(server.port).catch(async (err: unknown) => {
    await server.stop();
    throw err;
  });
  return { server, url: `https://${LOOPBACK}:${httpsPort}${PATH}` };
}

async function tlsCeiling(tls: Tls): Promise<{ server: ServerProcess; url: string }> {
  const port = await freePort();
  const server = await spawnServer({
    name: 'bare node:https',
    args: [TLS_CEILING, String(port), tls.certFile, tls.keyFile],
    port,
  });
  return { server, url: `https://${LOOPBACK}:${port}${PATH}` };
}

function rows(tls: Tls, before: string | undefined): Row[] {
  const list: Row[] = [
    {
      id: 'ceiling PUT (bare uWS)',
      method: 'PUT',
      start: async () => {
        const server = await startCeiling();
        return { server, url: `http://${LOOPBACK}:${server.port}${PATH}` };
      },
    },
    {
      id: 'agent, uws',
      method: 'POST',
      start: () => seeded('uws'),
      ratioTo: ['ceiling PUT (bare uWS)', 'agent, uws, metrics off'],
    },
    {
      id: 'agent, uws, metrics off',
      method: 'POST',
      start: () => seeded('uws', undefined, ['-config-file', tls.metricsOffFile]),
    },
    {
      id: 'agent, node:http',
      method: 'POST',
      start: () => seeded('node'),
      ratioTo: ['agent, uws', 'ceiling PUT (bare uWS)'],
    },
    { id: 'bare node:https', method: 'POST', start: () => tlsCeiling(tls) },
    {
      id: 'agent, https',
      method: 'POST',
      start: () => seededHttps(tls),
      ratioTo: ['bare node:https', 'agent, node:http'],
    },
    { id: 'close: bare node:https', method: 'POST', close: true, start: () => tlsCeiling(tls) },
    {
      id: 'close: agent, https',
      method: 'POST',
      close: true,
      start: () => seededHttps(tls),
      ratioTo: ['close: bare node:https'],
    },
  ];
  if (before !== undefined)
    list.splice(2, 0, { id: 'agent, uws, --before build', method: 'POST', start: () => seeded('uws', before) });
  if (before !== undefined)
    (list[1] as { ratioTo?: readonly string[] }).ratioTo = [
      'ceiling PUT (bare uWS)',
      'agent, uws, metrics off',
      'agent, uws, --before build',
    ];
  return list;
}

async function measure(
  tool: LoadTool,
  row: Row,
  args: HttpBenchArgs,
): Promise<{ result: LoadResult; serverCpuPct: number }> {
  const { server, url } = await row.start();
  try {
    const request: LoadRequest = { url, method: row.method, body: AUTHORIZE_BODY, close: row.close === true };
    const settings = { durationS: args.durationS, connections: args.connections, threads: args.threads };
    if (args.warmupS > 0) await tool.run(request, { ...settings, durationS: args.warmupS });
    const cpu = startCpuWatch(server.pid);
    const result = await tool.run(request, settings);
    return { result, serverCpuPct: cpu().serverPct };
  } finally {
    await server.stop();
  }
}

export async function runTransportsBench(
  args: HttpBenchArgs,
  before: string | undefined,
  only: string | undefined,
): Promise<void> {
  if (!agentBuilt()) throw new Error(AGENT_MISSING);
  const tool = await pickLoadTool(args.tool);
  const tls = await makeTls();
  const list = rows(tls, before).filter((row) => only === undefined || row.id.includes(only));
  const samples = new Map<string, { result: LoadResult; serverCpuPct: number }[]>(list.map((r) => [r.id, []]));
  for (let r = 1; r <= args.rounds; r++) {
    process.stderr.write(`round ${r}/${args.rounds}\n`);
    for (const row of list) {
      process.stderr.write(`  ${row.id} ...\n`);
      samples.get(row.id)?.push(await measure(tool, row, args));
    }
  }
  const rps = (id: string): number => median((samples.get(id) ?? []).map((s) => s.result.rps));
  const summary = list.map((row) => {
    const s = samples.get(row.id) ?? [];
    return {
      scenario: row.id,
      rps: rps(row.id),
      perRound: s.map((x) => Math.round(x.result.rps)).join(' '),
      p50Ms: median(s.map((x) => x.result.p50Ms)),
      p99Ms: median(s.map((x) => x.result.p99Ms)),
      serverCpuPct: median(s.map((x) => x.serverCpuPct)),
      errors: s.reduce((n, x) => n + x.result.errors + x.result.non2xx, 0),
      ratios: (row.ratioTo ?? [])
        .filter((to) => samples.has(to))
        .map((to) => `${(rps(row.id) / rps(to)).toFixed(3)}x ${to}`)
        .join('; '),
    };
  });
  const settings = `${tool.name} ${tool.version}, -t${args.threads} -c${args.connections}, ${args.warmupS}s warm-up + ${args.durationS}s per row, ${args.rounds} alternated round(s)`;
  process.stdout.write(`\nPOST ${PATH} by transport (${settings}); close rows: req/s = connections/s\n`);
  process.stdout.write(
    `${formatTable(
      ['scenario', 'req/s', 'per round', 'p50 ms', 'p99 ms', 'srv cpu%', 'err'],
      summary.map((x) => [x.scenario, x.rps, x.perRound, x.p50Ms, x.p99Ms, x.serverCpuPct, x.errors]),
    )}\n`,
  );
  for (const x of summary) if (x.ratios !== '') process.stdout.write(`${x.scenario}: ${x.ratios}\n`);
  const path = await writeJson('transports', {
    tool: { name: tool.name, version: tool.version },
    settings: args,
    before: before ?? null,
    rows: summary.map((x) =>
      Object.fromEntries(Object.entries(x).map(([k, v]) => [k, typeof v === 'number' ? round(v) : v])),
    ),
  });
  process.stdout.write(`wrote ${path}\n`);
}

if (isEntryPoint(import.meta.url)) {
  runMain(async () => {
    // --before <main.js> and --only <text> (rows whose name holds it) are this bench's own flags.
    const rest = process.argv.slice(2);
    const own = (flag: string): string | undefined => {
      const at = rest.indexOf(flag);
      if (at === -1) return undefined;
      const value = rest[at + 1];
      if (value === undefined) throw new Error(`${flag} wants a value`);
      rest.splice(at, 2);
      return value;
    };
    const before = own('--before');
    const only = own('--only');
    await runTransportsBench(parseHttpBenchArgs(rest), before, only);
  });
}
