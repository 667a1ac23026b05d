// Auth methods, binding rules, login and logout against the real agent (docs/decisions.md#auth-methods):
// a jwt method whose JWKS a loopback server in this test serves (fetched by the agent, counted,
// refetched after a key rotation), Consul's shapes and texts over HTTP (fetch: the npm consul
// client has no auth method calls), a login token allowed what its service identity allows and
// nothing else, logout, and the CLI's login, logout and acl auth-method / binding-rule commands.
import { createServer, type Server } from 'node:http';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startAgent, tempDir, type AgentProcess } from './support/agent-process.js';
import { signJwt, testKey, type TestKey } from '../unit/acl/auth-methods/jwt-support.js';

const MANAGEMENT = '3f1c1d2e-8a7b-4c6d-9e0f-a1b2c3d4e5f6';
const KEY = testKey('ec', 'k1');
const ROTATED = testKey('rsa', 'k2');
const FORGED = testKey('ec', 'k1');

let agent: AgentProcess;
let jwks: Server;
let jwksUrl = '';
let served: TestKey[] = [KEY];
let jwksFetches = 0;
let dir: { path: string; remove: () => Promise<void> };

function call(method: string, path: string, body?: unknown, token: string | null = MANAGEMENT): Promise<Response> {
  return fetch(`${agent.url}${path}`, {
    method,
    headers: token === null ? {} : { 'X-Svc-Token': token },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

async function ok<T = Record<string, unknown>>(method: string, path: string, body?: unknown, token?: string | null) {
  const res = await call(method, path, body, token);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

async function answer(method: string, path: string, body?: unknown, token?: string | null): Promise<[number, string]> {
  const res = await call(method, path, body, token);
  return [res.status, await res.text()];
}

const nowS = (): number => Math.floor(Date.now() / 1000);
const jwt = (key: TestKey, extra: Record<string, unknown> = {}) =>
  signJwt(
    key,
    {
      iss: 'https://ci.example',
      aud: 'svc-agent',
      sub: 'web',
      project: 'shop',
      iat: nowS() - 5,
      exp: nowS() + 300,
      ...extra,
    },
    { kid: key.jwk.kid as string },
  );

async function tokenCount(): Promise<number> {
  return (await ok<unknown[]>('GET', '/v1/acl/tokens')).length;
}

beforeAll(async () => {
  jwks = createServer((_req, res) => {
    jwksFetches++;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: served.map((k) => k.jwk) }));
  });
  await new Promise<void>((done) => jwks.listen(0, '127.0.0.1', done));
  const address = jwks.address();
  if (address === null || typeof address === 'string') throw new Error('no JWKS address');
  jwksUrl = `http://127.0.0.1:${address.port}/jwks`;
  dir = await tempDir('svc-login-');
  agent = await startAgent({
    config: { acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: MANAGEMENT } } },
  });
});
afterAll(async () => {
  await agent.stop();
  await new Promise((done) => jwks.close(done));
  await dir.remove();
});

describe('auth methods and binding rules over HTTP', () => {
  it('creates, reads, lists and refuses as Consul, with its key order and texts', async () => {
    const created = await ok('PUT', '/v1/acl/auth-method', {
      Name: 'ci',
      Type: 'jwt',
      Description: 'CI jobs',
      MaxTokenTTL: '10m',
      Config: {
        JWKSURL: jwksUrl,
        BoundIssuer: 'https://ci.example',
        BoundAudiences: ['svc-agent'],
        ClaimMappings: { sub: 'name', project: 'project' },
      },
    });
    expect(Object.keys(created)).toEqual([
      'MaxTokenTTL',
      'Name',
      'Type',
      'Description',
      'Config',
      'CreateIndex',
      'ModifyIndex',
    ]);
    expect(created.MaxTokenTTL).toBe('10m0s');
    expect(jwksFetches).toBe(1);
    const read = await ok('GET', '/v1/acl/auth-method/ci');
    expect(read).toEqual(created);
    const list = await ok<Record<string, unknown>[]>('GET', '/v1/acl/auth-methods');
    expect(list.map((m) => Object.keys(m))).toEqual([
      ['MaxTokenTTL', 'Name', 'Type', 'Description', 'CreateIndex', 'ModifyIndex'],
    ]);
    expect(await answer('GET', '/v1/acl/auth-method/nope')).toEqual([
      404,
      'Requested auth method does not exist: ACL not found',
    ]);
    expect(await answer('GET', '/v1/acl/auth-method/')).toEqual([400, 'Missing auth method name']);
    expect(await answer('PUT', '/v1/acl/auth-method', { Name: 'k8s', Type: 'kubernetes' })).toEqual([
      400,
      'Invalid Auth Method: Type should be one of: [jwt]',
    ]);
    expect(await answer('PUT', '/v1/acl/auth-method/other', { Name: 'ci', Type: 'jwt' })).toEqual([
      400,
      'AuthMethod Name in URL and payload do not match',
    ]);
    expect((await answer('GET', '/v1/acl/auth-methods', undefined, null))[0]).toBe(403);

    const rule = await ok('PUT', '/v1/acl/binding-rule', {
      AuthMethod: 'ci',
      Description: 'shop services',
      Selector: 'value.project == shop',
      BindType: 'service',
      BindName: '${value.name}',
    });
    expect(Object.keys(rule)).toEqual([
      'ID',
      'Description',
      'AuthMethod',
      'Selector',
      'BindType',
      'BindName',
      'CreateIndex',
      'ModifyIndex',
    ]);
    expect(await ok('GET', `/v1/acl/binding-rule/${rule.ID as string}`)).toEqual(rule);
    expect(await ok('GET', '/v1/acl/binding-rules?authmethod=ci')).toEqual([rule]);
    expect(await ok('GET', '/v1/acl/binding-rules?authmethod=other')).toEqual([]);
    expect(
      await answer('PUT', '/v1/acl/binding-rule', { AuthMethod: 'ci', BindType: 'service', BindName: 'Web!' }),
    ).toEqual([
      400,
      'Invalid Binding Rule: invalid BindName: failed to validate bindType "service": invalid bind name: "Web!"',
    ]);
  });
});

describe('login and logout over HTTP', () => {
  it('a login token holds what its service identity allows and nothing more; logout deletes it', async () => {
    const token = await ok<Record<string, unknown>>(
      'POST',
      '/v1/acl/login',
      {
        AuthMethod: 'ci',
        BearerToken: await jwt(KEY),
        Meta: { job: '42' },
      },
      null,
    );
    expect(token).toMatchObject({
      Description: 'token created via login: {"job":"42"}',
      ServiceIdentities: [{ ServiceName: 'web' }],
      Local: true,
      AuthMethod: 'ci',
    });
    expect(typeof token.ExpirationTime).toBe('string');
    const secret = token.SecretID as string;
    const register = (name: string) => answer('PUT', '/v1/agent/service/register', { Name: name, Port: 8080 }, secret);
    expect((await register('web'))[0]).toBe(200);
    expect(await register('db')).toEqual([
      403,
      `Permission denied: token with AccessorID '${token.AccessorID as string}' lacks permission 'service:write' on "db"`,
    ]);
    expect(await answer('POST', '/v1/acl/logout', undefined, MANAGEMENT)).toEqual([403, 'Permission denied']);
    expect(await answer('POST', '/v1/acl/logout', undefined, secret)).toEqual([200, 'true']);
    expect(await answer('PUT', '/v1/agent/service/register', { Name: 'web' }, secret)).toEqual([403, 'ACL not found']);
    expect(await answer('POST', '/v1/acl/logout', undefined, secret)).toEqual([403, 'ACL not found']);
  });

  it('refuses forged, expired and wrong-audience JWTs and an unmatched selector with no token made', async () => {
    const before = await tokenCount();
    const login = async (bearer: string) =>
      answer('POST', '/v1/acl/login', { AuthMethod: 'ci', BearerToken: bearer }, null);
    expect(await login(await jwt(FORGED))).toEqual([403, 'error verifying token: failed to verify id token signature']);
    expect(await login(await jwt(KEY, { exp: nowS() - 600 }))).toEqual([
      403,
      'error validating claims: go-jose/go-jose/jwt: validation failed, token is expired (exp)',
    ]);
    expect(await login(await jwt(KEY, { aud: 'other' }))).toEqual([
      403,
      'error validating claims: aud claim does not match any bound audience',
    ]);
    expect(await login(await jwt(KEY, { project: 'other' }))).toEqual([403, 'Permission denied']);
    expect(await answer('POST', '/v1/acl/login', { AuthMethod: 'nope', BearerToken: 'x' }, null)).toEqual([
      403,
      'ACL not found: auth method "nope" not found',
    ]);
    expect(await tokenCount()).toBe(before);
  });

  it('picks up a rotated JWKS key with one more fetch', async () => {
    const fetchesBefore = jwksFetches;
    served = [ROTATED];
    // The agent refetches for an unknown key at most once per 5 s (jwks.ts): a login inside that
    // cooldown is refused, and the test waits for the one after it to be accepted.
    let status = 0;
    while (status !== 200) {
      [status] = await answer('POST', '/v1/acl/login', { AuthMethod: 'ci', BearerToken: await jwt(ROTATED) }, null);
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 500));
    }
    expect(jwksFetches).toBeGreaterThan(fetchesBefore);
    expect(jwksFetches).toBeLessThanOrEqual(fetchesBefore + 2);
  });
});

describe('the CLI', () => {
  const env = { SVC_HTTP_ADDR: '', CONSUL_HTTP_TOKEN: '', SVC_HTTP_TOKEN: '' };
  const cli = (args: string[], token = MANAGEMENT) =>
    runCli(
      [
        args[0] as string,
        ...args.slice(1),
        '-http-addr',
        `127.0.0.1:${agent.port}`,
        ...(token ? ['-token', token] : []),
      ],
      env,
    );

  it('login writes the token to the sink, logout deletes it; auth-method and binding-rule commands', async () => {
    served = [KEY, ROTATED];
    const bearer = join(dir.path, 'jwt');
    const sink = join(dir.path, 'token');
    await writeFile(bearer, `${await jwt(ROTATED)}\n`);
    const login = await cli(
      ['login', '-method', 'ci', '-bearer-token-file', bearer, '-token-sink-file', sink, '-meta', 'pod=a'],
      '',
    );
    expect(login).toMatchObject({ code: 0, stdout: '' });
    const secret = await readFile(sink, 'utf8');
    const self = await ok('GET', '/v1/acl/token/self', undefined, secret);
    expect(self).toMatchObject({ AuthMethod: 'ci', Description: 'token created via login: {"pod":"a"}' });
    expect(await cli(['logout'], secret)).toMatchObject({ code: 0 });
    expect((await answer('GET', '/v1/acl/token/self', undefined, secret))[0]).toBe(403);
    const missing = await cli(['login', '-bearer-token-file', bearer, '-token-sink-file', sink], '');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("Missing required '-method' flag");

    const config = join(dir.path, 'config.json');
    await writeFile(
      config,
      JSON.stringify({
        JWTValidationPubKeys: [KEY.publicPem],
        BoundAudiences: ['svc-agent'],
        ClaimMappings: { sub: 'sub' },
      }),
    );
    const created = await cli([
      'acl',
      'auth-method',
      'create',
      '-type',
      'jwt',
      '-name',
      'static',
      '-max-token-ttl',
      '1h',
      '-config',
      `@${config}`,
    ]);
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^Name:\s+static\nType:\s+jwt\nMaxTokenTTL:\s+1h0m0s\nConfig:\n/);
    const rule = await cli([
      'acl',
      'binding-rule',
      'create',
      '-method',
      'static',
      '-bind-type',
      'node',
      '-bind-name',
      'n-${value.sub}',
      '-format',
      'json',
    ]);
    expect(rule).toMatchObject({ code: 0, stderr: '' });
    const ruleId = (JSON.parse(rule.stdout) as { ID: string }).ID;
    expect((await cli(['acl', 'binding-rule', 'read', '-id', ruleId])).stdout).toContain('BindType:     node');
    expect((await cli(['acl', 'binding-rule', 'update', '-id', ruleId, '-description', 'nodes'])).stdout).toContain(
      'Description:  nodes',
    );
    expect((await cli(['acl', 'binding-rule', 'list', '-method', 'static'])).stdout).toContain(`${ruleId}:`);
    expect((await cli(['acl', 'auth-method', 'update', '-name', 'static', '-description', 'keys'])).stdout).toContain(
      'Description:   keys',
    );
    expect((await cli(['acl', 'auth-method', 'list'])).stdout).toMatch(/^ci:\n[\s\S]*static:\n/);
    expect((await cli(['acl', 'auth-method', 'read', '-name', 'static'])).code).toBe(0);
    expect((await cli(['acl', 'auth-method', 'delete', '-name', 'static'])).stdout).toBe(
      'Auth-method "static" deleted successfully\n',
    );
    expect(await ok('GET', '/v1/acl/binding-rules?authmethod=static')).toEqual([]);
  });
});
