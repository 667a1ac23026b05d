// Temp config files and a loader wrapper for the config tests: files go under os.tmpdir() and
// the host name is pinned so defaults do not depend on the machine.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../../src/config/errors.js';
import { loadConfig, systemEnv, type LoadInput } from '../../../src/config/load.js';
import type { AgentConfig } from '../../../src/config/types.js';

/** A host with one private IPv4 address on the default route's interface: what 0.0.0.0 advertises. */
export const testEnv = {
  ...systemEnv,
  hostname: () => 'test-host',
  hostAddresses: () => [
    { interface: 'lo', address: '127.0.0.1', family: 'IPv4' as const, internal: true, defaultRoute: false },
    { interface: 'eth0', address: '10.0.0.7', family: 'IPv4' as const, internal: false, defaultRoute: true },
  ],
};

export function tempDir(): { dir: string; file(name: string, content: unknown): string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'svc-agent-config-'));
  return {
    dir,
    file(name, content) {
      const path = join(dir, name);
      writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
      return path;
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export function load(input: Partial<LoadInput>): AgentConfig {
  return loadConfig({ files: [], flags: {}, dev: true, env: testEnv, ...input });
}

/**
 * A value problem names the file that set the key (`/tmp/c1.json: acl.default_policy: …`; checked
 * in sources.test.ts); these tests compare the rest. File-level problems keep their file.
 */
function withoutFile(problem: string, files: readonly string[]): string {
  for (const file of files) {
    if (problem.startsWith(`${file}: `) && /^[a-z_][a-z0-9_.]*: /.test(problem.slice(file.length + 2)))
      return problem.slice(file.length + 2);
  }
  return problem;
}

/** The problems a load reports (value problems without their file's name); fails the test when it loads. */
export function problemsOf(input: Partial<LoadInput>): readonly string[] {
  try {
    load(input);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.map((p) => withoutFile(p, input.files ?? []));
    throw err;
  }
  throw new Error('expected the config to be rejected');
}
