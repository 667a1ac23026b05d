// The mesh's public listener on one core: CPU per accepted mTLS connection and bulk MB per
// CPU-second, svc-agent's sidecar (`connect proxy`, its agent's authorize and the app connection
// included) against HAProxy (Debian, nbthread 1, mode tcp), a Go crypto/tls peer (GOMAXPROCS=1) and
// a naive Node terminator (no authorize), in the same run. Each server runs on core 0, with the
// agent there too; `openssl s_time -new` (a full handshake per connection, with web's mesh leaf)
// and the bulk client run on core 1. CPU is user+sys from /proc of the server's processes, per
// connection or per MB; rounds alternate the servers, medians reported. Also: authorize's latency
// in-process (an embedded agent) against HTTP to the local agent.
import { writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createAgent } from '../../src/agent/index.js';
import { loadConfig } from '../../src/config/load.js';
import { InProcessMeshSource } from '../../src/sdk/in-process-source.js';
import { HttpMeshSource, type MeshSource } from '../../src/sdk/mesh-source.js';
import { startAgent } from '../support/agent.js';
import { spawnServer, type ServerProcess } from '../support/child.js';
import { buildGoPeer } from '../support/go-peer.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { AGENT_MAIN, BENCH_OUT } from '../support/paths.js';
import { freePort, LOOPBACK } from '../support/ports.js';
import { readCpuSeconds } from '../support/proc-stats.js';
import { formatTable, round, writeJson } from '../support/report.js';
import { runCommand } from '../support/run-command.js';
import { median, quantileSorted } from '../support/stats.js';

const DEFAULT_ROUNDS = 3;
/** Seconds of `s_time -new` per server per round: a few thousand handshakes on this CPU. */
const DEFAULT_SECONDS = 8;
/** MB through one connection per server per round. */
const DEFAULT_MEGABYTES = 400;
const AUTHORIZE_CALLS = 5_000;
const SERVER_CORE = ['taskset', '-c', '0'];
const CLIENT_CORE = ['taskset', '-c', '1'];
const here = (file: string): string => fileURLToPath(new URL(file, import.meta.url));

interface Terminator {
  readonly name: string;
  readonly port: number;
  /** Every process whose CPU the terminator costs (the sidecar's agent with it). */
  readonly pids: readonly number[];
  stop(): Promise<void>;
}

interface Files {
  readonly roots: string;
  readonly clientCert: string;
  readonly clientKey: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly haproxyCrt: string;
}

async function call(agentUrl: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${agentUrl}${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text === '' ? undefined : JSON.parse(text);
}

async function meshFiles(agentUrl: string, dir: string): Promise<Files> {
  await mkdir(dir, { recursive: true });
  const roots = (await call(agentUrl, 'GET', '/v1/agent/connect/ca/roots')) as { Roots: { RootCert: string }[] };
  const leaf = async (service: string): Promise<{ CertPEM: string; PrivateKeyPEM: string }> =>
    (await call(agentUrl, 'GET', `/v1/agent/connect/ca/leaf/${service}`)) as { CertPEM: string; PrivateKeyPEM: string };
  const web = await leaf('web');
  const db = await leaf('db');
  const files: Files = {
    roots: join(dir, 'roots.pem'),
    clientCert: join(dir, 'web.pem'),
    clientKey: join(dir, 'web.key'),
    serverCert: join(dir, 'db.pem'),
    serverKey: join(dir, 'db.key'),
    haproxyCrt: join(dir, 'db-haproxy.pem'),
  };
  await writeFile(files.roots, roots.Roots.map((r) => r.RootCert).join('\n'));
  await writeFile(files.clientCert, web.CertPEM);
  await writeFile(files.clientKey, web.PrivateKeyPEM, { mode: 0o600 });
  await writeFile(files.serverCert, db.CertPEM);
  await writeFile(files.serverKey, db.PrivateKeyPEM, { mode: 0o600 });
  await writeFile(files.haproxyCrt, `${db.CertPEM}\n${db.PrivateKeyPEM}`, { mode: 0o600 });
  return files;
}

const asTerminator = (server: ServerProcess, extraPids: readonly number[] = []): Terminator => ({
  name: server.name,
  port: server.port,
  pids: [server.pid, ...extraPids],
  stop: () => server.stop(),
});

async function startTerminators(agent: ServerProcess, agentUrl: string, appPort: number, files: Files, dir: string) {
  const started: Terminator[] = [];
  const proxyPort = await freePort();
  await call(agentUrl, 'PUT', '/v1/agent/service/register', {
    Name: 'db',
    Port: appPort,
    Connect: {
      SidecarService: {
        Port: proxyPort,
        Checks: [{ Name: 'proxy up', TTL: '1h', Status: 'passing' }],
        Proxy: { Config: { bind_address: LOOPBACK } },
      },
    },
  });
  const proxy = await spawnServer({
    name: 'svc-agent connect proxy',
    args: [AGENT_MAIN, 'connect', 'proxy', '-sidecar-for', 'db', '-http-addr', agentUrl],
    port: proxyPort,
    wrapper: SERVER_CORE,
  });
  started.push(asTerminator(proxy, [agent.pid]));

  const haproxyPort = await freePort();
  const config = join(dir, 'haproxy.cfg');
  await writeFile(
    config,
    [
      'global',
      '  nbthread 1',
      '  maxconn 4000',
      'defaults',
      '  mode tcp',
      '  timeout connect 5s',
      '  timeout client 60s',
      '  timeout server 60s',
      'frontend mesh',
      `  bind ${LOOPBACK}:${haproxyPort} ssl crt ${files.haproxyCrt} ca-file ${files.roots} verify required`,
      '  default_backend app',
      'backend app',
      `  server app ${LOOPBACK}:${appPort}`,
      '',
    ].join('\n'),
  );
  try {
    const haproxy = await spawnServer({
      name: 'HAProxy',
      program: 'haproxy',
      args: ['-db', '-f', config],
      port: haproxyPort,
      wrapper: SERVER_CORE,
    });
    started.push(asTerminator(haproxy));
  } catch (err) {
    process.stdout.write(`HAProxy skipped: ${(err as Error).message}\n`);
  }

  try {
    const binary = await buildGoPeer('mesh-tls-go');
    const goPort = await freePort();
    const go = await spawnServer({
      name: 'Go crypto/tls',
      program: binary,
      args: [String(goPort), files.serverCert, files.serverKey, files.roots, `${LOOPBACK}:${appPort}`],
      port: goPort,
      wrapper: SERVER_CORE,
      env: { GOMAXPROCS: '1' },
    });
    started.push(asTerminator(go));
  } catch (err) {
    process.stdout.write(`${(err as Error).message}\n`);
  }

  const naivePort = await freePort();
  const naive = await spawnServer({
    name: 'naive Node tls',
    args: [
      here('./mesh-naive-server.js'),
      String(naivePort),
      files.serverCert,
      files.serverKey,
      files.roots,
      String(appPort),
    ],
    port: naivePort,
    wrapper: SERVER_CORE,
  });
  started.push(asTerminator(naive));
  return started;
}

const cpuOf = (pids: readonly number[]): number => pids.reduce((sum, pid) => sum + (readCpuSeconds(pid) ?? NaN), 0);

/** `s_time -new` for `seconds`: connections made and the terminator's CPU µs per connection. */
async function handshakes(t: Terminator, files: Files, seconds: number): Promise<{ perSecond: number; cpuUs: number }> {
  const before = cpuOf(t.pids);
  const [command, ...prefix] = CLIENT_CORE;
  const run = await runCommand(command!, [
    ...prefix,
    'openssl',
    's_time',
    '-connect',
    `${LOOPBACK}:${t.port}`,
    '-new',
    '-time',
    String(seconds),
    '-cert',
    files.clientCert,
    '-key',
    files.clientKey,
    '-CAfile',
    files.roots,
  ]);
  const after = cpuOf(t.pids);
  const made = /(\d+) connections in (\d+) real seconds/.exec(run.stdout);
  if (made === null) throw new Error(`s_time against ${t.name} printed no count: ${run.stdout}${run.stderr}`);
  const count = Number(made[1]);
  return { perSecond: count / Number(made[2]), cpuUs: ((after - before) / count) * 1e6 };
}

/** `megabytes` MB through one connection: MB per CPU-second of the terminator. */
async function bulk(t: Terminator, files: Files, megabytes: number): Promise<number> {
  const before = cpuOf(t.pids);
  const [command, ...prefix] = CLIENT_CORE;
  const run = await runCommand(command!, [
    ...prefix,
    process.execPath,
    here('./mesh-bulk-client.js'),
    String(t.port),
    files.clientCert,
    files.clientKey,
    files.roots,
    String(megabytes),
  ]);
  const after = cpuOf(t.pids);
  if (run.code !== 0) throw new Error(`bulk client against ${t.name} failed: ${run.stderr}`);
  return Number(run.stdout.trim()) / 1e6 / (after - before);
}

/**
 * p50/p99 µs of authorize asked through `source`, one call at a time; `fresh`: each call from a
 * client not seen before (the SDK asks the agent), else one client again (its decision reused).
 */
async function authorizeLatency(
  source: MeshSource,
  clientUri: string,
  fresh: boolean,
): Promise<{ p50: number; p99: number }> {
  const times: number[] = [];
  for (let i = 0; i < AUTHORIZE_CALLS; i++) {
    const start = process.hrtime.bigint();
    const decision = await source.authorize('db', fresh ? `${clientUri}-${i}` : clientUri, '01');
    times.push(Number(process.hrtime.bigint() - start) / 1e3);
    if (!decision.authorized) throw new Error(`authorize refused web -> db: ${decision.reason}`);
  }
  times.sort((a, b) => a - b);
  return { p50: quantileSorted(times, 0.5), p99: quantileSorted(times, 0.99) };
}

export async function runMeshCpuBench(rounds: number, seconds: number, megabytes: number): Promise<void> {
  const dir = join(BENCH_OUT, 'mesh-cpu');
  const agent = await startAgent('dev', [], AGENT_MAIN, { command: SERVER_CORE, startTimeoutMs: 15_000 });
  const agentUrl = `http://${LOOPBACK}:${agent.port}`;
  const appPort = await freePort();
  const app = await spawnServer({
    name: 'app',
    args: [here('./mesh-app.js'), String(appPort)],
    port: appPort,
    wrapper: CLIENT_CORE,
  });
  const terminators: Terminator[] = [];
  try {
    const files = await meshFiles(agentUrl, dir);
    terminators.push(...(await startTerminators(agent, agentUrl, appPort, files, dir)));
    const samples = new Map<string, { cpuUs: number[]; perSecond: number[]; mbPerCpuS: number[] }>(
      terminators.map((t) => [t.name, { cpuUs: [], perSecond: [], mbPerCpuS: [] }]),
    );
    for (let r = 0; r < rounds; r++) {
      // Alternate the order, so no server always runs first (or last) in a round.
      const order = r % 2 === 0 ? terminators : [...terminators].reverse();
      for (const t of order) {
        const s = samples.get(t.name)!;
        const h = await handshakes(t, files, seconds);
        s.cpuUs.push(h.cpuUs);
        s.perSecond.push(h.perSecond);
        s.mbPerCpuS.push(await bulk(t, files, megabytes));
        process.stdout.write(
          `  round ${r + 1} ${t.name}: ${round(h.cpuUs)} µs CPU/conn, ${round(h.perSecond)} conn/s, ${round(s.mbPerCpuS.at(-1)!)} MB/CPU-s\n`,
        );
      }
    }
    const medians = [...samples].map(([name, s]) => ({
      name,
      cpuUs: median(s.cpuUs),
      perSecond: median(s.perSecond),
      mbPerCpuS: median(s.mbPerCpuS),
    }));
    const of = (name: string) => medians.find((m) => m.name === name);
    const haproxy = of('HAProxy');
    const naive = of('naive Node tls');
    const ratio = (a: number, b: number | undefined): string => (b === undefined ? '-' : `${(a / b).toFixed(2)}x`);
    const table = formatTable(
      ['server (core 0)', 'CPU µs/conn', 'conn/s', 'x HAProxy', 'x naive Node', 'MB/CPU-s', 'x HAProxy'],
      medians.map((m) => [
        m.name,
        round(m.cpuUs),
        round(m.perSecond),
        ratio(m.cpuUs, haproxy?.cpuUs),
        ratio(m.cpuUs, naive?.cpuUs),
        round(m.mbPerCpuS),
        ratio(m.mbPerCpuS, haproxy?.mbPerCpuS),
      ]),
    );
    process.stdout.write(
      `\nmesh public listener, medians of ${rounds} rounds (s_time -new ${seconds} s; ${megabytes} MB through one connection)\n${table}\n`,
    );

    // Authorize's share: the sidecar asks its agent over HTTP; an embedded agent answers in-process.
    const webUri = ((await call(agentUrl, 'GET', '/v1/agent/connect/ca/leaf/web')) as { ServiceURI: string })
      .ServiceURI;
    const overHttp = new HttpMeshSource({ address: agentUrl });
    const http = await authorizeLatency(overHttp, webUri, true);
    const httpReused = await authorizeLatency(overHttp, webUri, false);
    overHttp.close();
    const embedded = await createAgent(loadConfig({ files: [], flags: {}, dev: true }));
    // Both agents decide by their default (ACLs off: allow), so the two paths differ only in transport.
    const inProcess = await authorizeLatency(new InProcessMeshSource(embedded), webUri, true);
    await embedded.close();
    process.stdout.write(
      `\nauthorize per connection (${AUTHORIZE_CALLS} calls, one at a time): HTTP to the local agent p50 ${round(http.p50)} µs p99 ${round(http.p99)} µs (a client seen before, its decision reused while the intentions stand: p50 ${round(httpReused.p50)} µs p99 ${round(httpReused.p99)} µs); in-process p50 ${round(inProcess.p50)} µs p99 ${round(inProcess.p99)} µs\n`,
    );
    const path = await writeJson('mesh-cpu', {
      rounds,
      seconds,
      megabytes,
      medians,
      authorize: { http, httpReused, inProcess },
    });
    process.stdout.write(`wrote ${path}\n`);
  } finally {
    for (const t of terminators) await t.stop();
    await app.stop();
    await agent.stop();
  }
}

if (isEntryPoint(import.meta.url)) {
  runMain(async () => {
    const { values } = parseArgs({
      options: { rounds: { type: 'string' }, seconds: { type: 'string' }, megabytes: { type: 'string' } },
    });
    const positive = (text: string | undefined, fallback: number, flag: string): number => {
      const n = Number(text ?? fallback);
      if (!Number.isInteger(n) || n < 1) throw new Error(`--${flag} must be a positive integer, got ${text}`);
      return n;
    };
    await runMeshCpuBench(
      positive(values.rounds, DEFAULT_ROUNDS, 'rounds'),
      positive(values.seconds, DEFAULT_SECONDS, 'seconds'),
      positive(values.megabytes, DEFAULT_MEGABYTES, 'megabytes'),
    );
  });
}
