// The main thread's side of the check-runner thread (workers/check-runner.worker.ts): it starts
// the thread at the first probe (an agent without HTTP, TCP or gRPC checks has none), sends which
// probes run, and hands each reported result to the one receiver.
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../core/log.js';
import type { HealthStatus } from './model.js';
import type { FromRunner, ProbeRunner, ProbeSpec, RunnerData, ToRunner } from './probe-protocol.js';

export class ThreadProbeRunner implements ProbeRunner {
  private worker: Worker | undefined;
  private receiver: ((id: string, status: HealthStatus, output: string) => void) | undefined;
  private closed = false;

  constructor(
    private readonly log: Logger,
    private data: RunnerData = { caPem: undefined },
    private readonly workerFile: string = defaultWorkerFile(),
  ) {}

  set(id: string, probe: ProbeSpec): void {
    this.send({ type: 'set', id, probe });
  }

  remove(id: string): void {
    if (this.worker !== undefined) this.send({ type: 'remove', id });
  }

  trust(caPem: string | undefined): void {
    this.data = { caPem };
    // A thread not started yet takes it as its workerData.
    if (this.worker !== undefined) this.send({ type: 'trust', caPem });
  }

  onResult(fn: (id: string, status: HealthStatus, output: string) => void): void {
    this.receiver = fn;
  }

  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  private send(message: ToRunner): void {
    if (this.closed) return;
    this.thread().postMessage(message);
  }

  private thread(): Worker {
    if (this.worker !== undefined) return this.worker;
    const worker = new Worker(this.workerFile, { workerData: this.data });
    // The thread must not keep a stopping agent alive.
    worker.unref();
    worker.on('message', (message: FromRunner) => this.receiver?.(message.id, message.status, message.output));
    worker.on('error', (err) =>
      this.log.error({ err }, 'the check-runner thread failed; HTTP, TCP and gRPC checks stop'),
    );
    this.worker = worker;
    return worker;
  }
}

/** The compiled worker, from this file's place in dist/ (or in src/ under vitest). */
function defaultWorkerFile(): string {
  const here = fileURLToPath(import.meta.url);
  const root = resolve(dirname(here), '../..');
  return join(here.endsWith('.js') ? root : join(root, 'dist'), 'workers', 'check-runner.worker.js');
}
