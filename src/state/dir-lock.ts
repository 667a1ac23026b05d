// Exclusive ownership of a state directory: a LOCK file holding the owner's pid, so two agents
// never write one WAL; a lock left by a process that no longer runs is taken over.
import { link, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AgentError, agentError } from '../core/errors.js';
import { LOCK_FILE } from './state-files.js';

export interface DirLock {
  release(): Promise<void>;
}

export async function acquireDirLock(dir: string): Promise<DirLock> {
  const lockPath = join(dir, LOCK_FILE);
  // Written aside and hard-linked into place: link() is atomic and fails if LOCK exists, so LOCK
  // never exists without its pid (an O_EXCL create followed by a write could be seen empty).
  const tempPath = join(dir, `${LOCK_FILE}.${process.pid}.tmp`);
  await writeFile(tempPath, `${process.pid}\n`);
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await link(tempPath, lockPath);
        return { release: () => unlink(lockPath).catch(() => undefined) };
      } catch (err) {
        if (!isCode(err, 'EEXIST') || attempt > 0) throw lockError(dir, err);
      }
      const owner = Number.parseInt(await readFile(lockPath, 'utf8').catch(() => ''), 10);
      if (Number.isSafeInteger(owner) && owner > 0 && isAlive(owner)) {
        throw agentError('STATE_DIR_LOCKED', { dir, pid: owner, lockFile: lockPath });
      }
      // Stale: its owner died (kill -9, power loss). Two agents restarting on one directory in the
      // same instant could both get here; that is an operator error this check does not cover.
      await unlink(lockPath).catch((err: unknown) => {
        if (!isCode(err, 'ENOENT')) throw lockError(dir, err);
      });
    }
  } finally {
    await unlink(tempPath).catch(() => undefined);
  }
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
