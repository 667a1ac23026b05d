import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load.js';
import { ConfigError } from '../../../src/config/errors.js';
import { foldBlocks, readConfigSources } from '../../../src/config/sources.js';
import { tempDir, testEnv } from './helpers.js';

const HCL = `
datacenter = "east"
ports {
  http = 8600
}
acl {
  enabled = true
  default_policy = "deny"
  tokens {
    initial_management = "0123456789abcdef0123456789abcdef"
  }
}
cluster {
  etcd {
    endpoints = ["http://127.0.0.1:2379", "http://127.0.0.1:2479"]
  }
}
`;

describe('config sources', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());
  const load = async (paths: Parameters<typeof readConfigSources>[0]) =>
    loadConfig({ sources: await readConfigSources(paths), flags: {}, dev: true, env: testEnv });

  it('reads HCL to the same config as the equivalent JSON', async () => {
    const hcl = tmp.file('agent.hcl', HCL);
    const json = tmp.file('agent.json', {
      datacenter: 'east',
      ports: { http: 8600 },
      acl: {
        enabled: true,
        default_policy: 'deny',
        tokens: { initial_management: '0123456789abcdef0123456789abcdef' },
      },
      cluster: { etcd: { endpoints: ['http://127.0.0.1:2379', 'http://127.0.0.1:2479'] } },
    });
    const fromHcl = await load([{ kind: 'file', path: hcl }]);
    expect(fromHcl).toEqual(await load([{ kind: 'file', path: json }]));
    expect(fromHcl.acl.tokens.initialManagement).toBe('0123456789abcdef0123456789abcdef');
  });

  it("loads a directory's .json and .hcl files in lexical order, skipping others, in command-line order with files", async () => {
    const dir = `${tmp.dir}/conf.d`;
    await import('node:fs/promises').then((fs) => fs.mkdir(dir));
    tmp.file('conf.d/10-base.json', { datacenter: 'a', node_name: 'n-base' });
    tmp.file('conf.d/20-override.hcl', 'datacenter = "b"\n');
    tmp.file('conf.d/README.md', 'not config');
    const later = tmp.file('later.json', { node_name: 'n-later' });
    const c = await load([
      { kind: 'dir', path: dir },
      { kind: 'file', path: later },
    ]);
    expect(c.datacenter).toBe('b');
    expect(c.nodeName).toBe('n-later');
    const first = await load([
      { kind: 'file', path: later },
      { kind: 'dir', path: dir },
    ]);
    expect(first.nodeName).toBe('n-base');
  });

  it('names the file of a syntax error, an unreadable directory, and a bad value', async () => {
    const bad = tmp.file('bad.hcl', 'acl {\n  enabled = \n}\n');
    const problems = async (paths: Parameters<typeof readConfigSources>[0]): Promise<readonly string[]> => {
      try {
        await load(paths);
      } catch (err) {
        if (err instanceof ConfigError) return err.problems;
        throw err;
      }
      throw new Error('loaded');
    };
    expect(await problems([{ kind: 'file', path: bad }])).toEqual([
      expect.stringMatching(new RegExp(`^${bad}: invalid HCL: At 2:`)),
    ]);
    expect(await problems([{ kind: 'dir', path: `${tmp.dir}/nowhere` }])).toEqual([
      `${tmp.dir}/nowhere: cannot read config directory: no such file`,
    ]);
    const a = tmp.file('a.json', { log_level: 'loud' });
    const b = tmp.file('b.hcl', 'acl {\n  default_policy = "maybe"\n}\n');
    expect(
      await problems([
        { kind: 'file', path: a },
        { kind: 'file', path: b },
      ]),
    ).toEqual([
      `${a}: log_level: expected one of "trace", "debug", "info", "warn", "error", got "loud"`,
      `${b}: acl.default_policy: expected "allow" or "deny", got "maybe"`,
    ]);
  });
});

describe('foldBlocks', () => {
  it('folds block lists into objects, merging a repeated block, and leaves value lists alone', () => {
    expect(foldBlocks({ a: [{ b: [{ c: 1 }] }], l: ['x', 'y'], r: [{ p: 1 }, { q: 2 }], e: [] })).toEqual({
      a: { b: { c: 1 } },
      l: ['x', 'y'],
      r: { p: 1, q: 2 },
      e: [],
    });
  });
});
