// The CertSigner backed by a piscina pool of workers (workers/leaf-sign.worker.ts): key
// generation and signing happen off the event loop, in batches. The only file that imports
// piscina. It paces nothing: the leaf manager's IssueQueue (issue-queue.ts) decides how many
// leaves reach it and when. A CA's key crosses to a worker once per root: tasks name the CA by ID, and
// a worker that does not hold it yet answers CA_UNKNOWN, upon which the task is resent with the
// material. Work a dying thread took is sent once more, to another; when no thread can start (no
// descriptor left, say) one is retried with a growing delay, and meanwhile signing fails at once
// with CA_SIGNER_NO_THREAD, logged once per outage (docs/decisions.md#descriptor-exhaustion).
import { setMaxListeners } from 'node:events';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import {
  CA_UNKNOWN,
  GENERATE_KEYS,
  MAX_BATCH,
  SCHEDULING_POLICY,
  SIGN_LEAVES,
  type GeneratedKey,
  type LeafResult,
  type LeafTask,
  type SignerWorkerData,
  type SigningPriority,
  type SigningThreadReport,
} from './signing-protocol.js';
import { agentError, type AgentError } from '../../core/errors.js';
import { silentLogger, type Logger } from '../../core/log.js';
import {
  leafTask,
  resultToMaterial,
  type CertSigner,
  type KeyGenerator,
  type SignTask,
  type SignedMaterial,
} from './signer.js';

export interface PoolSignerOptions {
  /** Worker threads; default: one per core but one (see DEFAULT_THREADS). */
  readonly threads?: number;
  /** The compiled worker file; default: dist/workers/leaf-sign.worker.js. */
  readonly workerFile?: string;
  /** How signing threads give way to the event loop; default 'low' (see SigningPriority). */
  readonly priority?: SigningPriority;
  /** Where a thread that cannot start is reported, once per outage. */
  readonly log?: Logger;
  /** Delays between attempts to start a thread after one could not (tests shorten them). */
  readonly restartDelaysMs?: RestartDelays;
}

export interface RestartDelays {
  readonly first: number;
  readonly max: number;
}

/**
 * A thread that could not start is tried again after 1 s, then 2, 4, ... up to 30 s: descriptors
 * usually come back within seconds of a connection flood ending, an attempt costs ~30 ms and a few
 * descriptors, and an outage still ends within 30 s of its cause.
 */
const RESTART_DELAYS_MS: RestartDelays = { first: 1_000, max: 30_000 };

/** While no thread can start: why, and when the next attempt is. */
interface Outage {
  readonly cause: unknown;
  readonly delayMs: number;
  readonly timer: NodeJS.Timeout;
}

/**
 * Every core but one, and at least one. Signing is CPU-bound, so a worker per core would leave the
 * event loop competing with the pool for a core: measured on the 2-core dev VM, one worker signs
 * ~2,100 leaves/s (4x the 500/s target) and leaves a core to the HTTP loop; two sign ~3,000/s.
 * bench/micro/leaf-issue.ts measures both.
 */
export const DEFAULT_THREADS = Math.max(1, availableParallelism() - 1);

/**
 * Idle workers above one exit after this long. Starting a worker costs ~30 ms (module loading),
 * so a burst of issuances should find the pool warm, while an idle agent keeps one thread.
 */
const IDLE_TIMEOUT_MS = 60_000;

/** Where the compiled worker lives, from this file's place in dist/ (or in src/ under vitest). */
export function defaultWorkerFile(): string {
  const here = fileURLToPath(import.meta.url);
  const root = resolve(dirname(here), '../../..');
  return join(here.endsWith('.js') ? root : join(root, 'dist'), 'workers', 'leaf-sign.worker.js');
}

interface Waiting {
  readonly task: SignTask;
  /** A worker answered CA_UNKNOWN for this task: send the CA material with it. */
  readonly withCa: boolean;
  /** Sent again once already, after the thread that had it failed. */
  readonly resent?: true;
  readonly resolve: (material: SignedMaterial) => void;
  readonly reject: (err: unknown) => void;
}

/**
 * Batching for signing: the leaves asked for in one turn of the event loop (up to a batch's worth
 * come from the IssueQueue per turn) go to the pool together, spread over the worker threads,
 * MAX_BATCH per pool task at most. A batch a worker cannot take yet waits in piscina's queue.
 */
export class PoolSigner implements CertSigner, KeyGenerator {
  private readonly pool: Piscina<readonly LeafTask[], LeafResult[]>;
  private readonly threadCount: number;
  /** Asked for in this turn, sent once the turn's other requests have joined them. */
  private pending: Waiting[] = [];
  /** Key pairs asked for in this turn (client agents), sent together like signings. */
  private pendingKeys: {
    readonly resolve: (key: GeneratedKey) => void;
    readonly reject: (err: unknown) => void;
    readonly resent?: true;
  }[] = [];
  private closed = false;
  /** Tasks that had to carry CA material: at most one per (worker, root). */
  caTransfers = 0;
  /** Pool tasks run so far (each a batch of one or more leaves). */
  batches = 0;
  private readonly seen = new Set<string>();
  private readonly log: Logger;
  private readonly restartDelays: RestartDelays;
  private outage: Outage | undefined;
  /** A thread beside running ones could not start: said once until a thread starts again. */
  private extraThreadFailed = false;
  /** Aborts the tasks piscina still queues when its last thread failed to start: none would run them. */
  private queued = unboundedAbortController();

  constructor(options: PoolSignerOptions = {}) {
    this.log = options.log ?? silentLogger;
    this.restartDelays = options.restartDelaysMs ?? RESTART_DELAYS_MS;
    const threads = (this.threadCount = Math.max(1, options.threads ?? DEFAULT_THREADS));
    this.pool = new Piscina<readonly LeafTask[], LeafResult[]>({
      filename: options.workerFile ?? defaultWorkerFile(),
      name: SIGN_LEAVES,
      minThreads: 1,
      maxThreads: threads,
      idleTimeout: IDLE_TIMEOUT_MS,
      // The workers lower their own priority (signing-priority.ts); piscina's niceIncrement needs an optional native module.
      workerData: { priority: options.priority ?? 'low' } satisfies SignerWorkerData,
      // Nothing reads piscina's run and wait time histograms; recording them is main-thread work per batch.
      recordTiming: false,
    });
    // Without a listener, piscina's 'error' (a thread that failed outside any task) kills the process.
    this.pool.on('error', this.onPoolError);
    this.pool.on('workerCreate', () => (this.extraThreadFailed = false));
  }

  /** True while no signing thread can start; signing fails with CA_SIGNER_NO_THREAD meanwhile. */
  get unavailable(): boolean {
    return this.outage !== undefined;
  }

  private readonly onPoolError = (err: unknown): void => {
    if (this.closed) return;
    // Another thread is alive or starting: it takes the queued work, and piscina retries the rest.
    if (this.pool.threads.length > 0 && this.outage === undefined) {
      this.threadFailed(err);
      return;
    }
    const delayMs =
      this.outage === undefined ? this.restartDelays.first : Math.min(this.restartDelays.max, this.outage.delayMs * 2);
    if (this.outage === undefined) {
      this.log.error(
        { err, retryInMs: delayMs },
        'no leaf-signing thread could start; new leaves fail with 503 until one does (retrying with a growing delay)',
      );
    }
    clearTimeout(this.outage?.timer);
    this.outage = { cause: err, delayMs, timer: setTimeout(this.restart, delayMs).unref() };
    this.queued.abort();
    this.queued = unboundedAbortController();
  };

  /** A thread failed while others run or start: said once until a thread starts again. */
  private threadFailed(err: unknown): void {
    if (!this.extraThreadFailed) this.log.warn({ err }, 'a leaf-signing thread failed; the others keep signing');
    this.extraThreadFailed = true;
  }

  /** A batch piscina failed is worth a second try: its thread died, and the pool is neither closed nor without threads. */
  private mayResend(err: unknown): boolean {
    return !this.closed && this.outage === undefined && !isAbort(err);
  }

  /** One attempt to start a thread: a cheap task makes piscina start one, and settles either way. */
  private readonly restart = (): void => {
    if (this.closed || this.outage === undefined) return;
    const attempt = this.outage;
    this.pool.run([], { name: SCHEDULING_POLICY, signal: this.queued.signal }).then(
      () => {
        if (this.outage !== attempt) return;
        this.outage = undefined;
        this.log.info({}, 'a leaf-signing thread started again; signing resumes');
      },
      (err: unknown) => {
        // Usually the pool's 'error' has scheduled the next attempt; a thread that failed with the task did not.
        if (this.outage === attempt) this.onPoolError(err);
      },
    );
  };

  /** How a signing thread runs, as one of them reports it. */
  async schedulingPolicy(): Promise<SigningThreadReport> {
    if (this.outage !== undefined) throw this.noThread();
    const report: unknown = await this.pool.run([], { name: SCHEDULING_POLICY, signal: this.queued.signal });
    return report as SigningThreadReport;
  }

  /** Worker threads currently running (for metrics and tests). */
  /** Signings and key pairs waiting for a thread: this turn's batch and the pool's queue. */
  get waiting(): number {
    return this.pool.queueSize + this.pending.length + this.pendingKeys.length;
  }

  get threads(): number {
    return this.pool.threads.length;
  }

  sign(task: SignTask): Promise<SignedMaterial> {
    if (this.closed) return Promise.reject(unavailable('the signing pool is closed'));
    if (this.outage !== undefined) return Promise.reject(this.noThread());
    return new Promise((resolve, reject) => {
      if (this.pending.length === 0) queueMicrotask(this.flush);
      this.pending.push({ task, withCa: false, resolve, reject });
    });
  }

  generateKey(): Promise<GeneratedKey> {
    if (this.closed) return Promise.reject(unavailable('the signing pool is closed'));
    if (this.outage !== undefined) return Promise.reject(this.noThread());
    return new Promise((resolve, reject) => {
      if (this.pendingKeys.length === 0) queueMicrotask(this.flushKeys);
      this.pendingKeys.push({ resolve, reject });
    });
  }

  private readonly flushKeys = (): void => {
    const waiting = this.pendingKeys;
    this.pendingKeys = [];
    for (let i = 0; i < waiting.length; i += MAX_BATCH) {
      const batch = waiting.slice(i, i + MAX_BATCH);
      // Another named export of the same worker file, with its own argument and result types.
      const pool = this.pool as unknown as Piscina<number, GeneratedKey[]>;
      pool.run(batch.length, { name: GENERATE_KEYS, signal: this.queued.signal }).then(
        (keys) => batch.forEach((w, j) => w.resolve(keys[j] as GeneratedKey)),
        (err: unknown) => {
          if (this.mayResend(err) && batch.every((w) => w.resent === undefined)) {
            this.threadFailed(err);
            if (this.pendingKeys.length === 0) queueMicrotask(this.flushKeys);
            this.pendingKeys.push(...batch.map((w) => ({ ...w, resent: true as const })));
            return;
          }
          const failure = this.failure('leaf key generation failed', err);
          for (const w of batch) w.reject(failure);
        },
      );
    }
  };

  /** Sends what was asked for, in batches spread over the threads so each gets a share. */
  private readonly flush = (): void => {
    const waiting = this.pending;
    this.pending = [];
    const size = Math.min(MAX_BATCH, Math.ceil(waiting.length / this.threadCount));
    for (let i = 0; i < waiting.length; i += size) this.send(waiting.slice(i, i + size));
  };

  private send(batch: readonly Waiting[]): void {
    if (batch.length === 0) return;
    this.batches++;
    void this.run(batch);
  }

  private async run(batch: readonly Waiting[]): Promise<void> {
    let results: LeafResult[];
    try {
      results = await this.pool.run(this.tasksOf(batch), { signal: this.queued.signal });
    } catch (err) {
      // A thread that died with the batch (it could not load its code, say): once more, on another.
      if (this.mayResend(err) && batch.every((w) => w.resent === undefined)) {
        this.threadFailed(err);
        this.send(batch.map((w) => ({ ...w, resent: true })));
        return;
      }
      // Piscina's own failures (a worker that died, a destroyed pool) become a code too.
      const failure = this.failure('leaf signing failed', err);
      for (const w of batch) w.reject(failure);
      return;
    }
    const resend: Waiting[] = [];
    batch.forEach((w, i) => {
      const result = results[i] as LeafResult;
      if (!result.ok && result.code === CA_UNKNOWN && !w.withCa && !this.closed) {
        resend.push({ ...w, withCa: true });
        return;
      }
      try {
        w.resolve(resultToMaterial(result));
      } catch (err) {
        w.reject(err);
      }
    });
    this.send(resend);
  }

  /** The batch as sent: each root's material rides with its first task when a worker may lack it. */
  private tasksOf(batch: readonly Waiting[]): LeafTask[] {
    const carried = new Set<string>();
    const needs = new Set(batch.filter((w) => w.withCa || !this.seen.has(w.task.ca.id)).map((w) => w.task.ca.id));
    return batch.map(({ task }) => {
      const id = task.ca.id;
      const withCa = needs.has(id) && !carried.has(id);
      if (withCa) {
        carried.add(id);
        this.seen.add(id);
        this.caTransfers++;
      }
      return leafTask(task, withCa);
    });
  }

  /** A task piscina failed: aborted for want of a thread, a thread that could not start, or else. */
  private failure(what: string, err: unknown): AgentError {
    if (this.outage !== undefined || isThreadStartFailure(err)) return this.noThread(err);
    return unavailable(`${what}: ${(err as Error).message}`, err);
  }

  private noThread(err?: unknown): AgentError {
    const cause = err !== undefined && !isAbort(err) ? err : this.outage?.cause;
    return agentError('CA_SIGNER_NO_THREAD', {
      detail: (cause as Error | undefined)?.message ?? 'unknown cause',
      cause,
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.outage?.timer);
    const failure = unavailable('the signing pool is closed');
    for (const w of this.pending.splice(0)) w.reject(failure);
    for (const w of this.pendingKeys.splice(0)) w.reject(failure);
    await this.pool.destroy();
  }
}

/** Every pending pool task listens on the signal: more than Node's default 10 is normal here. */
function unboundedAbortController(): AbortController {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  return controller;
}

const isAbort = (err: unknown): boolean => (err as Error | undefined)?.name === 'AbortError';

/**
 * A thread that could not be created (Node's ERR_WORKER_INIT_FAILED: EMFILE, no memory for its
 * stack) or could not open its code: signing itself opens no file, so EMFILE means the thread's start.
 */
const THREAD_START_CODES = new Set(['ERR_WORKER_INIT_FAILED', 'EMFILE', 'ENFILE']);
const isThreadStartFailure = (err: unknown): boolean =>
  THREAD_START_CODES.has(String((err as { code?: unknown } | undefined)?.code));

function unavailable(message: string, cause?: unknown): AgentError {
  return agentError('CA_SIGNER_UNAVAILABLE', { detail: message, cause });
}
