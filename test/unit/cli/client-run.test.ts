// The client commands in-process, for what they print before any request: usage mistakes.
import { describe, expect, it } from 'vitest';
import type { Io } from '../../../src/cli/client/command.js';
import { runClient } from '../../../src/cli/client/index.js';

async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const io: Io = {
    out: (text) => void (out += text),
    err: (text) => void (err += text),
    stdin: () => Promise.resolve(''),
    readFile: () => Promise.reject(Object.assign(new Error('no files here'), { code: 'ENOENT' })),
  };
  const code = await runClient(argv, {}, io);
  return { code, out, err };
}

describe('runClient usage mistakes', () => {
  it('names the first missing argument, or says how many were too many, under the usage line', async () => {
    expect(await run('intention', 'check', 'web')).toEqual({
      code: 1,
      out: '',
      err: 'Usage: svc-agent intention check [options] SRC DST\nError! Missing DST argument\n',
    });
    expect(await run('kv', 'get', 'a', 'b')).toEqual({
      code: 1,
      out: '',
      err: 'Usage: svc-agent kv get [options] [KEY_OR_PREFIX]\nToo many arguments (expected 1, got 2)\n',
    });
  });

  it('names the command words of a mistyped command and the one meant, never the words after them', async () => {
    const typo = await run('kv', 'gte', 'my-secret-token');
    expect(typo.code).toBe(1);
    expect(typo.err).toMatch(/^Unknown subcommand of "kv" \(did you mean "kv get"\?\)\.\n\nCommands:\n {4}kv get /);
    expect(typo.err).not.toContain('my-secret-token');
    expect((await run('acl', 'token', 'frob', 'my-secret-token')).err).toMatch(
      /^Unknown subcommand of "acl token"\.\n\nCommands:\n {4}acl token create /,
    );
    expect((await run('kv')).err).toMatch(/^"kv" needs a subcommand\./);
  });

  it('says in one line what is wrong with a flag, a -format or an argument, before sending anything', async () => {
    expect(await run('kv', 'get', '-nope', 'a')).toEqual({
      code: 1,
      out: '',
      err: 'flag provided but not defined: -nope\n',
    });
    expect(await run('kv', 'get', '-recuse', 'a')).toEqual({
      code: 1,
      out: '',
      err: 'flag provided but not defined: -recuse (did you mean -recurse?)\n',
    });
    expect(await run('acl', 'token', 'read', '-self', '-format=yaml')).toEqual({
      code: 1,
      out: '',
      err: 'Unknown format: yaml\n',
    });
    expect(await run('kv', 'get')).toEqual({ code: 1, out: '', err: 'Error! Missing KEY argument\n' });
    expect(await run('kv', 'import', '')).toEqual({ code: 1, out: '', err: 'Error! Empty DATA argument\n' });
    expect(await run('kv', 'put', 'k', '@/none')).toEqual({
      code: 1,
      out: '',
      err: 'Error! Failed to read file: open /none: no such file or directory\n',
    });
    expect(await run('kv', 'delete', '-cas', '-recurse', 'k')).toEqual({
      code: 1,
      out: '',
      err: 'Cannot specify both -cas and -recurse!\n',
    });
    expect(await run('intention', 'create', '-allow', '-deny', 'a', 'b')).toEqual({
      code: 1,
      out: '',
      err: 'Only one of -allow or -deny may be specified.\n',
    });
  });
});
