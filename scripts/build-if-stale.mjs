#!/usr/bin/env node
// `npm start` runs the compiled agent in dist/; this compiles it first only when a
// source is newer than the last build (a fresh clone after `npm ci`, or an edited file), so a start
// costs a directory walk instead of a 14 s compile.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SOURCES = ['src', 'workers', 'tsconfig.json', 'tsconfig.build.json', 'package.json'];
/** Written by every build (tsc emits every file each time), so its time is the build's. */
export const BUILD_MARK = 'dist/src/cli/main.js';

function newestMtime(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (stat === undefined) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = 0;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

/** Whether `root`'s build is missing or older than one of its sources. */
export function buildIsStale(root) {
  const built = statSync(join(root, BUILD_MARK), { throwIfNoEntry: false });
  if (built === undefined) return true;
  return SOURCES.some((source) => newestMtime(join(root, source)) > built.mtimeMs);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL('..', import.meta.url));
  if (buildIsStale(root)) {
    process.stderr.write('==> Compiling svc-agent (sources changed since the last build)...\n');
    const tsc = spawnSync(
      process.execPath,
      [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
      {
        cwd: root,
        stdio: 'inherit',
      },
    );
    process.exit(tsc.status ?? 1);
  }
}
