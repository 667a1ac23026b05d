// `GET /v1/health/connect/<service>?passing` with 1,000 mesh instances (each on its own node, a
// passing check each), against `GET /v1/catalog/services` on the same agent: requests/s and p99,
// rounds alternating the two rows, medians reported. What a mesh client asks on every refresh; the
// catalog does not move here, so after the first request each row is its kept body (src/http/render-cache.ts).
// Run: node dist/bench/sizing/catalog.js [--duration 10] [--warmup 2] [--rounds 3] [--connections 16]
import { readFileSync } from 'node:fs';
import { AGENT_MISSING, agentBuilt, startAgent } from '../support/agent.js';
import { parseHttpBenchArgs } from '../support/args.js';
import type { LoadRequest, LoadResult } from '../support/load.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { pickLoadTool } from '../support/pick-tool.js';
import { startCpuWatch } from '../support/proc-stats.js';
import { waitForQuiet } from '../support/quiet.js';
import { formatTable, round, writeJson } from '../support/report.js';
import { median } from '../support/stats.js';

const INSTANCES = 1000;
const SERVICE = 'web';
// Registrations in flight while loading: enough to hide the round trip, few enough not to queue.
const REGISTER_IN_FLIGHT = 16;

type RowId = 'health/connect ?passing' | 'catalog/services';

interface Sample {
  result: LoadResult;
  serverCpuPct: number;
  otherCpuPct: number;
}

export function loadavg(): string {
  return readFileSync('/proc/loadavg', 'utf8').trim();
}

/** Instance `i`: a Connect-native `web` on node `bench-<i>`, with a passing service check. */
function registration(i: number): unknown {
  return {
    Node: `bench-${i}`,
    Address: `10.0.${Math.floor(i / 250)}.${i % 250}`,
    NodeMeta: { rack: `r${i % 8}` },
    Service: {
      ID: `${SERVICE}-${i}`,
      Service: SERVICE,
      Tags: ['v1'],
      Port: 8080,
      Meta: { version: '1' },
      Connect: { Native: true },
    },
    Check: { CheckID: `${SERVICE}-${i}-http`, Name: 'http', ServiceID: `${SERVICE}-${i}`, Status: 'passing' },
  };
}

async function registerAll(port: number): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < INSTANCES; i = next++) {
      const res = await fetch(`http://127.0.0.1:${port}/v1/catalog/register`, {
        method: 'PUT',
        body: JSON.stringify(registration(i)),
      });
      if (res.status !== 200) throw new Error(`register ${i}: ${res.status} ${await res.text()}`);
    }
  };
  await Promise.all(Array.from({ length: REGISTER_IN_FLIGHT }, worker));
}

/** The probe: 200, and the connect answer holds every instance (else the row measures something else). */
async function probe(request: LoadRequest, expectEntries?: number): Promise<number> {
  const res = await fetch(request.url);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${request.url} answered ${res.status}: ${text.slice(0, 200)}`);
  if (expectEntries !== undefined) {
    const entries = (JSON.parse(text) as unknown[]).length;
    if (entries !== expectEntries) throw new Error(`${request.url} listed ${entries}, not ${expectEntries}`);
  }
  return Buffer.byteLength(text);
}

export async function runCatalogBench(argv: readonly string[]): Promise<Record<string, unknown>> {
  if (!agentBuilt()) throw new Error(AGENT_MISSING);
  const args = parseHttpBenchArgs(argv);
  const tool = await pickLoadTool(args.tool);
  const rounds = Math.max(2, args.rounds);
  const settings = { durationS: args.durationS, connections: args.connections, threads: args.threads };
  const loadBefore = loadavg();
  process.stderr.write(`catalog bench: ${tool.name} ${tool.version}, -c${args.connections}, ${rounds} rounds\n`);

  const agent = await startAgent('dev');
  const samples: Record<RowId, Sample[]> = { 'health/connect ?passing': [], 'catalog/services': [] };
  const bodyBytes: Partial<Record<RowId, number>> = {};
  try {
    await registerAll(agent.port);
    const requests: Record<RowId, LoadRequest> = {
      'health/connect ?passing': {
        url: `http://127.0.0.1:${agent.port}/v1/health/connect/${SERVICE}?passing`,
        method: 'GET',
      },
      'catalog/services': { url: `http://127.0.0.1:${agent.port}/v1/catalog/services`, method: 'GET' },
    };
    bodyBytes['health/connect ?passing'] = await probe(requests['health/connect ?passing'], INSTANCES);
    bodyBytes['catalog/services'] = await probe(requests['catalog/services']);
    const ids = Object.keys(requests) as RowId[];
    for (let r = 0; r < rounds; r++) {
      for (const id of r % 2 === 0 ? ids : [...ids].reverse()) {
        if (args.quietWaitS > 0) await waitForQuiet(args.quietWaitS * 1000);
        if (args.warmupS > 0) await tool.run(requests[id], { ...settings, durationS: args.warmupS });
        const cpu = startCpuWatch(agent.pid);
        const result = await tool.run(requests[id], settings);
        const { serverPct, otherPct } = cpu();
        samples[id].push({ result, serverCpuPct: serverPct, otherCpuPct: otherPct });
        process.stderr.write(`  round ${r + 1} ${id}: ${Math.round(result.rps)} req/s, p99 ${result.p99Ms} ms\n`);
      }
    }
  } finally {
    await agent.stop();
  }

  const loadAfter = loadavg();
  const summary = (id: RowId) => {
    const s = samples[id];
    return {
      row: id,
      rps: median(s.map((x) => x.result.rps)),
      p50Ms: median(s.map((x) => x.result.p50Ms)),
      p99Ms: median(s.map((x) => x.result.p99Ms)),
      bodyBytes: bodyBytes[id] ?? Number.NaN,
      serverCpuPct: median(s.map((x) => x.serverCpuPct)),
      otherCpuPct: median(s.map((x) => x.otherCpuPct)),
      errors: s.reduce((n, x) => n + x.result.errors, 0),
      non2xx: s.reduce((n, x) => n + x.result.non2xx, 0),
    };
  };
  const connect = summary('health/connect ?passing');
  const services = summary('catalog/services');
  const ratio = connect.rps / services.rps;
  const table = formatTable(
    ['row', 'req/s', 'p50 ms', 'p99 ms', 'ratio', 'body B', 'srv cpu%', 'other cpu%', 'err', 'non2xx'],
    [connect, services].map((x) => [
      x.row,
      x.rps,
      x.p50Ms,
      x.p99Ms,
      x === connect ? ratio : 1,
      x.bodyBytes,
      x.serverCpuPct,
      x.otherCpuPct,
      x.errors,
      x.non2xx,
    ]),
  );
  process.stdout.write(
    `\nhealth/connect with ${INSTANCES} instances vs catalog/services (${tool.name}, -c${args.connections}, ` +
      `median of ${rounds} alternated rounds)\n${table}\n/proc/loadavg before: ${loadBefore}; after: ${loadAfter}\n`,
  );
  const report = {
    tool: tool.name,
    rounds,
    settings: args,
    instances: INSTANCES,
    loadavg: { before: loadBefore, after: loadAfter },
    rows: [connect, services].map((x) =>
      Object.fromEntries(Object.entries(x).map(([k, v]) => [k, typeof v === 'number' ? round(v) : v])),
    ),
    ratio: round(ratio),
  };
  process.stdout.write(`wrote ${await writeJson('catalog', report)}\n`);
  return report;
}

if (isEntryPoint(import.meta.url)) runMain(async () => void (await runCatalogBench(process.argv.slice(2))));
