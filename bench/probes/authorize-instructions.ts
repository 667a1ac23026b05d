// Instructions per request over HTTP, counted by callgrind: the agent on uWS answering authorize
// (one body, and 10,000 distinct bodies over its 10,000 intentions), KV GETs of one entry and KV PUTs (in memory and
// durable: the write path's guard, docs/decisions.md D18 on held writes), the bare-uWS ceiling
// answering the same requests (its GET, and its PUT sent the same bodies), and the minimal uWS
// authorize app (authorize-uws-minimal.ts) sent the same bodies: what the agent's own checks cost. Counts repeat run to
// run where times on this shared machine do not, so this is the figure to move when working on
// the HTTP path. Each server runs under `valgrind --tool=callgrind --instr-atstart=no`; after
// start-up, seeding and a warm-up, instrumentation is switched on and a dump taken after each
// batch of exactly N requests (callgrind_control, through vgdb), less a first dump of no request
// (what the process does between two dumps). A major GC landing in a batch adds tens of thousands
// a request to it, so read the median of the batches, and compare builds batch by batch.
// Run: node dist/bench/probes/authorize-instructions.js [--batches 5] [--requests 3000]
//      [--warmup 20000] [--connections 8] [--only agent] [--label this]
// Another build: SVC_BENCH_AGENT=/other/dist/src/cli/main.js ... --label before
import { execFile } from 'node:child_process';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { startAgent } from '../support/agent.js';
import { AGENT_MISSING, agentBuilt } from '../support/agent.js';
import { spawnServer, type ServerProcess } from '../support/child.js';
import { sendExactly } from '../support/exact-requests.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { AGENT_MAIN, BENCH_OUT, CEILING_SERVER } from '../support/paths.js';
import { freePort } from '../support/ports.js';
import { formatTable, writeJson } from '../support/report.js';
import { median } from '../support/stats.js';
import { AUTHORIZE_BODY, distinctAuthorizeBodies } from '../micro/authorize.js';
import { seedAgent } from '../sizing/authorize.js';

const run = promisify(execFile);
const UWS_MINIMAL = fileURLToPath(new URL('./authorize-uws-minimal.js', import.meta.url));
const PATH = '/v1/agent/connect/authorize';
const KV_PATH = '/v1/kv/bench/instructions';
// Node under valgrind starts in tens of seconds; the agent also loads its CA and workers.
const START_TIMEOUT_MS = 600_000;

interface Row {
  readonly id: string;
  readonly server: 'ceiling' | 'minimal' | 'agent';
  readonly method: 'GET' | 'PUT' | 'POST';
  readonly bodies: 'none' | 'one' | 'distinct';
  /** A KV row: the agent's state, and the key every PUT writes (bodies: distinct KV values). */
  readonly kv?: { readonly mode: 'dev' | 'durable'; readonly path: string };
}

const ROWS: readonly Row[] = [
  { id: 'bare uWS GET', server: 'ceiling', method: 'GET', bodies: 'none' },
  { id: 'bare uWS PUT, 10,000 bodies', server: 'ceiling', method: 'PUT', bodies: 'distinct' },
  { id: 'minimal uWS authorize, 10,000 bodies', server: 'minimal', method: 'POST', bodies: 'distinct' },
  { id: 'agent authorize, one body', server: 'agent', method: 'POST', bodies: 'one' },
  { id: 'agent authorize, 10,000 bodies', server: 'agent', method: 'POST', bodies: 'distinct' },
  {
    id: 'agent KV PUT, in memory',
    server: 'agent',
    method: 'PUT',
    bodies: 'distinct',
    kv: { mode: 'dev', path: KV_PATH },
  },
  {
    // A held key's entry rendered (its lock row looked up beside it), docs/decisions.md#sessions.
    id: 'agent KV GET, in memory',
    server: 'agent',
    method: 'GET',
    bodies: 'none',
    kv: { mode: 'dev', path: KV_PATH },
  },
  {
    id: 'agent KV PUT, durable',
    server: 'agent',
    method: 'PUT',
    bodies: 'distinct',
    kv: { mode: 'durable', path: KV_PATH },
  },
];

function bodiesOf(row: Row): string[] {
  if (row.bodies === 'none') return [];
  return row.bodies === 'one' ? [AUTHORIZE_BODY] : distinctAuthorizeBodies();
}

/** The total instructions of a callgrind dump (its `totals:` or `summary:` line). */
async function dumpTotal(file: string): Promise<number> {
  const text = await readFile(file, 'utf8');
  const m = /^(?:totals|summary): (\d+)/m.exec(text);
  if (m?.[1] === undefined) throw new Error(`${file}: no totals line`);
  return Number(m[1]);
}

async function callgrindControl(pid: number, option: string): Promise<void> {
  await run('callgrind_control', [option, String(pid)], { timeout: 120_000 });
}

async function startUnderCallgrind(row: Row, outFile: string): Promise<ServerProcess> {
  const wrapper = ['valgrind', '--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${outFile}`];
  if (row.server === 'agent') {
    const wrapped = { command: wrapper, startTimeoutMs: START_TIMEOUT_MS };
    const agent = await startAgent(row.kv?.mode ?? 'dev', [], undefined, wrapped);
    if (row.kv !== undefined) {
      // A GET reads the entry one PUT wrote (a missing key would answer 404).
      if (row.method === 'GET')
        await fetch(`http://127.0.0.1:${agent.port}${row.kv.path}`, { method: 'PUT', body: AUTHORIZE_BODY });
      return agent;
    }
    try {
      await seedAgent(agent.port);
    } catch (err) {
      await agent.stop();
      throw new Error(
        `seeding: ${err instanceof Error ? err.message : String(err)}\n--- agent ---\n${agent.output()}`,
        {
          cause: err,
        },
      );
    }
    return agent;
  }
  const port = await freePort();
  return spawnServer({
    name: `${row.server} under callgrind`,
    args: [row.server === 'minimal' ? UWS_MINIMAL : CEILING_SERVER, String(port)],
    port,
    wrapper,
    startTimeoutMs: START_TIMEOUT_MS,
  });
}

interface Measured {
  readonly id: string;
  /** Instructions per request of each batch, in order; the idle dump's instructions subtracted. */
  readonly perRequest: readonly number[];
  /** What the process did between two dumps with no request at all. */
  readonly idle: number;
  readonly median: number;
}

interface Settings {
  readonly batches: number;
  readonly size: number;
  readonly warmup: number;
  readonly connections: number;
  /** Names the run's folder of dumps (.bench-out/callgrind/<label>/), so two builds can be counted at once. */
  readonly label: string;
}

async function measureRow(row: Row, { batches, size, warmup, connections, label }: Settings): Promise<Measured> {
  const dir = join(BENCH_OUT, 'callgrind', label, row.id.replace(/[^a-z0-9]+/gi, '-'));
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const server = await startUnderCallgrind(row, join(dir, 'callgrind.out'));
  try {
    const send = async (count: number): Promise<void> => {
      if (count === 0) return;
      const statuses = await sendExactly({
        port: server.port,
        method: row.method,
        path: row.kv?.path ?? PATH,
        bodies: bodiesOf(row),
        count,
        connections,
      });
      if (statuses.get(200) !== count) throw new Error(`${row.id}: answers ${JSON.stringify([...statuses])}`);
    };
    /** Sends `count` requests, dumps, and reads the dump's total. */
    const batch = async (count: number): Promise<number> => {
      const before = new Set(await readdir(dir));
      await send(count);
      await callgrindControl(server.pid, '--dump');
      const dumped = (await readdir(dir)).filter((f) => !before.has(f));
      if (dumped.length !== 1) throw new Error(`${row.id}: expected one new dump, found ${dumped.join(', ')}`);
      return dumpTotal(join(dir, dumped[0] as string));
    };
    process.stderr.write(`  ${row.id}: warm-up, ${warmup} requests\n`);
    await send(warmup);
    await callgrindControl(server.pid, '--instr=on');
    await callgrindControl(server.pid, '--zero');
    const idle = await batch(0);
    const perRequest: number[] = [];
    for (let b = 0; b < batches; b++) {
      const total = await batch(size);
      perRequest.push((total - idle) / size);
      process.stderr.write(`    ${size} requests: ${total} instructions\n`);
    }
    return { id: row.id, perRequest, idle, median: median(perRequest) };
  } catch (err) {
    throw new Error(
      `${row.id}: ${err instanceof Error ? err.message : String(err)}\n--- server ---\n${server.output()}`,
      {
        cause: err,
      },
    );
  } finally {
    await server.stop();
  }
}

export async function runAuthorizeInstructions(argv: readonly string[]): Promise<Measured[]> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      batches: { type: 'string', default: '5' },
      requests: { type: 'string', default: '3000' },
      warmup: { type: 'string', default: '20000' },
      connections: { type: 'string', default: '8' },
      only: { type: 'string' },
      label: { type: 'string', default: 'this' },
    },
  });
  if (!agentBuilt()) throw new Error(AGENT_MISSING);
  const batches = Math.max(1, Number(values.batches));
  const size = Math.max(1, Number(values.requests));
  const settings = {
    batches,
    size,
    warmup: Number(values.warmup),
    connections: Number(values.connections),
    label: values.label,
  };
  const rows = ROWS.filter((r) => values.only === undefined || r.id.includes(values.only));
  const results: Measured[] = [];
  for (const row of rows) results.push(await measureRow(row, settings));
  const getCeiling = results.find((r) => r.id === 'bare uWS GET')?.median;
  const table = formatTable(
    ['row', 'Ir/req median', 'min', 'max', 'idle Ir', 'x bare GET'],
    results.map((r) => [
      r.id,
      Math.round(r.median),
      Math.round(Math.min(...r.perRequest)),
      Math.round(Math.max(...r.perRequest)),
      r.idle,
      getCeiling === undefined ? '' : (r.median / getCeiling).toFixed(2),
    ]),
  );
  process.stdout.write(
    `\ninstructions per request under callgrind (${PATH}, ${KV_PATH}; keep-alive, ${batches} batches of ${size})\n${table}\n`,
  );
  const path = await writeJson(`authorize-instructions-${values.label}`, {
    ...settings,
    agent: AGENT_MAIN,
    rows: results,
  });
  process.stdout.write(`wrote ${path}\n`);
  return results;
}

if (isEntryPoint(import.meta.url)) {
  runMain(async () => {
    await runAuthorizeInstructions(process.argv.slice(2));
  });
}
