// Running a test process out of file descriptors: its own soft limit lowered with util-linux's
// prlimit (Linux), then every descriptor left taken, then given back.
import { spawnSync } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';

export const hasPrlimit = process.platform === 'linux' && spawnSync('prlimit', ['--version']).status === 0;

/** Sets this process's open-files limits (the soft one may go up to the hard one and back). */
export function setOwnOpenFilesLimit(soft: number, hard: number): void {
  const result = spawnSync('prlimit', [`--pid=${process.pid}`, `--nofile=${soft}:${hard}`]);
  if (result.status !== 0) throw new Error(`prlimit failed: ${result.stderr.toString()}`);
}

/** Opens /dev/null until the process has no descriptor left; returns what it opened. */
export function takeEveryDescriptor(): number[] {
  const held: number[] = [];
  try {
    for (;;) held.push(openSync('/dev/null', 'r'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EMFILE') {
      for (const fd of held) closeSync(fd);
      throw err;
    }
  }
  return held;
}

export function giveBack(held: number[]): void {
  for (const fd of held.splice(0)) closeSync(fd);
}
