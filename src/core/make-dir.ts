// mkdir -p without Node's recursive mkdir, which loops for ever where a parent exists but refuses
// new entries with ENOENT (under /proc, say): each missing level is made in turn, for the owner
// alone (0700, core/private-files.ts), and a refusal is an error naming the directory.
import { mkdir, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { agentError } from './errors.js';
import { PRIVATE_DIR_MODE } from './private-files.js';

export async function makeDir(path: string): Promise<void> {
  try {
    await mkdir(path, { mode: PRIVATE_DIR_MODE });
    return;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      if ((await stat(path)).isDirectory()) return;
      throw agentError('DIR_CREATE_FAILED', { path, reason: 'a file of that name is in the way' });
    }
    const parent = dirname(path);
    if (code !== 'ENOENT' || parent === path)
      throw agentError('DIR_CREATE_FAILED', { path, reason: describe(err), cause: err });
    const parentIsDir = await stat(parent).then(
      (s) => s.isDirectory(),
      () => undefined,
    );
    if (parentIsDir === true)
      throw agentError('DIR_CREATE_FAILED', { path, reason: `${parent} does not take new directories` });
    if (parentIsDir === false) throw agentError('DIR_CREATE_FAILED', { path, reason: `${parent} is not a directory` });
  }
  await makeDir(dirname(path));
  await makeDir(path);
}

function describe(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EROFS') return 'read-only file system';
  if (code === 'ENOTDIR') return 'a parent is not a directory';
  return err instanceof Error ? err.message : String(err);
}
