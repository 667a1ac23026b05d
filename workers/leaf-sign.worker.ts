// Piscina entry point of the leaf-signing pool: a thin shim over LeafWork (src/connect/ca), which
// keeps this thread's prepared CAs. Synchronous on purpose: the thread exists to block.
import { LeafWork } from '../src/connect/ca/leaf-work.js';
import type { LeafResult, LeafTask } from './protocol.js';

const work = new LeafWork();

export function signLeaves(tasks: readonly LeafTask[]): LeafResult[] {
  return tasks.map((task) => work.run(task));
}
