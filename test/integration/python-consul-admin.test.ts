// Debian's python3-consul (python-consul 0.7.1) administering one agent with ACLs as an operator's
// script does (support/python-consul-admin.py, run phase by phase): a role linking a policy governs a
// token until the role drops it; a jwt auth method with a public key this test made, a binding rule,
// login, the token used and logout, a wrong-audience JWT refused with no token made; config entries
// written, read, listed and deleted with ?cas, the service-intentions entry seen through
// /v1/connect/intentions; a snapshot saved, changes written, restored, and a truncated one refused
// with nothing changed. 0.7.1 has no call for any of these: the script says which calls are the
// library's own (KV, service registration) and which go through its generic c.http path. Between the
// phases this test reads the state back through other routes: fetch, and the svc-agent CLI.
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeArchive, type Archive } from '../../src/snapshot/archive.js';
import { answerOf } from '../support/errors.js';
import { runCli, startAgent, tempDir, type AgentProcess } from './support/agent-process.js';

const run = promisify(execFile);
const ENSURE = resolve(import.meta.dirname, '../../scripts/ensure-python-consul.sh');
const PROGRAM = resolve(import.meta.dirname, 'support/python-consul-admin.py');
const ROOT = 'b1a5ad0c-0000-4000-8000-00000000ad44';

type Step = Record<string, unknown>;
/** The script's `linked` step (roles-link) and `login` step (login): the IDs the later phases take. */
type Linked = Step & { policy_id: string; role_id: string; accessor: string; secret: string };
type LoggedIn = Step & { accessor: string; secret: string };

/** This process's environment without the CONSUL_ variables python-consul would take over its arguments. */
const cleanEnv = (): NodeJS.ProcessEnv =>
  Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(CONSUL|SVC)_/.test(name)));

/** Runs one phase of the script against `port` with `token`; its steps by name. */
async function phase(port: number, token: string, name: string, ...args: string[]): Promise<Map<string, Step>> {
  const python = (await run(ENSURE, [])).stdout.trim();
  const { stdout } = await run(python, [PROGRAM, String(port), token, name, ...args], { env: cleanEnv() });
  const steps = new Map<string, Step>();
  for (const line of stdout.trim().split('\n')) {
    const { step, ...result } = JSON.parse(line) as { step: string } & Step;
    steps.set(step, result);
  }
  return steps;
}

/** What python-consul raises for an answer (answerOf's [status, text]): the class its status maps to, the text it carries. */
function raised([status, text]: [number, string]): Step {
  const refusal = { 400: 'BadRequest', 403: 'ACLPermissionDenied', 404: 'NotFound' }[status as 400 | 403 | 404];
  return refusal === undefined ? { refused: 'ConsulException', text: `${status} ${text}` } : { refused: refusal, text };
}

/** Rows of each table of an archive, as [key, value] by table name. */
function tablesOf(archive: Archive): Map<string, [string, unknown][]> {
  const tables = new Map<string, [string, unknown][]>();
  for (const row of archive.image.rows) {
    const rows = tables.get(row.table) ?? [];
    rows.push([row.key, row.value]);
    tables.set(row.table, rows);
  }
  return tables;
}

describe('python3-consul administering an agent: roles, login, config entries, snapshots', () => {
  let agent: AgentProcess;
  let dir: { path: string; remove: () => Promise<void> };

  const call = (method: string, path: string, token: string = ROOT): Promise<Response> =>
    fetch(`${agent.url}${path}`, { method, headers: { 'X-Consul-Token': token } });
  const read = async <T = Step>(path: string, token?: string): Promise<T> => {
    const res = await call('GET', path, token);
    const text = await res.text();
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${text}`);
    return JSON.parse(text) as T;
  };
  const cli = (...args: string[]) =>
    runCli([...args, '-http-addr', agent.url, '-token', ROOT], { CONSUL_HTTP_TOKEN: '', SVC_HTTP_TOKEN: '' });
  const save = async (): Promise<{ archive: Archive; index: number }> => {
    const res = await call('GET', '/v1/snapshot');
    expect(res.status).toBe(200);
    return {
      archive: decodeArchive(Buffer.from(await res.arrayBuffer())),
      index: Number(res.headers.get('X-Consul-Index')),
    };
  };
  const tokenCount = async (): Promise<number> => (await read<unknown[]>('/v1/acl/tokens')).length;

  beforeAll(async () => {
    dir = await tempDir('svc-py-admin-');
    // A Consul client library reads X-Consul-Index: the header brand it expects (docs/decisions.md D1).
    agent = await startAgent({
      args: ['-node', 'py-admin'],
      config: {
        http_config: { header_brand: 'Consul' },
        acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: ROOT } },
      },
    });
  });
  afterAll(async () => {
    await agent?.stop();
    await dir?.remove();
  });

  it('a role linking a policy governs its token until the role drops the policy', { timeout: 120_000 }, async () => {
    const linked = await phase(agent.port, ROOT, 'roles-link');
    const { policy_id, role_id, accessor, secret, ...link } = linked.get('linked') as Linked;
    expect(link).toEqual({
      role_policies: [{ ID: policy_id, Name: 'py-app' }],
      by_name_id: role_id,
      token_roles: [{ ID: role_id, Name: 'py-app-role' }],
    });
    expect(linked.get('kv')).toEqual({
      allowed: true,
      refused: raised(
        answerOf('ACL_PERMISSION_DENIED', {
          reason: `token with AccessorID '${accessor}' lacks permission 'key:write' on "ops/config"`,
        }),
      ),
      read: 'v1',
    });
    // Read back: the CLI's role, the token's own view of itself, and the keys as they stand.
    const role = await cli('acl', 'role', 'read', '-name', 'py-app-role', '-format', 'json');
    expect(role.code).toBe(0);
    expect(JSON.parse(role.stdout)).toMatchObject({
      ID: role_id,
      Description: 'from python',
      Policies: [{ ID: policy_id, Name: 'py-app' }],
    });
    expect(await read('/v1/acl/token/self', secret)).toMatchObject({
      AccessorID: accessor,
      Roles: [{ ID: role_id, Name: 'py-app-role' }],
    });
    expect((await read<{ ID: string }[]>(`/v1/acl/roles?policy=${policy_id}`)).map((r) => r.ID)).toEqual([role_id]);
    expect((await call('GET', '/v1/kv/ops/config')).status).toBe(404);

    const dropped = await phase(agent.port, ROOT, 'roles-drop', role_id, secret);
    expect(dropped.get('updated')).toEqual({ name: 'py-app-role', policies: [], modified: true });
    const denied = (permission: string) =>
      raised(
        answerOf('ACL_PERMISSION_DENIED', {
          reason: `token with AccessorID '${accessor}' lacks permission '${permission}' on "app/config"`,
        }),
      );
    expect(dropped.get('refused')).toEqual({ write: denied('key:write'), read: denied('key:read') });
    expect(dropped.get('deleted')).toEqual({ deleted: true, read: { refused: 'NotFound', text: '' } });
    const roles = await cli('acl', 'role', 'list', '-format', 'json');
    expect(roles.code).toBe(0);
    expect((JSON.parse(roles.stdout) as { ID: string }[]).map((r) => r.ID)).not.toContain(role_id);
    expect((await call('GET', `/v1/acl/role/${role_id}`)).status).toBe(404);
    const [kv] = await read<{ Value: string }[]>('/v1/kv/app/config');
    expect(Buffer.from(kv?.Value ?? '', 'base64').toString()).toBe('v1');
  });

  it(
    'logs in with a JWT signed by a key this test made, uses the token, logs out; a wrong audience makes none',
    { timeout: 120_000 },
    async () => {
      const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
      // The JWT a CI system would hand its job, signed with a standard library (jose's SignJWT).
      const jwt = (audience: string) =>
        new SignJWT({ service: 'web' })
          .setProtectedHeader({ alg: 'RS256' })
          .setIssuer('https://ci.example')
          .setAudience(audience)
          .setSubject('job-44')
          .setIssuedAt()
          .setExpirationTime('5m')
          .sign(privateKey);

      const setup = await phase(agent.port, ROOT, 'login-setup', pem);
      const method = setup.get('method') as Step & { rule_id: string };
      expect(method).toEqual({
        name: 'py-jwt',
        type: 'jwt',
        ttl: '10m0s',
        keys: 1,
        rule_id: method.rule_id,
        listed: [method.rule_id],
        bind: ['service', '${value.service}'],
      });
      expect(await read(`/v1/acl/binding-rule/${method.rule_id}`)).toMatchObject({ AuthMethod: 'py-jwt' });

      const before = await tokenCount();
      const login = await phase(agent.port, '', 'login', await jwt('svc-agent'), await jwt('someone-else'));
      const { accessor, secret, ...token } = login.get('login') as LoggedIn;
      expect(token).toEqual({
        method: 'py-jwt',
        local: true,
        identities: [{ ServiceName: 'web' }],
        description: 'token created via login: {"ci":"python"}',
        expires: true,
      });
      expect(login.get('use')).toEqual({
        own: true,
        other: raised(
          answerOf('ACL_PERMISSION_DENIED', {
            reason: `token with AccessorID '${accessor}' lacks permission 'service:write' on "db"`,
          }),
        ),
      });
      // Consul answers a refused JWT 500 (a ConsulException to this library); this agent 403 (docs/decisions.md#auth-methods).
      expect(login.get('wrong_audience')).toEqual({
        answer: raised(
          answerOf('ACL_LOGIN_REFUSED', {
            detail: 'error validating claims: aud claim does not match any bound audience',
          }),
        ),
      });
      expect(await tokenCount()).toBe(before + 1);
      expect(await read(`/v1/acl/token/${accessor}`)).toMatchObject({
        AccessorID: accessor,
        AuthMethod: 'py-jwt',
        ServiceIdentities: [{ ServiceName: 'web' }],
      });
      expect(Object.keys(await read('/v1/agent/services'))).toContain('py-web-1');

      const logout = await phase(agent.port, '', 'logout', secret);
      expect(logout.get('logout')).toEqual({
        out: true,
        after: raised(answerOf('ACL_NOT_FOUND')),
        again: raised(answerOf('ACL_NOT_FOUND')),
      });
      expect(await tokenCount()).toBe(before);
      expect((await call('GET', `/v1/acl/token/${accessor}`)).status).toBe(404);
    },
  );

  it(
    'writes, reads, lists and deletes config entries with ?cas; service-intentions is /v1/connect/intentions',
    { timeout: 120_000 },
    async () => {
      const written = await phase(agent.port, ROOT, 'config');
      expect(written.get('config')).toEqual({
        written: [true, true, true],
        protocol: 'http',
        proxy: ['global', { protocol: 'http' }],
        sources: [
          ['py-web', 'allow'],
          ['*', 'deny'],
        ],
        listed: {
          'service-defaults': ['py-web'],
          'proxy-defaults': ['global'],
          'service-intentions': ['py-db'],
        },
        missing: raised(answerOf('CONFIG_ENTRY_NOT_FOUND', { kind: 'service-defaults', name: 'py-none' })),
      });
      const intentions = async () =>
        (await read<{ SourceName: string; DestinationName: string; Action: string }[]>('/v1/connect/intentions'))
          .filter((i) => i.DestinationName === 'py-db')
          .map((i) => [i.SourceName, i.Action]);
      expect(await intentions()).toEqual([
        ['py-web', 'allow'],
        ['*', 'deny'],
      ]);
      const shown = await cli('config', 'read', '-kind', 'service-defaults', '-name', 'py-web');
      expect(shown.code).toBe(0);
      expect(JSON.parse(shown.stdout)).toMatchObject({ Kind: 'service-defaults', Name: 'py-web', Protocol: 'http' });

      const deleted = await phase(agent.port, ROOT, 'config-delete');
      // Per entry: a stale ?cas refused (false) and the entry unchanged, the right one deleted, then 404.
      expect(deleted.get('deleted')).toEqual({
        gone: {
          'service-defaults': [
            false,
            true,
            true,
            raised(answerOf('CONFIG_ENTRY_NOT_FOUND', { kind: 'service-defaults', name: 'py-web' })),
          ],
          'service-intentions': [
            false,
            true,
            true,
            raised(answerOf('CONFIG_ENTRY_NOT_FOUND', { kind: 'service-intentions', name: 'py-db' })),
          ],
        },
      });
      expect(await intentions()).toEqual([]);
      const listed = await cli('config', 'list', '-kind', 'service-defaults');
      expect(listed).toMatchObject({ code: 0, stdout: '' });
      expect((await read<{ Name: string }[]>('/v1/config/proxy-defaults')).map((e) => e.Name)).toEqual(['global']);
    },
  );

  it(
    'saves a snapshot, restores it over later changes, and refuses a truncated one with nothing changed',
    { timeout: 120_000 },
    async () => {
      const file = join(dir.path, 'py.snap');
      const round = await phase(agent.port, ROOT, 'snapshot-round', file);
      const saved = decodeArchive(await readFile(file));
      expect(round.get('saved')).toEqual({
        size: (await readFile(file)).length,
        gzip: true,
        index: String(saved.meta.Index),
        type: 'application/x-gzip',
      });
      expect(round.get('changed')).toEqual({ all: true, count: 103 });
      expect(round.get('restored')).toEqual({
        ok: true,
        values: { 'snap/a': 'saved', 'snap/b': 'kept', 'snap/new': null, 'snap/many/7': null },
      });
      // Read back through the agent's own archive: every table is the saved one.
      const after = await save();
      const want = tablesOf(saved);
      const got = tablesOf(after.archive);
      expect([...got.keys()].sort()).toEqual([...want.keys()].sort());
      for (const [table, rows] of want) expect({ table, rows: got.get(table) }).toEqual({ table, rows });

      const truncated = await phase(agent.port, ROOT, 'snapshot-truncated', file);
      const answer = truncated.get('truncated') as { answer: Step; value: string };
      expect(answer.value).toBe('saved');
      expect(answer.answer).toMatchObject({ refused: 'ConsulException' });
      expect(answer.answer.text).toMatch(/^500 failed to decompress snapshot: /);
      const unchanged = await save();
      expect(unchanged.index).toBe(after.index);
      expect(tablesOf(unchanged.archive)).toEqual(got);
    },
  );
});
