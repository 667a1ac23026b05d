import { chmod, lstat, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makeDir } from '../../../src/core/make-dir.js';
import { tightenPrivateTree } from '../../../src/core/private-files.js';

const modeOf = async (path: string): Promise<string> => ((await lstat(path)).mode & 0o777).toString(8);

describe('private files', () => {
  let root: string | undefined;
  afterEach(async () => {
    if (root !== undefined) await rm(root, { recursive: true, force: true });
  });

  it('makes missing folders 0700 whatever the umask', async () => {
    const previous = process.umask(0o002);
    try {
      root = await mkdtemp(join(tmpdir(), 'svc-private-'));
      await makeDir(join(root, 'a', 'b'));
      expect([await modeOf(join(root, 'a')), await modeOf(join(root, 'a', 'b'))]).toEqual(['700', '700']);
    } finally {
      process.umask(previous);
    }
  });

  it('takes group and other bits off every file and folder, leaves symlinks, and counts what it changed', async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-private-'));
    await mkdir(join(root, 'state'));
    await writeFile(join(root, 'state', 'wal.log'), 'secret');
    await writeFile(join(root, 'node-id'), 'id');
    await writeFile(join(root, 'own'), 'x');
    await chmod(join(root, 'state'), 0o755);
    await chmod(join(root, 'state', 'wal.log'), 0o644);
    await chmod(join(root, 'node-id'), 0o640);
    await chmod(join(root, 'own'), 0o600);
    await symlink('12345', join(root, 'state', 'LOCK'));
    await chmod(root, 0o750);
    expect(await tightenPrivateTree(root)).toEqual({ files: 2, dirs: 2 });
    expect(await modeOf(root)).toBe('700');
    expect(await modeOf(join(root, 'state'))).toBe('700');
    expect(await modeOf(join(root, 'state', 'wal.log'))).toBe('600');
    expect(await modeOf(join(root, 'node-id'))).toBe('600');
    expect(await modeOf(join(root, 'own'))).toBe('600');
    expect((await lstat(join(root, 'state', 'LOCK'))).isSymbolicLink()).toBe(true);
    expect(await tightenPrivateTree(root)).toEqual({ files: 0, dirs: 0 });
    expect(await tightenPrivateTree(join(root, 'missing'))).toEqual({ files: 0, dirs: 0 });
  });
});
