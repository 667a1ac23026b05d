// Preloaded into an agent under test (`node --import <this> …`): on SIGUSR2 it runs two full
// collections and writes process.memoryUsage() as JSON to $HEAP_PROBE_FILE, so a bench reads the
// heap a registered catalog takes in the real agent process. Bench-only; the agent never loads it.
import { writeFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

const out = process.env.HEAP_PROBE_FILE;
if (out !== undefined && out !== '') {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  process.on('SIGUSR2', () => {
    // Two: the first may leave objects with finalizers (weak maps' entries) for the second.
    gc();
    gc();
    writeFileSync(out, JSON.stringify(process.memoryUsage()));
  });
}
