// What a user meets before any code runs: installing the package asks to run nothing of ours, and
// `npm start` compiles only when a source changed (scripts/build-if-stale.mjs).
import { mkdtempSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUILD_MARK, buildIsStale } from '../../scripts/build-if-stale.mjs';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  scripts: Record<string, string>;
};

describe('package.json', () => {
  it('has no script npm runs when the package is installed (npm asks users to approve those)', () => {
    for (const hook of ['preinstall', 'install', 'postinstall', 'prepare'])
      expect(pkg.scripts).not.toHaveProperty(hook);
    expect(pkg.scripts.prepack).toContain('tsconfig.build.json');
  });

  it('starts the agent through the staleness check, not a full compile', () => {
    expect(pkg.scripts.start).toMatch(
      /^node scripts\/build-if-stale\.mjs && node dist\/src\/cli\/main\.js agent -dev$/,
    );
  });
});

describe('build-if-stale', () => {
  function tree(): string {
    const root = mkdtempSync(join(tmpdir(), 'svc-build-'));
    mkdirSync(join(root, 'src/cli'), { recursive: true });
    writeFileSync(join(root, 'src/cli/main.ts'), '');
    return root;
  }
  const at = (root: string, path: string, seconds: number): void => utimesSync(join(root, path), seconds, seconds);

  it('builds when nothing was built yet', () => {
    expect(buildIsStale(tree())).toBe(true);
  });

  it('skips the build when every source is older than it, and builds again after an edit', () => {
    const root = tree();
    mkdirSync(join(root, 'dist/src/cli'), { recursive: true });
    writeFileSync(join(root, BUILD_MARK), '');
    at(root, 'src/cli/main.ts', 1_000);
    at(root, BUILD_MARK, 2_000);
    expect(buildIsStale(root)).toBe(false);
    at(root, 'src/cli/main.ts', 3_000);
    expect(buildIsStale(root)).toBe(true);
  });
});
