// Leaf issuance (src/connect/ca/x509.ts, leaf-work.ts, pool-signer.ts, server-ca.ts), cold: a new
// P-256 key, its CSR, the CSR check and the CA's signature every time.
// - one thread in-process: the DER-template path, beside pkijs (precomputed per root) and
//   @peculiar/x509 building the same leaf (bench/micro/leaf-baselines.ts), the libraries it replaced;
// - through the piscina pool (target >= 500 certificates/s on 2 cores), alone and behind the CA
//   manager (serial counter committed to the store, memory and durable), with the main thread's
//   event-loop delay measured by perf_hooks.monitorEventLoopDelay (target: never over 5 ms) and
//   the longest GC pause beside it. The default pool runs once with the signing threads at nice
//   +10 (connect.signing_priority "low", the default) and once at the process's priority ("normal").
// Run: node dist/bench/micro/leaf-issue.js [--count 3000] [--in-flight 64]
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { constants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { X509Certificate } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { ServerCa } from '../../src/connect/ca/server-ca.js';
import { DEFAULT_SETTINGS } from '../../src/connect/ca/ca-config.js';
import { toPem } from '../../src/connect/ca/encoding.js';
import { LeafWork } from '../../src/connect/ca/leaf-work.js';
import { DEFAULT_THREADS, PoolSigner } from '../../src/connect/ca/pool-signer.js';
import type { SigningPriority } from '../../src/connect/ca/signing-priority.js';
import type { SignTask } from '../../src/connect/ca/signer.js';
import { createRootCertificate, generateCaKey } from '../../src/connect/ca/x509.js';
import { systemClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/log.js';
import { openEmbeddedStore } from '../../src/state/embedded/index.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { peculiarIssuer, pkijsIssuer, type IssueLeaf } from './leaf-baselines.js';
import { watchStalls, type Stall } from '../support/loop-stalls.js';
import { BENCH_OUT } from '../support/paths.js';
import { formatTable, round, writeJson } from '../support/report.js';

const TD = '11111111-2222-3333-4444-555555555555.consul';
const MIN_PER_SECOND = 500;
const MAX_LOOP_DELAY_MS = 5;

interface Row {
  readonly scenario: string;
  readonly perSecond: number;
  readonly msPerCert: number;
  readonly loopMaxMs?: number;
  readonly loopP99Ms?: number;
  /** The longest main-thread GC pause in the row: the part of the loop max that is V8's. */
  readonly gcMaxMs?: number;
  /** Which collection that pause was (a major GC of what a row keeps is the bench's, not signing's). */
  readonly gcMaxKind?: string;
  /** The longest stall's split: the thread running, and runnable but waiting for a CPU. */
  readonly stall?: Stall;
  readonly target?: string;
}

interface LoopFigures {
  readonly loopMaxMs: number;
  readonly loopP99Ms: number;
  readonly gcMaxMs: number;
  readonly gcMaxKind: string;
  readonly stall: Stall;
}

const GC_KINDS: Readonly<Record<number, string>> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'scavenge',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weak callbacks',
};

/**
 * Times the main thread until stopped: its event-loop delay (perf_hooks.monitorEventLoopDelay,
 * 1 ms resolution), its longest GC pause (perf_hooks 'gc' entries) and how its longest stall
 * splits between running and waiting for a CPU.
 */
function watchLoop(): () => Promise<LoopFigures> {
  collectGarbage(); // the earlier rows' garbage (the library baselines' above all) is not this row's
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const stalls = watchStalls();
  let gcMaxMs = 0;
  let gcMaxKind = '-';
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if (entry.duration <= gcMaxMs) continue;
      gcMaxMs = entry.duration;
      const kind = (entry as { detail?: { kind?: number } }).detail?.kind ?? 0;
      gcMaxKind = GC_KINDS[kind] ?? `kind ${kind}`;
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  return async () => {
    delay.disable();
    const stall = stalls();
    await new Promise((resolve) => setImmediate(resolve)); // let the last GC entries arrive
    observer.disconnect();
    return { loopMaxMs: delay.max / 1e6, loopP99Ms: delay.percentile(99) / 1e6, gcMaxMs, gcMaxKind, stall };
  };
}

/** A full collection, through V8's gc() exposed at run time (no --expose-gc flag needed). */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

function argValue(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : Number.NaN;
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

async function testCa(): Promise<SignTask['ca'] & { key: CryptoKeyPairLike }> {
  const key = await generateCaKey({ type: 'ec', bits: 256 });
  const now = Date.now();
  const der = createRootCertificate({
    key,
    serial: 1n,
    commonName: 'pri-bench.consul.ca.11111111.consul',
    uri: `spiffe://${TD}`,
    notBefore: now,
    notAfter: now + 87600 * 3_600_000,
  });
  return {
    id: 'bench-root',
    privateKeyPem: key.export({ type: 'pkcs8', format: 'pem' }) as string,
    rootCertPem: toPem(der, 'CERTIFICATE'),
    key: { der },
  };
}
interface CryptoKeyPairLike {
  readonly der: Buffer;
}

function task(ca: SignTask['ca'], i: number): SignTask {
  return {
    ca,
    serial: BigInt(i + 2),
    uri: `spiffe://${TD}/ns/default/dc/dc1/svc/svc-${i}`,
    nowMs: Date.now(),
    ttlMs: 72 * 3_600_000,
    trustDomain: TD,
    datacenter: 'dc1',
  };
}

function inProcess(ca: SignTask['ca'], count: number): Row {
  const work = new LeafWork();
  const first = work.run({ ...task(ca, 0), caId: ca.id, ca });
  if (!first.ok) throw new Error(first.message);
  for (let i = 0; i < 100; i++) work.run({ ...task(ca, i), caId: ca.id }); // warm-up
  const start = performance.now();
  for (let i = 0; i < count; i++) {
    const r = work.run({ ...task(ca, i), caId: ca.id });
    if (!r.ok) throw new Error(r.message);
  }
  const ms = (performance.now() - start) / count;
  return { scenario: 'DER template, 1 thread in-process', perSecond: 1000 / ms, msPerCert: ms };
}

/** One thread, one leaf at a time, through a library; the first certificate is checked first. */
async function libraryBaseline(scenario: string, issue: IssueLeaf, caDer: Buffer, count: number): Promise<Row> {
  const uri = (i: number): string => `spiffe://${TD}/ns/default/dc/dc1/svc/svc-${i}`;
  const first = new X509Certificate(await issue(uri(0), 2));
  if (!first.verify(new X509Certificate(caDer).publicKey) || first.subjectAltName !== `URI:${uri(0)}`)
    throw new Error(`${scenario}: bad certificate`);
  for (let i = 0; i < 50; i++) await issue(uri(i), i + 2);
  const start = performance.now();
  for (let i = 0; i < count; i++) await issue(uri(i), i + 2);
  const ms = (performance.now() - start) / count;
  return { scenario, perSecond: 1000 / ms, msPerCert: ms };
}

/** Runs `count` issuances with `inFlight` outstanding, timing them and the event loop. */
async function throughPool(
  scenario: string,
  issue: (i: number) => Promise<unknown>,
  count: number,
  inFlight: number,
): Promise<Row> {
  await Promise.all(Array.from({ length: 16 }, (_, i) => issue(i))); // start and warm the workers
  const stop = watchLoop();
  const start = performance.now();
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) await issue(next++);
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  const elapsed = performance.now() - start;
  const loop = await stop();
  const perSecond = (count * 1000) / elapsed;
  return {
    scenario,
    perSecond,
    msPerCert: elapsed / count,
    ...loop,
    target: `>=${MIN_PER_SECOND}/s ${perSecond >= MIN_PER_SECOND ? 'ok' : 'MISS'}, ${loopTarget(loop)}`,
  };
}

/**
 * Issuance at the target's own rate (MIN_PER_SECOND, in 10 ms ticks) for `seconds`, timing the
 * event loop: what signing costs the loop when it is asked for 500 leaves a second rather than as
 * many as the pool can sign.
 */
async function paced(scenario: string, issue: (i: number) => Promise<unknown>, seconds: number): Promise<Row> {
  const perTick = MIN_PER_SECOND / 100;
  const stop = watchLoop();
  const pending: Promise<unknown>[] = [];
  const start = performance.now();
  for (let tick = 0; tick < seconds * 100; tick++) {
    for (let k = 0; k < perTick; k++) pending.push(issue(tick * perTick + k));
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, start + (tick + 1) * 10 - performance.now())));
  }
  await Promise.all(pending);
  const elapsed = performance.now() - start;
  const loop = await stop();
  return {
    scenario,
    perSecond: (pending.length * 1000) / elapsed,
    msPerCert: Number.NaN,
    ...loop,
    target: loopTarget(loop),
  };
}

function loopTarget(loop: LoopFigures): string {
  return `loop<=${MAX_LOOP_DELAY_MS}ms ${loop.loopMaxMs <= MAX_LOOP_DELAY_MS ? 'ok' : 'MISS'}`;
}

/** The same measurement with nothing to do: the machine's own noise floor for the loop columns. */
async function idleLoop(ms: number): Promise<Row> {
  const stop = watchLoop();
  await new Promise((resolve) => setTimeout(resolve, ms));
  return {
    scenario: `idle event loop for ${(ms / 1000).toFixed(1)} s (noise floor)`,
    perSecond: Number.NaN,
    msPerCert: Number.NaN,
    ...(await stop()),
  };
}

async function withManager(durable: boolean, count: number, inFlight: number): Promise<Row[]> {
  let dir: string | undefined;
  if (durable) {
    await mkdir(BENCH_OUT, { recursive: true });
    dir = await mkdtemp(join(BENCH_OUT, 'ca-'));
  }
  const store = await openEmbeddedStore({ dataDir: dir, log: silentLogger });
  const signer = new PoolSigner();
  try {
    const manager = await ServerCa.open({
      store,
      signer,
      clock: systemClock,
      random: Math.random,
      log: silentLogger,
      datacenter: 'dc1',
      // The built-in defaults, without the CSR rate limit: the rows measure issuance itself.
      bootstrap: { ...DEFAULT_SETTINGS, csrMaxPerSecond: 0, privateKey: undefined, rootCert: undefined },
    });
    const name = `ServerCa.signLeaf: pool + serial commit (${durable ? 'durable store' : 'memory store'})`;
    const row = await throughPool(name, (i) => manager.signLeaf('default', `svc-${i}`), count, inFlight);
    const atTarget = await paced(
      `${name}, paced at ${MIN_PER_SECOND}/s`,
      (i) => manager.signLeaf('default', `paced-${i}`),
      4,
    );
    manager.close();
    return [row, atTarget];
  } finally {
    await signer.close();
    await store.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  }
}

const nan = (n: number): number | undefined => (Number.isNaN(n) ? undefined : n);

export async function runLeafIssueBench(count = 3000, inFlight = 64): Promise<Row[]> {
  const ca = await testCa();
  const rows: Row[] = [];
  process.stderr.write('leaf-issue: in-process ...\n');
  rows.push(inProcess(ca, Math.min(count, 2000)));
  process.stderr.write('leaf-issue: library baselines ...\n');
  rows.push(
    await libraryBaseline(
      'pkijs, per-root precomputation (baseline), 1 thread',
      pkijsIssuer(ca.key.der, ca.privateKeyPem),
      ca.key.der,
      500,
    ),
  );
  rows.push(
    await libraryBaseline(
      '@peculiar/x509, 1 thread',
      await peculiarIssuer(ca.key.der, ca.privateKeyPem),
      ca.key.der,
      200,
    ),
  );
  process.stderr.write('leaf-issue: pool ...\n');
  for (const threads of [...new Set([DEFAULT_THREADS, availableParallelism()])]) {
    const priorities: readonly SigningPriority[] = threads === DEFAULT_THREADS ? ['low', 'normal'] : ['low'];
    for (const priority of priorities) {
      const signer = new PoolSigner({ threads, priority });
      try {
        const label = `PoolSigner.sign, ${threads} worker(s)${threads === DEFAULT_THREADS ? ' (default)' : ''}, ${inFlight} in flight, signing_priority ${priority}`;
        rows.push(await throughPool(label, (i) => signer.sign(task(ca, i)), count, inFlight));
      } finally {
        await signer.close();
      }
    }
  }
  rows.push(await idleLoop(2000));
  process.stderr.write('leaf-issue: CA manager ...\n');
  rows.push(...(await withManager(false, count, inFlight)));
  rows.push(...(await withManager(true, count, inFlight)));

  const baseline = rows[1]?.msPerCert ?? Number.NaN;
  const table = formatTable(
    [
      'scenario',
      'certs/s',
      'ms/cert',
      'x baseline',
      'loop max ms',
      'loop p99 ms',
      'gc max ms',
      'gc max kind',
      'stall ran ms',
      'stall waited ms',
      'target',
    ],
    rows.map((r) => [
      r.scenario,
      nan(r.perSecond),
      nan(r.msPerCert),
      nan(baseline / r.msPerCert),
      r.loopMaxMs,
      r.loopP99Ms,
      r.gcMaxMs,
      r.gcMaxKind,
      r.stall?.cpuMs,
      r.stall?.waitMs,
      r.target,
    ]),
  );
  process.stdout.write(`\nLeaf issuance, cold (EC P-256), ${count} certificates per pool row\n${table}\n`);
  const path = await writeJson('leaf-issue', {
    count,
    inFlight,
    cores: availableParallelism(),
    rows: rows.map(({ stall, ...r }) => ({
      ...Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'number' ? round(v) : v])),
      ...(stall === undefined
        ? {}
        : { stallGapMs: round(stall.gapMs), stallRanMs: round(stall.cpuMs), stallWaitedMs: round(stall.waitMs) }),
    })),
  });
  process.stdout.write(`wrote ${path}\n`);
  return rows;
}

if (isEntryPoint(import.meta.url)) {
  runMain(async () => {
    await runLeafIssueBench(argValue('count', 3000), argValue('in-flight', 64));
  });
}
