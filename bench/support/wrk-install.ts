// Finds wrk on PATH, or installs Debian's `wrk` package when running as root (the machine image
// does not ship it and a new machine starts without it). Says why when it can do neither.
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { runCommand } from './run-command.js';

export function findOnPath(name: string): string | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

export type WrkLookup = { ok: true; path: string; version: string } | { ok: false; reason: string };

const APT_ENV = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };

async function aptInstallWrk(): Promise<string | undefined> {
  process.stderr.write('wrk not on PATH: apt-get install -y wrk ...\n');
  let result = await runCommand('apt-get', ['install', '-y', 'wrk'], APT_ENV);
  if (result.code !== 0) {
    // A fresh machine has no package lists yet; one update is enough.
    process.stderr.write('apt-get install failed; apt-get update, then retrying ...\n');
    const update = await runCommand('apt-get', ['update'], APT_ENV);
    if (update.code !== 0) return `apt-get update failed: ${update.stderr.trim().slice(-400)}`;
    result = await runCommand('apt-get', ['install', '-y', 'wrk'], APT_ENV);
  }
  return result.code === 0 ? undefined : `apt-get install -y wrk failed: ${result.stderr.trim().slice(-400)}`;
}

async function wrkVersion(path: string): Promise<string> {
  // `wrk -v` prints "wrk 4.1.0 [epoll] ..." then its usage, and exits non-zero; only the line matters.
  const { stdout, stderr } = await runCommand(path, ['-v']);
  return /wrk\s+(\S+)/.exec(stdout + stderr)?.[1] ?? 'unknown';
}

/** wrk's path and version, installing it first if needed and allowed. */
export async function ensureWrk(): Promise<WrkLookup> {
  let path = findOnPath('wrk');
  if (path === undefined) {
    if (process.getuid?.() !== 0)
      return { ok: false, reason: 'wrk is not on PATH and the bench is not root (apt-get install wrk)' };
    if (findOnPath('apt-get') === undefined) return { ok: false, reason: 'wrk is not on PATH and there is no apt-get' };
    const failure = await aptInstallWrk();
    if (failure !== undefined) return { ok: false, reason: failure };
    path = findOnPath('wrk');
    if (path === undefined) return { ok: false, reason: 'apt-get installed wrk but it is not on PATH' };
  }
  return { ok: true, path, version: await wrkVersion(path) };
}
