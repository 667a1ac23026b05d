// Exclusive ownership of a state directory: a LOCK symlink whose target is the owner's pid, so two
// agents never write one WAL; a lock left by a process that no longer runs is taken over.
import { readFile, readlink, symlink, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { AgentError, agentError } from '../../core/errors.js';
import { LOCK_FILE } from '../state-files.js';

export interface DirLock {
  release(): Promise<void>;
}

export async function acquireDirLock(dir: string): Promise<DirLock> {
  const lockPath = join(dir, LOCK_FILE);
  // symlink() is atomic, fails if LOCK exists, and carries the pid in the link itself: LOCK never
  // exists without its owner, and taking it needs no data block, so it works on a full disk.
  for (let attempt = 0; ; attempt++) {
    try {
      await symlink(String(process.pid), lockPath);
      return { release: () => unlink(lockPath).catch(() => undefined) };
    } catch (err) {
      if (!isCode(err, 'EEXIST') || attempt > 0) throw lockError(dir, err);
    }
    const owner = await lockOwner(lockPath);
    if (owner !== undefined && isAlive(owner)) {
      throw agentError('STATE_DIR_LOCKED', { dir, pid: owner, lockFile: lockPath });
    }
    // Stale: its owner died (kill -9, power loss). Two agents restarting on one directory in the
    // same instant could both get here; that is an operator error this check does not cover.
    await unlink(lockPath).catch((err: unknown) => {
      if (!isCode(err, 'ENOENT')) throw lockError(dir, err);
    });
  }
}

/** The pid a lock names: a symlink's target, or the text of a LOCK file written by older versions. */
async function lockOwner(lockPath: string): Promise<number | undefined> {
  const text = await readlink(lockPath).catch(() => readFile(lockPath, 'utf8').catch(() => ''));
  const pid = Number.parseInt(text, 10);
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

function isAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return isCode(err, 'EPERM');
  }
}

function isCode(err: unknown, code: string): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === code;
}

function lockError(dir: string, cause: unknown): AgentError {
  if (cause instanceof AgentError) return cause;
  return agentError('STATE_DIR_LOCK_FAILED', { dir, cause });
}
