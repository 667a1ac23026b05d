// Crash safety: a child commits and prints each acknowledged write, is SIGKILLed mid-stream
// (snapshots included, as the segment limit is small), and every acknowledged write must survive.
// The child runs the compiled store from dist/: `npm test` runs tsc first; this file checks that
// dist exists and is newer than the sources rather than silently testing old code.
import { spawn } from 'node:child_process';
import { readFile, readdir, stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../../src/core/log.js';
import { openEmbeddedStore } from '../../../../src/state/embedded/embedded-store.js';
import { tempDirs } from '../support.js';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const FIXTURE = fileURLToPath(new URL('./fixtures/commit-until-killed.mjs', import.meta.url));
const dirs = tempDirs();
afterEach(dirs.cleanupDirs);

/** The sources the child runs: every file of src/state (its folders too) and the src/core files they import at runtime. */
async function childSources(): Promise<string[]> {
  const entries = await readdir(`${ROOT}src/state`, { recursive: true });
  const state = entries.filter((f) => f.endsWith('.ts')).map((f) => `src/state/${f}`);
  const core = new Set<string>();
  for (const file of state) {
    for (const m of (await readFile(ROOT + file, 'utf8')).matchAll(
      /^import (?!type )[^;]*from '(?:\.\.\/)+core\/([\w-]+)\.js';/gm,
    )) {
      core.add(`src/core/${m[1]}.ts`);
    }
  }
  return [...state, ...core];
}

async function assertDistFresh(): Promise<void> {
  for (const source of await childSources()) {
    const compiled = `${ROOT}dist/${source.replace(/\.ts$/, '.js')}`;
    const built = await stat(compiled).catch(() => undefined);
    if (built === undefined || built.mtimeMs < (await stat(ROOT + source)).mtimeMs) {
      throw new Error(`${compiled} is missing or older than its source: run \`npx tsc -p tsconfig.build.json\` first`);
    }
  }
}

interface Run {
  openedAt: number;
  acked: Map<string, number>;
}

/** Runs the child until it has acknowledged `killAfter` commits, then SIGKILLs it. */
function runAndKill(dataDir: string, round: number, killAfter: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [FIXTURE, dataDir, String(32 * 1024), String(round)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const run: Run = { openedAt: -1, acked: new Map() };
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    createInterface({ input: child.stdout }).on('line', (line) => {
      const [kind, index, key] = line.split(' ');
      if (kind === 'open') run.openedAt = Number(index);
      if (kind === 'ack' && key !== undefined) {
        run.acked.set(key, Number(index));
        if (run.acked.size === killAfter) child.kill('SIGKILL');
      }
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve(run);
      else reject(new Error(`child exited with ${code}: ${stderr}`));
    });
  });
}

describe('kill -9', () => {
  it('keeps every acknowledged write through repeated kills, snapshots included', async () => {
    await assertDistFresh();
    const dataDir = await dirs.make();
    const acked = new Map<string, number>();
    let highest = 0;
    for (let round = 0; round < 3; round++) {
      const run = await runAndKill(dataDir, round, 1500);
      // The reopened child resumed at or after everything acknowledged before.
      expect(run.openedAt).toBeGreaterThanOrEqual(highest);
      for (const [key, index] of run.acked) {
        acked.set(key, index);
        highest = Math.max(highest, index);
      }
    }

    const store = await openEmbeddedStore({ dataDir, log: silentLogger, snapshotEveryBytes: 32 * 1024 });
    expect(store.index).toBeGreaterThanOrEqual(highest);
    expect(store.stats.recovery.snapshotIndex).toBeGreaterThan(0);
    const missing = [...acked].filter(([key, index]) => {
      const row = store.get<string>('kv', key);
      return row === undefined || row.modifyIndex !== index || !row.value.startsWith(`${key}:`);
    });
    expect(missing).toEqual([]);
    expect((await store.commit([{ op: 'set', table: 'kv', key: 'after', value: 1 }])).index).toBe(store.index);
    await store.close();
  }, 60_000);
});
