// What the agent writes under data_dir is for its owner alone: the WAL and snapshots hold the CA
// root's private key and every ACL secret. Files are created 0600 in 0700 folders whatever the
// umask (a mode given at creation is only ever narrowed by it), and a data dir left looser by an
// older version or by hand is tightened once at start, with one warning.
import { chmod, lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from './log.js';

export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_DIR_MODE = 0o700;
/** Group and other permission bits: none may be set under data_dir. */
const SHARED_BITS = 0o077;

export interface Tightened {
  readonly files: number;
  readonly dirs: number;
}

/**
 * Removes group and other permissions from `dir` and everything under it (symlinks are left
 * alone: their own mode means nothing, and their targets are not the agent's). A missing `dir`
 * is nothing to do.
 */
export async function tightenPrivateTree(dir: string): Promise<Tightened> {
  let files = 0;
  let dirs = 0;
  const visit = async (path: string): Promise<void> => {
    let stats;
    try {
      stats = await lstat(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    if (stats.isSymbolicLink()) return;
    const mode = stats.mode & 0o777;
    if (stats.isDirectory()) {
      if ((mode & SHARED_BITS) !== 0 || (mode & PRIVATE_DIR_MODE) !== PRIVATE_DIR_MODE) {
        await chmod(path, PRIVATE_DIR_MODE);
        dirs++;
      }
      for (const name of await readdir(path)) await visit(join(path, name));
    } else if ((mode & SHARED_BITS) !== 0) {
      await chmod(path, mode & ~SHARED_BITS);
      files++;
    }
  };
  await visit(dir);
  return { files, dirs };
}

/** Tightens data_dir at start; says so once when anything was open to other users. */
export async function tightenDataDir(dataDir: string | undefined, log: Logger): Promise<void> {
  if (dataDir === undefined) return;
  const { files, dirs } = await tightenPrivateTree(dataDir);
  if (files + dirs === 0) return;
  log.warn(
    { dataDir, files, folders: dirs },
    'data_dir was readable by other users: its files are now 0600 and its folders 0700 (they hold the CA key and ACL secrets)',
  );
}
