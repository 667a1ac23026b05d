// Prepared requests over keep-alive connections, driven by generator threads
// (workers/loadtest.worker.ts) whose seconds are merged here: the engine of `authorize`,
// `connection-rate`, `kv` and `http`. With -find-max, a series of steps at rising rates.
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { Aggregate } from '../../loadgen/aggregate.js';
import { Pacer, type Stage } from '../../loadgen/pacer.js';
import { epochClock } from '../../loadgen/scheduler.js';
import type { AnswerKinds, LoadThreadData, LoadThreadTimes } from '../../loadgen/thread-data.js';
import type { ThreadTick } from '../../loadgen/types.js';
import { hostPortOf } from './http.js';
import type { FindMaxStep, Measured, RunContext } from './scenario.js';
import { judge, numbersOf, parseThreshold } from './thresholds.js';

export interface RequestLoad {
  readonly requests: readonly Buffer[];
  /** Per request, where 16 digits of the send time (epoch microseconds) go, or -1 (kv writes carry it). */
  readonly stampAt?: readonly number[];
  /** Per request, its outcome's name (kv's `read` and `write`). */
  readonly requestKinds?: readonly string[];
  /** Names each answer by its body (authorize's `allow` and `deny`). */
  readonly answerKinds?: AnswerKinds;
  /** A new TCP connection for every request (connection-rate). */
  readonly connectionPerRequest?: boolean;
}

/** One thread per core but one, which the target (or the rest of the machine) keeps. */
export function defaultThreads(): number {
  return Math.max(1, availableParallelism() - 1);
}

export async function runRequestLoad(ctx: RunContext, load: RequestLoad): Promise<Measured> {
  if (ctx.common.findMax) return findMax(ctx, load);
  return runOnce(ctx, load, ctx.common.stages, ctx.common.warmupMs, ctx.common.measureMs);
}

/** What a -find-max step must hold beside the -threshold flags: the rate asked, and few errors. */
const FIND_MAX_ALWAYS = ['rate>=0.95*asked'];
const FIND_MAX_DEFAULTS = ['p99<100ms', 'errors<1%'];
/** Steps stop once the highest rate held and the lowest not held are this close. */
const FIND_MAX_RESOLUTION = 1.1;
const FIND_MAX_STEPS = 12;

/**
 * Doubles the rate from -rate (default 100/s) until a step fails, then halves the gap between
 * the highest rate held and the lowest not held: each step lasts -duration. The measured run
 * returned is the highest step held (or the first, if none held), the others counted as warm-up.
 */
async function findMax(ctx: RunContext, load: RequestLoad): Promise<Measured> {
  const given = ctx.common.thresholds.length > 0 ? ctx.common.thresholds.map((t) => t.text) : FIND_MAX_DEFAULTS;
  const criteria = [...FIND_MAX_ALWAYS, ...given].map(parseThreshold);
  const steps: FindMaxStep[] = [];
  let rate = ctx.common.rate ?? 100;
  let held: { rate: number; measured: Measured } | undefined;
  let failed: number | undefined;
  let first: Measured | undefined;
  let otherOk = 0;
  let cpuMs = 0;
  let wallMs = 0;
  for (let k = 0; k < FIND_MAX_STEPS && !ctx.stop.aborted; k++) {
    const measured = await runOnce(
      ctx,
      load,
      [{ ms: ctx.common.measureMs, rate }],
      k === 0 ? ctx.common.warmupMs : 0,
      ctx.common.measureMs,
    );
    cpuMs += (measured.cpuPct / 100) * (measured.wallMs ?? measured.elapsedMs);
    wallMs += measured.wallMs ?? measured.elapsedMs;
    first ??= measured;
    const numbers = numbersOf(measured);
    const verdicts = criteria.map((c) => judge(c, numbers));
    const ok = verdicts.every((v) => v.passed);
    steps.push({
      askedRps: rate,
      achievedRps: numbers.achievedRps,
      p99Us: numbers.latencyUs.p99,
      errors: numbers.errors,
      dropped: numbers.dropped,
      held: ok,
      failed: verdicts.filter((v) => !v.passed).map((v) => v.threshold),
    });
    ctx.say(
      `${rate}/s ${
        ok
          ? 'held'
          : `not held (${verdicts
              .filter((v) => !v.passed)
              .map((v) => v.threshold)
              .join(', ')})`
      }: achieved ${numbers.achievedRps}/s, p99 ${(numbers.latencyUs.p99 / 1000).toFixed(2)} ms`,
    );
    if (ok) {
      if (held !== undefined) otherOk += held.measured.aggregate.ok + held.measured.warmupOk;
      held = { rate, measured };
    } else {
      otherOk += measured.aggregate.ok + measured.warmupOk;
      failed = failed === undefined ? rate : Math.min(failed, rate);
    }
    if (held !== undefined && failed !== undefined && failed / held.rate <= FIND_MAX_RESOLUTION) break;
    const next = failed === undefined ? rate * 2 : held === undefined ? rate / 2 : (held.rate + failed) / 2;
    rate = Math.max(1, Math.round(next));
    if (steps.some((s) => s.askedRps === rate)) break;
  }
  const chosen = held?.measured ?? (first as Measured);
  if (held === undefined) otherOk -= chosen.aggregate.ok + chosen.warmupOk;
  const cpuPct = wallMs > 0 ? (cpuMs / wallMs) * 100 : chosen.cpuPct;
  return {
    ...chosen,
    warmupOk: chosen.warmupOk + otherOk,
    cpuPct,
    findMax: { highestHeldRps: held?.rate ?? null, criteria: criteria.map((c) => c.text), steps },
  };
}

async function runOnce(
  ctx: RunContext,
  load: RequestLoad,
  stages: readonly Stage[] | undefined,
  warmupMs: number,
  measureMs: number,
): Promise<Measured> {
  const { common } = ctx;
  const threads = Math.min(common.connections, common.threads);
  const aggregate = new Aggregate(threads);
  const startedAt = epochClock.now();
  const pacer = stages === undefined ? undefined : new Pacer(stages);
  let from = Infinity;
  let ready = 0;
  // Every thread ready, the schedule starts a little later, the same for all.
  const start = (): void => {
    const warmupFrom = epochClock.now() + 20;
    from = warmupFrom + warmupMs;
    const times: LoadThreadTimes = { warmupFrom, from, until: from + (pacer?.totalMs ?? measureMs) };
    for (const w of workers) w.postMessage(times);
  };
  const hostPorts = ctx.targets.map(hostPortOf);
  const workers: Worker[] = [];
  const onAbort = (): void => {
    for (const w of workers) w.postMessage('stop');
  };
  ctx.stop.addEventListener('abort', onAbort, { once: true });
  let warmupOk = 0;
  let stampedSent = 0;
  const cpuStart = process.cpuUsage();
  try {
    await Promise.all(
      Array.from({ length: threads }, (_, i) => {
        const share = Math.floor(common.connections / threads) + (i < common.connections % threads ? 1 : 0);
        const data: LoadThreadData = {
          targets: hostPorts,
          requests: load.requests,
          stampAt: load.stampAt,
          requestKinds: load.requestKinds,
          answerKinds: load.answerKinds,
          connections: share,
          stages: stages?.map((s) => ({ ms: s.ms, rate: s.rate / threads })),
          connectionPerRequest: load.connectionPerRequest === true,
          offset: Math.floor((i * load.requests.length) / threads),
        };
        const worker = new Worker(workerFile(), { workerData: data });
        workers.push(worker);
        if (ctx.stop.aborted) worker.postMessage('stop');
        return new Promise<void>((done, fail) => {
          worker.on(
            'message',
            (message: { type: string; tick?: ThreadTick; warmupOk?: number; stampedSent?: number }) => {
              if (message.type === 'ready') {
                if (++ready === threads) start();
              } else if (message.type === 'tick' && message.tick !== undefined) {
                const point = aggregate.add(message.tick);
                if (point !== undefined) ctx.progress(point);
              } else if (message.type === 'done') {
                warmupOk += message.warmupOk ?? 0;
                stampedSent += message.stampedSent ?? 0;
                done();
              }
            },
          );
          worker.on('error', fail);
          worker.on('exit', (code) =>
            code === 0 ? done() : fail(new Error(`a load thread exited with code ${code}`)),
          );
        });
      }),
    );
  } finally {
    ctx.stop.removeEventListener('abort', onAbort);
    for (const w of workers) void w.terminate();
  }
  const ended = epochClock.now();
  // Up to the last answer: the calls in flight at the end are counted, and so is their time.
  const elapsedMs = Math.max(1, ended - Math.min(from, ended));
  const wallMs = Math.max(1, ended - startedAt);
  const cpu = process.cpuUsage(cpuStart);
  return {
    aggregate,
    warmupOk,
    stampedSent,
    elapsedMs,
    wallMs,
    cpuPct: ((cpu.user + cpu.system) / 1000 / wallMs) * 100,
    threads,
    askedRps: pacer === undefined ? null : pacer.totalMs === 0 ? 0 : Math.round((pacer.total / pacer.totalMs) * 1000),
    stages: stages ?? null,
  };
}

/** The compiled worker, from this file's place in dist/ (or in src/ under vitest). */
function workerFile(): string {
  const here = fileURLToPath(import.meta.url);
  const root = resolve(dirname(here), '../../..');
  return join(here.endsWith('.js') ? root : join(root, 'dist'), 'workers', 'loadtest.worker.js');
}
