// Piscina entry point of the leaf-signing pool: a thin shim over LeafWork (src/connect/ca), which
// keeps this thread's prepared CAs. Synchronous on purpose: the thread exists to block.
import { workerData } from 'piscina';
import { LeafWork } from '../src/connect/ca/leaf-work.js';
import { enterIdleScheduling } from './idle-scheduling.js';
import type { LeafResult, LeafTask, SignerWorkerData } from './protocol.js';

const priority = (workerData as SignerWorkerData | undefined)?.priority ?? 'idle';
const scheduling = priority === 'idle' ? enterIdleScheduling() : 'low';
const work = new LeafWork();

export function signLeaves(tasks: readonly LeafTask[]): LeafResult[] {
  return tasks.map((task) => work.run(task));
}

/** How this thread is scheduled: 'idle', 'low' (nice only), or why SCHED_IDLE could not be had. */
export function schedulingPolicy(): string {
  return scheduling;
}
