// Blocking-query fan-out: park N (15,000) blocking GETs on one key, measure what each parked query
// costs the server in RSS (agent target <= 1.5 KiB), then PUT the key once and time until the
// first and the LAST of them has its complete response (agent target <= 300 ms). The bare-uWS
// ceiling runs the same steps first: the least parking and waking can cost on this machine.
// Run: node dist/bench/sizing/fanout.js [--queries 15000]
import { connect } from 'node:net';
import { AGENT_MISSING, agentBuilt, startAgent } from '../support/agent.js';
import { parseHttpBenchArgs } from '../support/args.js';
import type { ServerProcess } from '../support/child.js';
import { FANOUT_KEY } from '../support/fixtures.js';
import { ResponseParser, type ParsedResponse } from '../support/http-response.js';
import { kvUrl, probe, putKey } from '../support/kv-client.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { parkQueries, type ParkedQueries } from '../support/parked-queries.js';
import { LOOPBACK } from '../support/ports.js';
import { openFilesLimit, startCpuWatch, waitRssSettled } from '../support/proc-stats.js';
import { waitForQuiet } from '../support/quiet.js';
import { brief, formatTable, round, writeJson, type Cell } from '../support/report.js';
import { startCeiling } from '../support/servers.js';
import { quantileSorted } from '../support/stats.js';

const TARGET_KIB_PER_QUERY = 1.5;
const TARGET_LAST_MS = 300;
// Far longer than parking 15k sockets takes (a few seconds), so none times out before the PUT.
const WAIT = '5m';
// After the last request is written the agent may still be reading the tail of them; a query it
// reads after the PUT would answer at once and flatter the wake-up time. One second is ample.
const PARK_SETTLE_MS = 1000;
const WAKE_TIMEOUT_MS = 30_000;
// Descriptors this process needs besides the parked sockets (stdio, the PUT socket, wrk scripts...).
const FD_HEADROOM = 200;

/**
 * Connects the writer's socket ahead of time, so the timed PUT pays no connect; the returned
 * function sends one PUT of `value` on it and resolves with the response.
 */
async function openPutSocket(port: number): Promise<(value: string) => Promise<ParsedResponse>> {
  const socket = connect({ host: LOOPBACK, port, noDelay: true });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return (value) =>
    new Promise((resolve, reject) => {
      const parser = new ResponseParser();
      socket.on('data', (chunk: Buffer) => {
        try {
          const response = parser.feed(chunk);
          if (response === undefined) return;
          socket.destroy();
          resolve(response);
        } catch (err) {
          socket.destroy();
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      });
      socket.once('error', reject);
      const head = `PUT /v1/kv/${FANOUT_KEY} HTTP/1.1\r\nHost: ${LOOPBACK}:${port}\r\nContent-Length: ${Buffer.byteLength(value)}`;
      socket.write(`${head}\r\n\r\n${value}`);
    });
}

export interface FanoutResult {
  queries: number;
  parked: number;
  connectFailed: number;
  parkSeconds: number;
  earlyAnswers: number;
  rssBeforeKiB: number;
  rssAfterKiB: number;
  rssSettled: boolean;
  kibPerQuery: number;
  putMs: number;
  firstMs: number;
  p50Ms: number;
  p99Ms: number;
  lastMs: number;
  answered: number;
  failed: number;
  non200: number;
  /** Answers whose X-Svc-Index did not move past the parked index (a timeout, not a wake-up). */
  stale: number;
  /** CPU other jobs used from the PUT to the last answer; high means the wake-up figures are noisy. */
  otherCpuPct: number;
  notes: string[];
}

async function measureFanout(server: ServerProcess, count: number, quietWaitS: number): Promise<FanoutResult> {
  const notes: string[] = [];
  await putKey(server.port, FANOUT_KEY, 'v0');
  const seeded = await probe(kvUrl(server.port, FANOUT_KEY));
  if (seeded.status !== 200 || seeded.index === undefined) {
    throw new Error(`GET ${FANOUT_KEY}: status ${seeded.status}, X-Svc-Index ${String(seeded.index)}`);
  }
  const parkedAt = seeded.index;

  const before = await waitRssSettled(server.pid);
  process.stderr.write(`  RSS ${before.rssKiB} KiB; parking ${count} queries at index ${parkedAt} ...\n`);
  const parkStart = performance.now();
  let queries: ParkedQueries | undefined;
  try {
    queries = await parkQueries({
      port: server.port,
      path: `/v1/kv/${FANOUT_KEY}?index=${parkedAt}&wait=${WAIT}`,
      count,
    });
    const parkSeconds = (performance.now() - parkStart) / 1000;
    if (queries.connectFailed > 0)
      notes.push(`${queries.connectFailed} connects failed: ${queries.connectErrors.join('; ')}`);

    await new Promise((r) => setTimeout(r, PARK_SETTLE_MS));
    const after = await waitRssSettled(server.pid, { timeoutMs: 15_000 });
    if (!after.settled) notes.push('RSS still moving after 15 s; per-query figure is approximate');
    // Anything answered before the PUT did not park (bad index, limit, error): it must be seen.
    const earlyAnswers = queries.answered + queries.failed;
    if (earlyAnswers > 0)
      notes.push(`${earlyAnswers} queries answered or closed before the PUT: ${queries.failures.join('; ')}`);
    process.stderr.write(
      `  parked ${queries.parked} in ${parkSeconds.toFixed(1)} s, RSS ${after.rssKiB} KiB; PUT ...\n`,
    );

    if (quietWaitS > 0 && !(await waitForQuiet(quietWaitS * 1000)))
      notes.push(`machine still busy after ${quietWaitS}s before the PUT`);
    let stale = 0;
    const put = await openPutSocket(server.port);
    queries.onAnswer = ({ response }) => {
      const index = Number(response.headers.get('x-svc-index'));
      if (!(index > parkedAt)) stale++;
    };
    const cpu = startCpuWatch(server.pid);
    const t0 = performance.now();
    const putResponse = await put('v1');
    const putMs = performance.now() - t0;
    const complete = await queries.allSettled(WAKE_TIMEOUT_MS);
    const { otherPct } = cpu();
    if (!complete)
      notes.push(`only ${queries.answered + queries.failed} of ${queries.parked} settled within ${WAKE_TIMEOUT_MS} ms`);
    if (putResponse.status !== 200) notes.push(`PUT answered ${putResponse.status}`);

    const wake = Array.from(queries.answeredAt, (at) => at - t0)
      .filter((ms) => Number.isFinite(ms) && ms >= 0)
      .sort((a, b) => a - b);
    let non200 = 0;
    for (const status of queries.status) if (status !== 0 && status !== 200) non200++;
    return {
      queries: count,
      parked: queries.parked,
      connectFailed: queries.connectFailed,
      parkSeconds,
      earlyAnswers,
      rssBeforeKiB: before.rssKiB,
      rssAfterKiB: after.rssKiB,
      rssSettled: after.settled,
      kibPerQuery: (after.rssKiB - before.rssKiB) / Math.max(1, queries.parked),
      putMs,
      firstMs: wake[0] ?? Number.NaN,
      p50Ms: quantileSorted(wake, 0.5),
      p99Ms: quantileSorted(wake, 0.99),
      lastMs: wake[wake.length - 1] ?? Number.NaN,
      answered: queries.answered,
      failed: queries.failed,
      non200,
      stale,
      otherCpuPct: otherPct,
      notes: [
        ...notes,
        ...(queries.failures.length > 0 && earlyAnswers === 0 ? [`failures: ${queries.failures.join('; ')}`] : []),
      ],
    };
  } finally {
    queries?.closeAll();
  }
}

function verdict(ok: boolean): string {
  return ok ? 'ok' : 'MISS';
}

async function onServer(start: () => Promise<ServerProcess>, count: number, quietWaitS: number): Promise<FanoutResult> {
  const server = await start();
  try {
    process.stderr.write(`  ${server.name}\n`);
    return await measureFanout(server, count, quietWaitS);
  } finally {
    await server.stop();
  }
}

/** Table rows: metric, ceiling, agent, target, verdict (on the agent's figure). */
function tableRows(c: FanoutResult, a: FanoutResult | undefined): Cell[][] {
  const both = (f: (r: FanoutResult) => Cell): [Cell, Cell] => [f(c), a === undefined ? undefined : f(a)];
  const check = (ok: (r: FanoutResult) => boolean): string => (a === undefined ? '' : verdict(ok(a)));
  return [
    ['parked queries', ...both((r) => r.parked), `${c.queries}`, check((r) => r.parked === r.queries)],
    ['park time s', ...both((r) => r.parkSeconds), '', ''],
    ['server RSS before MiB', ...both((r) => r.rssBeforeKiB / 1024), '', ''],
    ['server RSS parked MiB', ...both((r) => r.rssAfterKiB / 1024), '', ''],
    [
      'KiB per parked query',
      ...both((r) => r.kibPerQuery),
      `<= ${TARGET_KIB_PER_QUERY}`,
      check((r) => r.kibPerQuery <= TARGET_KIB_PER_QUERY),
    ],
    ['PUT answered ms', ...both((r) => r.putMs), '', ''],
    ['first response ms', ...both((r) => r.firstMs), '', ''],
    ['p50 response ms', ...both((r) => r.p50Ms), '', ''],
    ['p99 response ms', ...both((r) => r.p99Ms), '', ''],
    [
      'LAST response ms',
      ...both((r) => r.lastMs),
      `<= ${TARGET_LAST_MS}`,
      check((r) => r.lastMs <= TARGET_LAST_MS && r.answered === r.parked),
    ],
    ['answered / failed', ...both((r) => `${r.answered} / ${r.failed}`), '', check((r) => r.failed === 0)],
    [
      'non-200 / stale index',
      ...both((r) => `${r.non200} / ${r.stale}`),
      '0 / 0',
      check((r) => r.non200 === 0 && r.stale === 0),
    ],
    ['answered before PUT', ...both((r) => r.earlyAnswers), '0', check((r) => r.earlyAnswers === 0)],
    ['other jobs cpu% (wake)', ...both((r) => r.otherCpuPct), '', ''],
  ];
}

function roundAll(result: FanoutResult): Record<string, unknown> {
  return Object.fromEntries(Object.entries(result).map(([k, v]) => [k, typeof v === 'number' ? round(v) : v]));
}

/** Runs the fan-out on the bare-uWS ceiling, then on the agent (-dev) when it is built. */
export async function runFanoutBench(
  count: number,
  quietWaitS: number,
): Promise<{ ceiling: FanoutResult; agent?: FanoutResult }> {
  const limit = openFilesLimit() ?? Number.POSITIVE_INFINITY;
  if (count + FD_HEADROOM > limit) {
    throw new Error(
      `--queries ${count} needs ~${count + FD_HEADROOM} open files in this process and the server; the limit is ${limit}`,
    );
  }
  process.stderr.write(`fan-out bench: ${count} parked blocking queries\n`);
  const ceiling = await onServer(startCeiling, count, quietWaitS);
  let agent: FanoutResult | undefined;
  let agentError = agentBuilt() ? undefined : AGENT_MISSING;
  if (agentError === undefined) {
    try {
      agent = await onServer(() => startAgent('dev'), count, quietWaitS);
    } catch (err) {
      // Still print the ceiling: it is the half of the comparison that does not depend on src/.
      agentError = err instanceof Error ? err.message : String(err);
    }
  }

  process.stdout.write(`\nBlocking-query fan-out (${count} parked on one key, one PUT wakes them)\n`);
  process.stdout.write(
    `${formatTable(['metric', 'ceiling', 'agent', 'target', 'verdict'], tableRows(ceiling, agent))}\n`,
  );
  for (const note of ceiling.notes) process.stdout.write(`! ceiling: ${note}\n`);
  for (const note of agent?.notes ?? []) process.stdout.write(`! agent: ${note}\n`);
  if (agentError !== undefined) process.stdout.write(`! agent not measured: ${brief(agentError, 8)}\n`);
  const path = await writeJson('fanout', {
    targets: { kibPerQuery: TARGET_KIB_PER_QUERY, lastMs: TARGET_LAST_MS },
    ceiling: roundAll(ceiling),
    agent: agent === undefined ? { error: agentError } : roundAll(agent),
  });
  process.stdout.write(`wrote ${path}\n`);
  return agent === undefined ? { ceiling } : { ceiling, agent };
}

if (isEntryPoint(import.meta.url)) {
  runMain(async () => {
    const args = parseHttpBenchArgs();
    await runFanoutBench(args.queries, args.quietWaitS);
  });
}
