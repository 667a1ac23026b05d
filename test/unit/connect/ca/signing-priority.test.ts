// enterSigningPriority: what a signing thread does to itself. Lowering is done in a fresh worker
// thread running the built module (an unprivileged thread cannot raise its priority back), and
// checked against the kernel's own account of that thread.
import { once } from 'node:events';
import { getPriority } from 'node:os';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { enterSigningPriority, type SigningThreadReport } from '../../../../src/connect/ca/signing-priority.js';
import { procThreadsAvailable, threadPriority } from '../../../support/proc-threads.js';

const MODULE = new URL('../../../../dist/src/connect/ca/signing-priority.js', import.meta.url).href;

/** Runs enterSigningPriority('low') in a new thread that first sets its own nice to `startNice`. */
async function lowerInWorker(
  startNice?: number,
): Promise<{ report: SigningThreadReport; kernelNice: number | undefined }> {
  const source = `
    const { getPriority, setPriority } = require('node:os');
    const { parentPort } = require('node:worker_threads');
    const start = ${JSON.stringify(startNice ?? null)};
    if (start !== null) setPriority(start);
    import(${JSON.stringify(MODULE)}).then((m) => {
      const report = m.enterSigningPriority('low');
      parentPort.postMessage(report);
      parentPort.once('message', () => {}); // alive until terminated, so that its /proc entry can be read
    });`;
  const worker = new Worker(source, { eval: true });
  try {
    const [report] = (await once(worker, 'message')) as [SigningThreadReport];
    // Read while the thread still lives.
    return { report, kernelNice: report.tid === undefined ? undefined : threadPriority(process.pid, report.tid)?.nice };
  } finally {
    await worker.terminate();
  }
}

describe('enterSigningPriority', () => {
  const processNice = getPriority();

  it("changes nothing with 'normal'", () => {
    const report = enterSigningPriority('normal');
    expect(report).toMatchObject({ priority: 'normal', nice: processNice, reason: undefined });
    expect(getPriority()).toBe(processNice);
  });

  it("keeps the priority where a nice value is the whole process's, and says why", () => {
    expect(enterSigningPriority('low', 'darwin')).toEqual({
      priority: 'normal',
      nice: processNice,
      tid: undefined,
      reason: 'a nice value applies to the whole process on darwin',
    });
    expect(getPriority()).toBe(processNice);
  });

  it.runIf(procThreadsAvailable)('lowers the calling thread by nice +10, and no other', async () => {
    const { report, kernelNice } = await lowerInWorker();
    expect(report).toEqual({
      priority: 'low',
      nice: Math.min(19, processNice + 10),
      tid: expect.any(Number),
      reason: undefined,
    });
    expect(kernelNice).toBe(report.nice);
    expect(getPriority()).toBe(processNice);
    expect(threadPriority(process.pid, process.pid)?.nice).toBe(processNice);
  });

  it.runIf(procThreadsAvailable)('stops at nice 19, the lowest priority there is', async () => {
    const { report, kernelNice } = await lowerInWorker(15);
    expect(report).toMatchObject({ priority: 'low', nice: 19 });
    expect(kernelNice).toBe(19);
  });
});
