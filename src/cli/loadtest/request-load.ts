// Prepared requests over keep-alive connections, driven by generator threads
// (workers/loadtest.worker.ts) whose seconds are merged here: the engine of `authorize`,
// `connection-rate` and `kv`.
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { Aggregate } from '../../loadgen/aggregate.js';
import { epochClock } from '../../loadgen/scheduler.js';
import type { LoadThreadData } from '../../loadgen/thread-data.js';
import type { ThreadTick } from '../../loadgen/types.js';
import { hostPortOf } from './http.js';
import type { Measured, RunContext } from './scenario.js';

export interface RequestLoad {
  readonly requests: readonly Buffer[];
  /** Per request, where 16 digits of the send time (epoch microseconds) go, or -1 (kv writes carry it). */
  readonly stampAt?: readonly number[];
  /** A new TCP connection for every request (connection-rate). */
  readonly connectionPerRequest?: boolean;
}

/** One thread per core but one, which the target (or the rest of the machine) keeps. */
export function defaultThreads(): number {
  return Math.max(1, availableParallelism() - 1);
}

export async function runRequestLoad(ctx: RunContext, load: RequestLoad): Promise<Measured> {
  const { common } = ctx;
  const threads = Math.min(common.connections, common.threads);
  const aggregate = new Aggregate(threads);
  const warmupFrom = epochClock.now() + 100; // the threads' start-up
  const from = warmupFrom + common.warmupMs;
  const until = from + common.measureMs;
  const hostPorts = ctx.targets.map(hostPortOf);
  const workers: Worker[] = [];
  ctx.stop.addEventListener('abort', () => {
    for (const w of workers) w.postMessage('stop');
  }, { once: true });
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
          connections: share,
          rate: common.rate === undefined ? undefined : common.rate / threads,
          warmupFrom,
          from,
          until,
          connectionPerRequest: load.connectionPerRequest === true,
          offset: Math.floor((i * load.requests.length) / threads),
        };
        const worker = new Worker(workerFile(), { workerData: data });
        workers.push(worker);
        if (ctx.stop.aborted) worker.postMessage('stop');
        return new Promise<void>((done, fail) => {
          worker.on('message', (message: { type: string; tick?: ThreadTick; warmupOk?: number; stampedSent?: number }) => {
            if (message.type === 'tick' && message.tick !== undefined) {
              const point = aggregate.add(message.tick);
              if (point !== undefined) ctx.progress(point);
            } else if (message.type === 'done') {
              warmupOk += message.warmupOk ?? 0;
              stampedSent += message.stampedSent ?? 0;
              done();
            }
          });
          worker.on('error', fail);
          worker.on('exit', (code) => (code === 0 ? done() : fail(new Error(`a load thread exited with code ${code}`))));
        });
      }),
    );
  } finally {
    for (const w of workers) void w.terminate();
  }
  const elapsedMs = Math.max(1, Math.min(epochClock.now(), until) - from);
  const cpu = process.cpuUsage(cpuStart);
  return { aggregate, warmupOk, stampedSent, elapsedMs, cpuPct: ((cpu.user + cpu.system) / 1000 / (elapsedMs + common.warmupMs)) * 100, threads };
}

/** The compiled worker, from this file's place in dist/ (or in src/ under vitest). */
function workerFile(): string {
  const here = fileURLToPath(import.meta.url);
  const root = resolve(dirname(here), '../../..');
  return join(here.endsWith('.js') ? root : join(root, 'dist'), 'workers', 'loadtest.worker.js');
}
