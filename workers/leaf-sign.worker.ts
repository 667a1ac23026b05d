// Piscina entry point of the leaf-signing pool: a thin shim over LeafWork (src/connect/ca), which
// keeps this thread's prepared CAs. Synchronous on purpose: the thread exists to block.
import { workerData } from 'piscina';
import { generateKeyMaterial, LeafWork } from '../src/connect/ca/leaf-work.js';
import { enterIdleScheduling, runYielding } from '../src/core/thread-scheduling.js';
import type { GeneratedKey, LeafResult, LeafTask, SignerWorkerData } from '../src/connect/ca/signing-protocol.js';

const priority = (workerData as SignerWorkerData | undefined)?.priority ?? 'idle';
const scheduling = priority === 'idle' ? enterIdleScheduling() : 'low';
const work = new LeafWork();

/** A batch's leaves, giving the CPU back at least every millisecond (see runYielding). */
export function signLeaves(tasks: readonly LeafTask[]): LeafResult[] {
  return runYielding(tasks, (task) => work.run(task));
}

/** `count` leaf key pairs for a client agent, yielding as signLeaves does. */
export function generateKeys(count: number): GeneratedKey[] {
  return runYielding(Array.from({ length: count }, () => undefined), () => generateKeyMaterial());
}

/** How this thread is scheduled: 'idle', 'low' (nice only), or why SCHED_IDLE could not be had. */
export function schedulingPolicy(): string {
  return scheduling;
}
