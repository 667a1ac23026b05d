// Shared helpers of the state tests: temp data directories and a logger that records entries.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../../../src/core/log.js';
import { DurableMarkWriter } from '../../../src/state/embedded/durable-mark.js';
import type { EmbeddedStore } from '../../../src/state/embedded/embedded-store.js';

export { recordingLogger, type RecordingLogger } from '../../support/recording-logger.js';

/** Makes a temp directory per test; `cleanupDirs` removes them all. */
export function tempDirs(): { make: () => Promise<string>; cleanupDirs: () => Promise<void> } {
  const made: string[] = [];
  return {
    make: async () => {
      const dir = await mkdtemp(join(tmpdir(), 'svc-agent-state-'));
      made.push(dir);
      return dir;
    },
    cleanupDirs: async () => {
      await Promise.all(made.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
    },
  };
}

/** Resolves after the pending setImmediate callbacks (watch deliveries) have run. */
export const nextMacrotask = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Everything a reader can observe of the `kv` and `other` tables, for before/after comparisons. */
export function observe(store: EmbeddedStore, keys: readonly string[]): unknown {
  return {
    index: store.index,
    kv: store.list('kv', ''),
    other: store.list('other', ''),
    keyIndexes: keys.map((k) => store.keyIndex('kv', k)),
    prefixIndexes: ['', 'a', 'b/', 'k1', 'zzz'].map((p) => store.prefixIndex('kv', p)),
    tableIndexes: [store.tableIndex('kv'), store.tableIndex('other')],
  };
}

/** Sets the durable mark of a closed store's directory, as if the log had last been marked at `index`. */
export async function setDurableMark(dataDir: string, index: number): Promise<void> {
  const mark = await DurableMarkWriter.open(join(dataDir, 'state'), index, silentLogger);
  await mark.close();
}
