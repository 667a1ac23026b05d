// Piscina entry point of the leaf-signing pool: a thin shim over LeafWork (src/connect/ca), which
// keeps this thread's prepared CAs. Synchronous on purpose: the thread exists to block.
import { workerData } from 'piscina';
import { generateKeyMaterial, LeafWork } from '../src/connect/ca/leaf-work.js';
import { enterSigningPriority, type SigningThreadReport } from '../src/connect/ca/signing-priority.js';
import type { GeneratedKey, LeafResult, LeafTask, SignerWorkerData } from '../src/connect/ca/signing-protocol.js';

const scheduling = enterSigningPriority((workerData as SignerWorkerData | undefined)?.priority ?? 'low');
const work = new LeafWork();

/** A batch's leaves, in order. */
export function signLeaves(tasks: readonly LeafTask[]): LeafResult[] {
  return tasks.map((task) => work.run(task));
}

/** `count` leaf key pairs for a client agent. */
export function generateKeys(count: number): GeneratedKey[] {
  return Array.from({ length: count }, () => generateKeyMaterial());
}

/** How this thread runs (see enterSigningPriority). */
export function schedulingPolicy(): SigningThreadReport {
  return scheduling;
}
