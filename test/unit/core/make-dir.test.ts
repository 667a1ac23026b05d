import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeDir } from '../../../src/core/make-dir.js';

describe('makeDir', () => {
  const root = mkdtempSync(join(tmpdir(), 'svc-mkdir-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('makes every missing level, and accepts a directory that exists', async () => {
    const deep = join(root, 'a', 'b', 'c');
    await makeDir(deep);
    expect(statSync(deep).isDirectory()).toBe(true);
    await makeDir(deep);
  });

  it('names a file in the way', async () => {
    writeFileSync(join(root, 'file'), 'x');
    await expect(makeDir(join(root, 'file'))).rejects.toThrow(
      `cannot create directory ${join(root, 'file')}: a file of that name is in the way`,
    );
    await expect(makeDir(join(root, 'file', 'sub'))).rejects.toThrow(/cannot create directory .*file\/sub/);
  });

  it.runIf(existsSync('/proc/self'))('fails under /proc instead of looping as a recursive mkdir does', async () => {
    await expect(makeDir('/proc/svc-agent-test/x')).rejects.toThrow(
      'cannot create directory /proc/svc-agent-test: /proc does not take new directories',
    );
  });
});
