// The client commands against a running agent with ACLs on, as a Consul user runs them: address
// and token from SVC_/CONSUL_ variables or flags, Consul's wording, exit codes.
import { createServer } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { MAIN, runCli, startAgent, tempDir, type AgentProcess } from './support/agent-process.js';

const ROOT = 'root-secret';

/** Runs the CLI with `input` on its standard input. */
function runCliWithStdin(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  input: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [MAIN, ...args], {
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('exit', (code) => done({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

// Each case runs a dozen CLI processes, one after another: on a loaded machine one can take 2-3 s
// to start, so the hang guard is longer than the default.
describe('client commands', { timeout: 120_000 }, () => {
  let agent: AgentProcess;
  let dir: { path: string; remove: () => Promise<void> };
  let env: NodeJS.ProcessEnv;
  const cli = (...args: string[]) => runCli(args, env);

  beforeAll(async () => {
    dir = await tempDir('svc-cli-');
    agent = await startAgent({
      config: { acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: ROOT } } },
    });
    env = { SVC_HTTP_ADDR: `127.0.0.1:${agent.port}`, SVC_HTTP_TOKEN: ROOT };
  });
  afterAll(async () => {
    await agent.stop();
    await dir.remove();
  });

  it('kv put, get, get -recurse, -cas and delete', async () => {
    expect(await cli('kv', 'put', 'app/a', 'one')).toMatchObject({
      code: 0,
      stdout: 'Success! Data written to: app/a\n',
    });
    await writeFile(join(dir.path, 'v.txt'), 'from a file');
    expect((await cli('kv', 'put', 'app/b', `@${join(dir.path, 'v.txt')}`)).code).toBe(0);
    expect(await cli('kv', 'get', 'app/a')).toMatchObject({ code: 0, stdout: 'one\n' });
    expect(await cli('kv', 'get', '-recurse', 'app/')).toMatchObject({
      code: 0,
      stdout: 'app/a:one\napp/b:from a file\n',
    });
    const index = (
      (await await fetch(`${agent.url}/v1/kv/app/a`, { headers: { 'X-Svc-Token': ROOT } }).then((r) => r.json())) as {
        ModifyIndex: number;
      }[]
    )[0]!.ModifyIndex;
    expect(await cli('kv', 'put', '-cas', `-modify-index=${index + 1000}`, 'app/a', 'two')).toMatchObject({
      code: 1,
      stderr: 'Error! Did not write to app/a: CAS failed\n',
    });
    expect((await cli('kv', 'put', '-cas', '-modify-index', String(index), 'app/a', 'two')).code).toBe(0);
    expect((await cli('kv', 'get', 'app/a')).stdout).toBe('two\n');
    expect(await cli('kv', 'delete', 'app/a')).toMatchObject({ code: 0, stdout: 'Success! Deleted key: app/a\n' });
    expect(await cli('kv', 'get', 'app/a')).toMatchObject({ code: 1, stderr: 'Error! No key exists at: app/a\n' });
    expect(await cli('kv', 'delete', '-recurse', 'app/')).toMatchObject({
      code: 0,
      stdout: 'Success! Deleted keys with prefix: app/\n',
    });
    expect((await cli('kv', 'get', '-recurse', 'app/')).stdout).toBe('');
  });

  it('reads CONSUL_HTTP_ADDR and CONSUL_HTTP_TOKEN, and flags over both', async () => {
    const consul = { CONSUL_HTTP_ADDR: `http://127.0.0.1:${agent.port}`, CONSUL_HTTP_TOKEN: ROOT };
    expect((await runCli(['kv', 'put', 'c', 'x'], consul)).code).toBe(0);
    expect((await runCli(['kv', 'get', '-http-addr', `127.0.0.1:${agent.port}`, '-token', ROOT, 'c'], {})).stdout).toBe(
      'x\n',
    );
    const denied = await runCli(['kv', 'get', 'c'], { SVC_HTTP_ADDR: `127.0.0.1:${agent.port}` });
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/^Error querying the agent: Unexpected response code: 403 \(Permission denied/);
  });

  it('reads the token from -token-file or CONSUL_HTTP_TOKEN_FILE, over -token, as Consul does', async () => {
    const file = join(dir.path, 'token');
    await writeFile(file, `${ROOT}\n`);
    const addr = { SVC_HTTP_ADDR: `127.0.0.1:${agent.port}` };
    expect(await runCli(['kv', 'put', '-token-file', file, 'tf', 'x'], addr)).toMatchObject({
      code: 0,
      stdout: 'Success! Data written to: tf\n',
    });
    expect(await runCli(['kv', 'get', 'tf'], { ...addr, CONSUL_HTTP_TOKEN_FILE: file })).toMatchObject({
      code: 0,
      stdout: 'x\n',
    });
    expect(
      await runCli(['kv', 'get', '-token', 'not-a-token', 'tf'], { ...addr, SVC_HTTP_TOKEN_FILE: file }),
    ).toMatchObject({ code: 0, stdout: 'x\n' });
    const missing = join(dir.path, 'no-token');
    expect(await runCli(['kv', 'get', '-token-file', missing, 'tf'], addr)).toMatchObject({
      code: 1,
      stderr: `Error loading token file: open ${missing}: no such file or directory\n`,
    });
  });

  it('kv get -detailed, -keys with -separator, -recurse -detailed and -base64', async () => {
    expect((await cli('kv', 'put', '-flags', '42', 'tree/a', '<one>')).code).toBe(0);
    expect((await cli('kv', 'put', 'tree/sub/b', 'two')).code).toBe(0);
    const detailed = await cli('kv', 'get', '-detailed', '/tree/a');
    expect(detailed.code).toBe(0);
    expect(detailed.stdout).toMatch(
      /^CreateIndex {6}\d+\nFlags {12}42\nKey {14}tree\/a\nLockIndex {8}0\nModifyIndex {6}\d+\nSession {10}-\nValue {12}<one>\n$/,
    );
    expect(await cli('kv', 'get', '-keys', 'tree/')).toMatchObject({ code: 0, stdout: 'tree/a\ntree/sub/\n' });
    expect(await cli('kv', 'get', '-keys', '-separator=', 'tree/')).toMatchObject({
      code: 0,
      stdout: 'tree/a\ntree/sub/b\n',
    });
    expect(await cli('kv', 'get', '-keys', 'nothing/')).toMatchObject({ code: 0, stdout: '' });
    expect(await cli('kv', 'get', '-recurse', '-base64', 'tree/')).toMatchObject({
      code: 0,
      stdout: 'tree/a:PG9uZT4=\ntree/sub/b:dHdv\n',
    });
    const both = (await cli('kv', 'get', '-recurse', '-detailed', 'tree/')).stdout.split('\n\n');
    expect(both).toHaveLength(2);
    expect(both[1]).toMatch(/^CreateIndex .*\nFlags {12}0\nKey {14}tree\/sub\/b\n[^]*Value {12}two\n$/);
    expect(await cli('kv', 'get', '-stale', '-datacenter', 'dc1', 'tree/a')).toMatchObject({
      code: 0,
      stdout: '<one>\n',
    });
    expect((await cli('kv', 'delete', '-recurse', 'tree/')).code).toBe(0);
  });

  it("kv export writes Consul's base64 JSON, and kv import reads it back from a file, standard input or the argument", async () => {
    expect((await cli('kv', 'put', '-flags', '7', 'exp/a', 'one & <two>')).code).toBe(0);
    expect((await cli('kv', 'put', 'exp/b/c', '')).code).toBe(0);
    const exported = await cli('kv', 'export', 'exp/');
    expect(exported.code).toBe(0);
    expect(exported.stdout).toBe(
      `[\n\t{\n\t\t"key": "exp/a",\n\t\t"flags": 7,\n\t\t"value": "${Buffer.from('one & <two>').toString('base64')}"\n\t},\n\t{\n\t\t"key": "exp/b/c",\n\t\t"flags": 0,\n\t\t"value": ""\n\t}\n]\n`,
    );
    const file = join(dir.path, 'export.json');
    await writeFile(file, exported.stdout);
    expect((await cli('kv', 'delete', '-recurse', 'exp/')).code).toBe(0);
    expect(await cli('kv', 'export', 'exp/')).toMatchObject({ code: 0, stdout: '[]\n' });
    expect(await cli('kv', 'import', `@${file}`)).toMatchObject({
      code: 0,
      stdout: 'Imported: exp/a\nImported: exp/b/c\n',
    });
    expect(await cli('kv', 'export', 'exp/')).toMatchObject({ code: 0, stdout: exported.stdout });
    expect(await cli('kv', 'get', '-detailed', 'exp/a')).toMatchObject({
      stdout: expect.stringMatching(/^Flags {12}7$/m),
    });
    expect(
      await runCliWithStdin(
        ['kv', 'import', '-'],
        env,
        JSON.stringify([{ key: 'exp/stdin', flags: 0, value: Buffer.from('piped').toString('base64') }]),
      ),
    ).toMatchObject({ code: 0, stdout: 'Imported: exp/stdin\n' });
    expect(await cli('kv', 'import', JSON.stringify([{ key: 'exp/arg', value: 'YXJn' }]))).toMatchObject({
      code: 0,
      stdout: 'Imported: exp/arg\n',
    });
    expect((await cli('kv', 'get', '-recurse', 'exp/')).stdout).toBe(
      'exp/a:one & <two>\nexp/arg:arg\nexp/b/c:\nexp/stdin:piped\n',
    );
    expect(await cli('kv', 'import', '[{"key": "exp/bad", "value": "!!"}]')).toMatchObject({
      code: 1,
      stderr: 'Error base 64 decoding value for key exp/bad: illegal base64 data at input byte 0\n',
    });
    expect(await cli('kv', 'import', '{}')).toMatchObject({
      code: 1,
      stderr: 'Cannot unmarshal data: json: cannot unmarshal object into Go value of type []*impexp.Entry\n',
    });
    expect(await cli('kv', 'import', `@${join(dir.path, 'none.json')}`)).toMatchObject({
      code: 1,
      stderr: `Error! Failed to read file: open ${join(dir.path, 'none.json')}: no such file or directory\n`,
    });
    expect(await cli('kv', 'import')).toMatchObject({ code: 1, stderr: 'Error! Missing DATA argument\n' });
    expect((await cli('kv', 'delete', '-recurse', 'exp/')).code).toBe(0);
  });

  it("-format=json prints the ACL commands' answers as Consul does; another format is refused", async () => {
    const self = await cli('acl', 'token', 'read', '-self', '-format=json');
    expect(self.code).toBe(0);
    expect(self.stdout).toMatch(/^\{\n {4}"AccessorID": /);
    expect(JSON.parse(self.stdout)).toMatchObject({ SecretID: ROOT, Policies: [{ Name: 'global-management' }] });
    const tokens = JSON.parse((await cli('acl', 'token', 'list', '-format', 'json')).stdout) as { SecretID: string }[];
    expect(tokens.map((t) => t.SecretID)).toContain(ROOT);
    const policies = JSON.parse((await cli('acl', 'policy', 'list', '-format=json')).stdout) as { Name: string }[];
    expect(policies.map((p) => p.Name)).toContain('global-management');
    const created = JSON.parse(
      (await cli('acl', 'policy', 'create', '-name', 'json-p', '-rules', 'key "a" { policy = "read" }', '-format=json'))
        .stdout,
    ) as { ID: string; Rules: string };
    expect(created.Rules).toBe('key "a" { policy = "read" }');
    expect(JSON.parse((await cli('acl', 'policy', 'read', '-id', created.ID, '-format=json')).stdout)).toMatchObject({
      Name: 'json-p',
    });
    expect(await cli('acl', 'token', 'read', '-self', '-format=xml')).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'Unknown format: xml\n',
    });
    expect((await cli('acl', 'policy', 'delete', '-id', created.ID)).code).toBe(0);
  });

  it('intention list and get show a namespaced source as ns/name, as Consul Enterprise does', async () => {
    expect(await cli('intention', 'create', '-deny', 'team-a/*', 'db')).toMatchObject({
      code: 0,
      stdout: 'Created: team-a/* => db (deny)\n',
    });
    expect((await cli('intention', 'list')).stdout).toMatch(/^ +team-a\/\* +deny +db +\d+$/m);
    expect((await cli('intention', 'get', 'team-a/*', 'db')).stdout).toMatch(
      /^Source: +team-a\/\*\nDestination: +db\nAction: +deny\n/,
    );
    expect((await cli('intention', 'delete', 'team-a/*', 'db')).code).toBe(0);
  });

  it('members, operator raft list-peers, info and reload', async () => {
    const members = await cli('members');
    expect(members.code).toBe(0);
    expect(members.stdout.split('\n')[0]).toMatch(
      /^Node +Address +Status +Type +Build +Protocol +DC +Partition +Segment$/,
    );
    expect(members.stdout.split('\n')[1]).toMatch(/^\S+ +127\.0\.0\.1:8301 +alive +server /);
    // -detailed: the tags as key=value, sorted, with the partition and segment Consul shows.
    const detailed = (await cli('members', '-detailed')).stdout.split('\n');
    expect(detailed[0]).toMatch(/^Node +Address +Status +Tags$/);
    const [, tags] = /^\S+ +127\.0\.0\.1:8301 +alive +(\S+)$/.exec(detailed[1]!) ?? [];
    const keys = tags!.split(',').map((pair) => pair.split('=')[0]);
    expect(keys).toEqual([...keys].sort());
    expect(tags!.split(',')).toEqual(expect.arrayContaining(['partition=default', 'role=consul', 'segment=<all>']));
    // -status filters by a regular expression; none matching is exit status 2 and no output.
    expect((await cli('members', '-status', '^al')).stdout.split('\n')[1]).toMatch(/ alive /);
    expect(await cli('members', '-status', 'failed')).toMatchObject({ code: 2, stdout: '' });
    // A lone agent is a raft of one: itself, the leader, at its state's index.
    const peers = (await cli('operator', 'raft', 'list-peers')).stdout.split('\n');
    expect(peers[0]).toMatch(/^Node +ID +Address +State +Voter +RaftProtocol +Commit Index +Trails Leader By$/);
    expect(peers[1]).toMatch(/^\S+ +[0-9a-f-]{36} +127\.0\.0\.1:8300 +leader +true +3 +\d+ +-$/);
    const info = await cli('info');
    expect(info.stdout).toContain('consul:\n\tacl = enabled\n');
    expect(await cli('reload')).toMatchObject({ code: 0, stdout: 'Configuration reload triggered\n' });
  });

  it('acl policy and token create, list, read and delete', async () => {
    const created = await cli(
      'acl',
      'policy',
      'create',
      '-name',
      'readers',
      '-description',
      'read all',
      '-rules',
      'key_prefix "" { policy = "read" }',
    );
    expect(created.code).toBe(0);
    const policyId = /^ID: +(\S+)$/m.exec(created.stdout)?.[1];
    expect(created.stdout).toMatch(/^Name: +readers$/m);
    expect((await cli('acl', 'policy', 'list')).stdout).toMatch(/^readers:\n {3}ID: +\S+\n {3}Name: +readers$/m);
    expect((await cli('acl', 'policy', 'read', '-name', 'readers')).stdout).toContain(
      'key_prefix "" { policy = "read" }',
    );
    const token = await cli('acl', 'token', 'create', '-description', 'reader', '-policy-name', 'readers');
    expect(token.code).toBe(0);
    const accessor = /^AccessorID: +(\S+)$/m.exec(token.stdout)?.[1] as string;
    const secret = /^SecretID: +(\S+)$/m.exec(token.stdout)?.[1] as string;
    expect(token.stdout).toContain(`   ${policyId} - readers`);
    // The new token reads KV and may not write it.
    expect((await runCli(['kv', 'put', 'r', 'x'], { ...env, SVC_HTTP_TOKEN: secret })).code).toBe(1);
    expect((await cli('acl', 'token', 'list')).stdout).toContain(`AccessorID:  ${accessor}`);
    expect((await cli('acl', 'token', 'read', '-id', accessor)).stdout).toMatch(/^Description: +reader$/m);
    expect(await cli('acl', 'token', 'delete', '-id', accessor)).toMatchObject({
      code: 0,
      stdout: `Token "${accessor}" deleted successfully\n`,
    });
    expect(await cli('acl', 'policy', 'delete', '-name', 'readers')).toMatchObject({
      code: 0,
      stdout: `Policy "${policyId}" deleted successfully\n`,
    });
  });

  it('acl bootstrap on an agent without a management token, once', async () => {
    const fresh = await startAgent({ config: { acl: { enabled: true, default_policy: 'deny' } } });
    try {
      const first = await runCli(['acl', 'bootstrap'], { SVC_HTTP_ADDR: `127.0.0.1:${fresh.port}` });
      expect(first.code).toBe(0);
      expect(first.stdout).toMatch(/^SecretID: +[0-9a-f-]{36}$/m);
      expect(first.stdout).toContain('00000000-0000-0000-0000-000000000001 - global-management');
      const again = await runCli(['acl', 'bootstrap'], { SVC_HTTP_ADDR: `127.0.0.1:${fresh.port}` });
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/^Error bootstrapping ACLs: Unexpected response code: 403/);
    } finally {
      await fresh.stop();
    }
  });

  it('intention create, get, list, check and delete', async () => {
    expect(await cli('intention', 'create', '-deny', 'web', 'db')).toMatchObject({
      code: 0,
      stdout: 'Created: web => db (deny)\n',
    });
    expect((await cli('intention', 'create', 'web', 'db')).code).toBe(1);
    expect((await cli('intention', 'create', '-replace', '-allow', 'web', 'db')).stdout).toBe(
      'Created: web => db (allow)\n',
    );
    expect((await cli('intention', 'get', 'web', 'db')).stdout).toMatch(
      /^Source: +web\nDestination: +db\nAction: +allow$/m,
    );
    expect((await cli('intention', 'list')).stdout).toMatch(
      /Source +Action +Destination +Precedence\n.*web +allow +db +9/,
    );
    expect(await cli('intention', 'check', 'web', 'db')).toMatchObject({ code: 0, stdout: 'Allowed\n' });
    expect(await cli('intention', 'check', 'api', 'db')).toMatchObject({ code: 2, stdout: 'Denied\n' });
    expect(await cli('intention', 'delete', 'web', 'db')).toMatchObject({ code: 0, stdout: 'Intention deleted.\n' });
  });

  it('connect ca get-config and set-config', async () => {
    const config = JSON.parse((await cli('connect', 'ca', 'get-config')).stdout) as {
      Provider: string;
      Config: Record<string, unknown>;
    };
    expect(config.Provider).toBe('consul');
    const file = join(dir.path, 'ca.json');
    await writeFile(file, JSON.stringify({ Provider: 'consul', Config: { ...config.Config, LeafCertTTL: '24h' } }));
    expect(await cli('connect', 'ca', 'set-config', '-config-file', file)).toMatchObject({
      code: 0,
      stdout: 'Configuration updated!\n',
    });
    expect(
      (JSON.parse((await cli('connect', 'ca', 'get-config')).stdout) as { Config: { LeafCertTTL: string } }).Config
        .LeafCertTTL,
    ).toBe('24h');
  });

  it('lists the commands for an unknown one, and says in one line when the agent is unreachable', async () => {
    const unknown = await cli('acl', 'frobnicate');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('Unknown subcommand of "acl".');
    expect(unknown.stderr).toContain('acl policy create');
    // What follows a mistyped command may be a token: never repeated.
    const typo = await cli('acl', 'toekn', 'read', 's3cret-token');
    expect(typo.stderr).toContain('Unknown subcommand of "acl" (did you mean "acl token"?).');
    expect(typo.stderr).not.toContain('s3cret');
    const top = await cli('frobnicate');
    expect(top.code).toBe(1);
    expect(top.stderr).toContain('kv get');
    const port = await new Promise<number>((done) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => done(p));
      });
    });
    const down = await runCli(['members'], { SVC_HTTP_ADDR: `127.0.0.1:${port}` });
    expect(down.code).toBe(1);
    expect(down.stderr).toBe(
      `Error connecting to the agent at http://127.0.0.1:${port}: dial tcp 127.0.0.1:${port}: connect: connection refused\n`,
    );
  });
});
