// Prepared requests over keep-alive connections, driven by generator threads
// (workers/loadtest.worker.ts) whose seconds are merged here: the engine of `authorize`,
// `connection-rate`, `kv` and `http`. With -find-max, a series of steps at rising rates.
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { Aggregate } from '../../loadgen/aggregate.js';
import { shareOf, type Stage } from '../../loadgen/pacer.js';
import { epochClock } from '../../loadgen/scheduler.js';
import type { AnswerKinds, LoadThreadData, LoadThreadDone, LoadThreadTimes } from '../../loadgen/thread-data.js';
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

/** A generator thread's event loop busy this share of the measured time or more: the client was the limit. */
const CLIENT_BUSY = 0.9;

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
 * The shortest step -find-max runs: the calls of a step's last latency land after its window (in
 * the drain), so a step loses about latency/length of its rate; at 5 s a 100 ms latency of a busy
 * machine costs 2%, well inside the 5% a step may miss by (docs/decisions.md#find-max).
 */
const FIND_MAX_MIN_STEP_MS = 5000;
/** Confirmations the answer may fail (each retried once) before the search gives up. */
const FIND_MAX_BACKOFFS = 3;
/** A rate that failed its confirmation twice is lowered by this factor (the search's resolution's half). */
const FIND_MAX_BACKOFF = 1.05;
/** Steps asked within this factor of the answer are "near it": their spread is reported. */
const FIND_MAX_NEAR = 1.25;

/**
 * Doubles the rate from -rate (default 100/s) until a step fails, then halves the gap between the
 * highest rate held and the lowest not held; then confirms the highest held with a step twice as
 * long (retried once; failing twice, a rate 1.05x lower is confirmed instead). A step holds
 * when every criterion holds on its window (rates.ts). The measured run returned is the confirming
 * step; the others count as warm-up. A step whose generator threads were busy stops the search:
 * the client, not the target, was the limit.
 */
async function findMax(ctx: RunContext, load: RequestLoad): Promise<Measured> {
  const given = ctx.common.thresholds.length > 0 ? ctx.common.thresholds.map((t) => t.text) : FIND_MAX_DEFAULTS;
  const criteria = [...FIND_MAX_ALWAYS, ...given].map(parseThreshold);
  const stepMs = Math.max(ctx.common.measureMs, FIND_MAX_MIN_STEP_MS);
  if (ctx.common.measureMs < FIND_MAX_MIN_STEP_MS)
    ctx.say(
      `-duration ${ctx.common.measureMs / 1000}s is shorter than the shortest -find-max step (${FIND_MAX_MIN_STEP_MS / 1000}s): each step lasts ${stepMs / 1000}s`,
    );
  const steps: FindMaxStep[] = [];
  const all: Measured[] = [];
  let clientLimited = false;
  const step = async (rate: number, ms: number, confirm: boolean): Promise<{ ok: boolean; measured: Measured }> => {
    const measured = await runOnce(ctx, load, [{ ms, rate }], all.length === 0 ? ctx.common.warmupMs : 0, ms);
    all.push(measured);
    const numbers = numbersOf({ ...measured, stages: measured.stages ?? null }, true);
    const verdicts = criteria.map((c) => judge(c, numbers));
    const ok = verdicts.every((v) => v.passed);
    const failed = verdicts.filter((v) => !v.passed).map((v) => v.threshold);
    const busy = measured.clientBusy === true;
    steps.push({
      askedRps: rate,
      durationMs: ms,
      confirm,
      achievedRps: numbers.achievedRps,
      p99Us: numbers.latencyUs.p99,
      errors: numbers.errors,
      dropped: numbers.dropped,
      held: ok,
      failed,
      clientBusy: busy,
    });
    ctx.say(
      `${confirm ? 'confirming ' : ''}${rate.toLocaleString('en-US')}/s for ${ms / 1000}s ${ok ? 'held' : `not held (${failed.join(', ')})`}: achieved ${numbers.achievedRps.toLocaleString('en-US')}/s, p99 ${(numbers.latencyUs.p99 / 1000).toFixed(2)} ms${busy ? '; the generator was busy: the client was the limit' : ''}`,
    );
    if (!ok && busy) clientLimited = true;
    return { ok, measured };
  };

  let rate = ctx.common.rate ?? 100;
  let held: number | undefined;
  let failedAt: number | undefined;
  for (let k = 0; k < FIND_MAX_STEPS && !ctx.stop.aborted && !clientLimited; k++) {
    const { ok } = await step(rate, stepMs, false);
    if (ok) held = Math.max(held ?? 0, rate);
    else failedAt = failedAt === undefined ? rate : Math.min(failedAt, rate);
    if (held !== undefined && failedAt !== undefined && failedAt / held <= FIND_MAX_RESOLUTION) break;
    const next = failedAt === undefined ? rate * 2 : held === undefined ? rate / 2 : (held + failedAt) / 2;
    rate = Math.max(1, Math.round(next));
    if (steps.some((s) => s.askedRps === rate)) break;
  }

  // Confirm: twice the step's length at the best rate held, retried once before backing off.
  let confirmed: { rate: number; measured: Measured } | undefined;
  let candidate = held;
  for (let b = 0; b <= FIND_MAX_BACKOFFS && candidate !== undefined && !ctx.stop.aborted && !clientLimited; b++) {
    for (let attempt = 0; attempt < 2 && confirmed === undefined && !ctx.stop.aborted; attempt++) {
      const { ok, measured } = await step(candidate, 2 * stepMs, true);
      if (ok) confirmed = { rate: candidate, measured };
    }
    if (confirmed !== undefined) break;
    candidate = Math.max(1, Math.round(candidate / FIND_MAX_BACKOFF));
  }

  const chosen = confirmed?.measured ?? (all[0] as Measured);
  const answer = confirmed?.rate ?? null;
  const near =
    answer === null
      ? []
      : steps.filter((s) => s.askedRps <= answer * FIND_MAX_NEAR && s.askedRps >= answer / FIND_MAX_NEAR);
  const confirmStep = answer === null ? undefined : steps.findLast((s) => s.confirm && s.held);
  let cpuMs = 0;
  let wallMs = 0;
  for (const m of all) {
    cpuMs += (m.cpuPct / 100) * (m.wallMs ?? m.elapsedMs);
    wallMs += m.wallMs ?? m.elapsedMs;
  }
  const otherOk = all.filter((m) => m !== chosen).reduce((n, m) => n + m.aggregate.ok + m.warmupOk, 0);
  return {
    ...chosen,
    warmupOk: chosen.warmupOk + otherOk,
    cpuPct: wallMs > 0 ? (cpuMs / wallMs) * 100 : chosen.cpuPct,
    findMax: {
      highestHeldRps: answer,
      criteria: criteria.map((c) => c.text),
      stepMs,
      minStepMs: FIND_MAX_MIN_STEP_MS,
      confirmed:
        confirmStep === undefined
          ? null
          : {
              askedRps: confirmStep.askedRps,
              achievedRps: confirmStep.achievedRps,
              p99Us: confirmStep.p99Us,
              durationMs: confirmStep.durationMs,
            },
      spread:
        near.length === 0
          ? null
          : {
              steps: near.length,
              lowRps: Math.min(...near.map((s) => s.achievedRps)),
              highRps: Math.max(...near.map((s) => s.achievedRps)),
            },
      clientLimited,
      steps,
    },
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
  const totalMs = stages === undefined ? measureMs : stages.reduce((n, st) => n + st.ms, 0);
  let from = Infinity;
  let ready = 0;
  // Every thread ready, the schedule starts a little later, the same for all.
  const start = (): void => {
    const warmupFrom = epochClock.now() + 20;
    from = warmupFrom + warmupMs;
    const times: LoadThreadTimes = { warmupFrom, from, until: from + totalMs };
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
  let busy = 0;
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
          stages: stages?.map((s) => shareOf(s, 1 / threads)),
          connectionPerRequest: load.connectionPerRequest === true,
          offset: Math.floor((i * load.requests.length) / threads),
        };
        const worker = new Worker(workerFile(), { workerData: data });
        workers.push(worker);
        if (ctx.stop.aborted) worker.postMessage('stop');
        return new Promise<void>((done, fail) => {
          worker.on('message', (message: { type: string; tick?: ThreadTick } | LoadThreadDone) => {
            if (message.type === 'ready') {
              if (++ready === threads) start();
            } else if ('tick' in message && message.tick !== undefined) {
              const point = aggregate.add(message.tick);
              if (point !== undefined) ctx.progress(point);
            } else if ('busy' in message) {
              warmupOk += message.warmupOk;
              stampedSent += message.stampedSent;
              busy += message.busy;
              done();
            }
          });
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
  const wallMs = Math.max(1, ended - startedAt);
  const cpu = process.cpuUsage(cpuStart);
  const span = aggregate.measured();
  return {
    aggregate,
    warmupOk,
    stampedSent,
    // The scheduled time (cut short by Ctrl-C); the drain after it is the aggregate's.
    elapsedMs: Math.max(1, span.endMs - span.startMs),
    wallMs,
    cpuPct: ((cpu.user + cpu.system) / 1000 / wallMs) * 100,
    threads,
    // Each thread's event loop busy 90% of the measured time or more: the generator was the limit.
    clientBusy: busy / threads >= CLIENT_BUSY,
    askedRps: null,
    stages: stages ?? null,
  };
}

/** The compiled worker, from this file's place in dist/ (or in src/ under vitest). */
function workerFile(): string {
  const here = fileURLToPath(import.meta.url);
  const root = resolve(dirname(here), '../../..');
  return join(here.endsWith('.js') ? root : join(root, 'dist'), 'workers', 'loadtest.worker.js');
}
