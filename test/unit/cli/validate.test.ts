import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runValidate } from '../../../src/cli/validate.js';

async function validate(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runValidate(argv, { out: (t) => void (out += t), err: (t) => void (err += t) });
  return { code, out, err };
}

describe('svc-agent validate', () => {
  let dir: string;
  const file = (name: string): string => join(dir, name);
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-validate-'));
    await writeFile(file('good.json'), JSON.stringify({ data_dir: '/var/lib/svc-agent', datacenter: 'east' }));
    await writeFile(file('typo.json'), JSON.stringify({ data_dir: '/x', datacentre: 'east' }));
    await writeFile(file('no-data-dir.json'), JSON.stringify({ datacenter: 'east' }));
    await writeFile(
      file('block.hcl'),
      'data_dir = "/x"\nservice {\n  name = "web"\n  check {\n    htp = "http://localhost/"\n    interval = "10s"\n  }\n}\n',
    );
    await writeFile(file('old.json'), JSON.stringify({ data_dir: '/x', acl_master_token: 'root' }));
    await mkdir(file('conf.d'));
    await writeFile(join(file('conf.d'), 'a.json'), JSON.stringify({ data_dir: '/x' }));
    await writeFile(join(file('conf.d'), 'b.hcl'), 'node_name = "web-1"\nlog_level = "debug"\n');
    await writeFile(join(file('conf.d'), 'c.hcl'), 'ports { htp = 8500 }\n');
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('says a good file is valid, exit 0, and -quiet says nothing', async () => {
    expect(await validate(file('good.json'))).toEqual({ code: 0, out: 'Configuration is valid!\n', err: '' });
    expect(await validate('-quiet', file('good.json'))).toEqual({ code: 0, out: '', err: '' });
  });

  it('names each problem of a bad file, with the key probably meant, exit 1', async () => {
    const typo = await validate(file('typo.json'));
    expect(typo.code).toBe(1);
    expect(typo.out).toBe('');
    expect(typo.err).toContain('Config validation failed:');
    expect(typo.err).toContain(`${file('typo.json')}: invalid config key datacentre (did you mean datacenter?)`);
    const missing = await validate(file('no-data-dir.json'));
    expect([missing.code, missing.err]).toEqual([1, expect.stringContaining('data_dir')]);
  });

  it('checks service and check blocks as the agent would, naming the file, the block and the key meant', async () => {
    const res = await validate(file('block.hcl'));
    expect(res).toEqual({
      code: 1,
      out: '',
      err: `Config validation failed:\n    ${file('block.hcl')}: service "web" (services[0]): invalid config key check.htp (did you mean check.http?)\n`,
    });
  });

  it('loads a directory as -config-dir does, in lexical order, naming the file of each problem', async () => {
    const res = await validate(file('conf.d'));
    expect(res.code).toBe(1);
    expect(res.err).toContain(join(file('conf.d'), 'c.hcl'));
    expect(res.err).toContain('htp');
    await rm(join(file('conf.d'), 'c.hcl'));
    expect(await validate(file('conf.d'))).toEqual({ code: 0, out: 'Configuration is valid!\n', err: '' });
  });

  it("prints Consul's warnings for deprecated keys and stays valid", async () => {
    const res = await validate(file('old.json'));
    expect(res.code).toBe(0);
    expect(res.err).toContain('acl_master_token');
  });

  it('refuses no paths, a missing path and an unknown flag, exit 1', async () => {
    expect(await validate()).toEqual({
      code: 1,
      out: '',
      err: 'Must specify at least one config file or directory\nUsage: svc-agent validate [-quiet] FILE_OR_DIRECTORY...\n',
    });
    const missing = await validate(file('nope.json'));
    expect([missing.code, missing.err]).toEqual([
      1,
      expect.stringMatching(/^Config validation failed: .*nope\.json: /),
    ]);
    const flag = await validate('-quite', file('good.json'));
    expect([flag.code, flag.err]).toEqual([1, expect.stringContaining('-quite (did you mean -quiet?)')]);
  });
});
