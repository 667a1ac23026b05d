// The CertSigner backed by a piscina pool of workers (workers/leaf-sign.worker.ts): key
// generation, CSR creation and signing all happen off the event loop. The only file that imports
// piscina. A CA's key crosses to a worker once per root: tasks name the CA by ID, and a worker that
// does not hold it yet answers CA_UNKNOWN, upon which the task is resent with the material.
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { CA_UNKNOWN, SIGN_LEAF, type LeafResult, type LeafTask } from '../../../workers/protocol.js';
import { AgentError } from '../../core/errors.js';
import { leafTask, resultToMaterial, type CertSigner, type SignTask, type SignedMaterial } from './signer.js';

export interface PoolSignerOptions {
  /** Worker threads; default: one per core but one (see DEFAULT_THREADS). */
  readonly threads?: number;
  /** The compiled worker file; default: dist/workers/leaf-sign.worker.js. */
  readonly workerFile?: string;
}

/**
 * Every core but one, and at least one. Signing is CPU-bound, so a worker per core would leave the
 * event loop competing with the pool for a core: measured on the 2-core dev VM, 2 workers signed
 * ~2,200 leaves/s with event-loop stalls up to ~5 ms (the OS descheduling the main thread), while
 * one worker signs ~2,000/s (4x the 500/s target) and leaves a core to the HTTP loop.
 * bench/micro/leaf-issue.ts measures both.
 */
export const DEFAULT_THREADS = Math.max(1, availableParallelism() - 1);

/**
 * Signing threads run at a lower scheduling priority (nice +10, Linux; piscina applies it through
 * @napi-rs/nice where available): when the event loop and a signer want the same core, the event
 * loop wins, so a burst of first leaves slows issuance rather than every HTTP answer. With a free
 * core the workers run at full speed (bench/micro/leaf-issue.ts, bench/http/ca.ts).
 */
const WORKER_NICE_INCREMENT = 10;

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

export class PoolSigner implements CertSigner {
  private readonly pool: Piscina<LeafTask, LeafResult>;
  private closed = false;
  /** Tasks that had to carry CA material: at most one per (worker, root). */
  caTransfers = 0;
  private readonly seen = new Set<string>();

  constructor(options: PoolSignerOptions = {}) {
    const threads = Math.max(1, options.threads ?? DEFAULT_THREADS);
    this.pool = new Piscina<LeafTask, LeafResult>({
      filename: options.workerFile ?? defaultWorkerFile(),
      name: SIGN_LEAF,
      minThreads: 1,
      maxThreads: threads,
      idleTimeout: IDLE_TIMEOUT_MS,
      niceIncrement: WORKER_NICE_INCREMENT,
    });
  }

  /** Worker threads currently running (for metrics and tests). */
  get threads(): number {
    return this.pool.threads.length;
  }

  async sign(task: SignTask): Promise<SignedMaterial> {
    // A root never seen before goes with its first task: no worker can hold it yet.
    const first = !this.seen.has(task.ca.id);
    if (first) {
      this.seen.add(task.ca.id);
      this.caTransfers++;
    }
    let result = await this.run(leafTask(task, first));
    if (!result.ok && result.code === CA_UNKNOWN) {
      this.caTransfers++;
      result = await this.run(leafTask(task, true));
    }
    return resultToMaterial(result);
  }

  private async run(task: LeafTask): Promise<LeafResult> {
    if (this.closed) throw new AgentError('CA_SIGNER_UNAVAILABLE', 'unavailable', 'the signing pool is closed');
    try {
      return await this.pool.run(task);
    } catch (err) {
      // Piscina's own failures (a worker that died, a destroyed pool) become a code too.
      throw new AgentError('CA_SIGNER_UNAVAILABLE', 'unavailable', `leaf signing failed: ${(err as Error).message}`, { cause: err });
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.destroy();
  }
}
