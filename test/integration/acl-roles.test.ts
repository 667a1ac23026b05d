// ACL roles and templated policies against the real agent (docs/decisions.md#acl-roles,
// #templated-policies): role CRUD with Consul's shapes and texts, tokens governed through a role
// (an edit in force on the next request), templated policies granting what Consul's templates
// grant, the templated-policy endpoints, and the CLI. The npm consul package has no role calls:
// its generic request path (`_put`/`_get`/`_delete`, papi's) drives them as a user of it would.
import Consul from 'consul';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerOf } from '../support/errors.js';
import { runCli, startAgent, type AgentProcess } from './support/agent-process.js';

const MANAGEMENT = '5a1c1d2e-8a7b-4c6d-9e0f-a1b2c3d4e5f6';
const MISSING = 'dddddddd-1111-2222-3333-444444444444';

let agent: AgentProcess;

function call(method: string, path: string, body?: unknown, token: string = MANAGEMENT): Promise<Response> {
  const init: RequestInit = { method, headers: { 'X-Consul-Token': token } };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  return fetch(`${agent.url}${path}`, init);
}

async function json<T = Record<string, unknown>>(method: string, path: string, body?: unknown, token?: string) {
  const res = await call(method, path, body, token);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

async function answer(method: string, path: string, body?: unknown, token?: string): Promise<[number, string]> {
  const res = await call(method, path, body, token);
  return [res.status, await res.text()];
}

beforeAll(async () => {
  agent = await startAgent({
    config: { acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: MANAGEMENT } } },
  });
});
afterAll(() => agent.stop());

describe('roles', () => {
  it("create, read by ID and name, update, list (?policy), delete, with Consul's key order", async () => {
    const policy = await json<{ ID: string }>('PUT', '/v1/acl/policy', {
      Name: 'roles-kv',
      Rules: 'key "a" { policy = "read" }',
    });
    const made = await json('PUT', '/v1/acl/role', {
      Name: 'crud',
      Description: 'd',
      Policies: [{ Name: 'roles-kv' }],
      NodeIdentities: [{ NodeName: 'n1', Datacenter: 'dc1' }],
      TemplatedPolicies: [{ TemplateName: 'builtin/service', TemplateVariables: { Name: 'web' } }],
    });
    expect(Object.keys(made)).toEqual([
      'ID',
      'Name',
      'Description',
      'Policies',
      'NodeIdentities',
      'TemplatedPolicies',
      'Hash',
      'CreateIndex',
      'ModifyIndex',
    ]);
    expect(made).toMatchObject({
      Policies: [{ ID: policy.ID, Name: 'roles-kv' }],
      TemplatedPolicies: [
        {
          TemplateID: '00000000-0000-0000-0000-000000000003',
          TemplateName: 'builtin/service',
          TemplateVariables: { name: 'web' },
        },
      ],
    });
    const id = made.ID as string;
    const read = await call('GET', `/v1/acl/role/${id}`);
    expect(Number(read.headers.get('x-svc-index'))).toBe(made.ModifyIndex);
    expect(await read.json()).toEqual(made);
    expect(await json('GET', '/v1/acl/role/name/crud')).toEqual(made);
    const updated = await json('PUT', `/v1/acl/role/${id}`, { Name: 'crud2' });
    expect(updated).toMatchObject({ ID: id, Name: 'crud2', Description: '' });
    expect(updated).not.toHaveProperty('Policies');
    await json('PUT', `/v1/acl/role/${id}`, { ID: id, Name: 'crud2', Policies: [{ ID: policy.ID }] });
    const filtered = await json<{ ID: string }[]>('GET', `/v1/acl/roles?policy=${policy.ID}`);
    expect(filtered.map((r) => r.ID)).toEqual([id]);
    expect(await json('DELETE', `/v1/acl/role/${id}`)).toBe(true);
    expect(await json('DELETE', `/v1/acl/role/${id}`)).toBe(true);
    expect(await answer('GET', `/v1/acl/role/${id}`)).toEqual([404, '']);
    expect(await answer('GET', '/v1/acl/role/name/crud2')).toEqual([404, '']);
  });

  it("answers mistakes with Consul's texts and codes", async () => {
    await json('PUT', '/v1/acl/role', { Name: 'taken' });
    expect(await answer('GET', '/v1/acl/role/')).toEqual(answerOf('ACL_MISSING_ROLE_ID'));
    expect(await answer('GET', '/v1/acl/role/name/')).toEqual(answerOf('ACL_MISSING_ROLE_NAME'));
    expect(await answer('PUT', '/v1/acl/role', {})).toEqual(answerOf('ACL_ROLE_NO_NAME'));
    expect(await answer('PUT', '/v1/acl/role', { Name: 'TAKEN' })).toEqual(
      answerOf('ACL_ROLE_NAME_IN_USE', { name: 'TAKEN' }),
    );
    expect(await answer('PUT', `/v1/acl/role/${MISSING}`, { Name: 'x' })).toEqual(
      answerOf('ACL_ROLE_NOT_FOUND', { id: MISSING }),
    );
    expect(await answer('PUT', `/v1/acl/role/${MISSING}`, { ID: 'other', Name: 'x' })).toEqual(
      answerOf('ACL_ROLE_ID_MISMATCH'),
    );
    expect(await answer('PUT', '/v1/acl/role', { Name: 'r', Bogus: 1 })).toEqual(
      answerOf('BODY_DECODE', { prefix: 'Role decoding failed', detail: 'json: unknown field "Bogus"' }),
    );
    expect(await answer('PUT', '/v1/acl/token', { Roles: [{ Name: 'nope' }] })).toEqual(
      answerOf('ACL_TOKEN_NO_ROLE_NAME', { name: 'nope' }),
    );
  });

  it('needs acl:read to read and acl:write to write', async () => {
    const reader = await json<{ SecretID: string }>('PUT', '/v1/acl/token', {
      TemplatedPolicies: [{ TemplateName: 'builtin/dns' }],
    });
    expect((await call('GET', '/v1/acl/roles', undefined, reader.SecretID)).status).toBe(403);
    expect((await call('PUT', '/v1/acl/role', { Name: 'denied' }, reader.SecretID)).status).toBe(403);
  });

  it("the npm consul package's generic request path drives them", async () => {
    const consul = new Consul({ host: '127.0.0.1', port: agent.port, defaults: { token: MANAGEMENT } });
    const client = consul as unknown as GenericClient;
    // The package's own calls add the token from its defaults (its utils.options); a generic call names it.
    const headers = { 'X-Consul-Token': MANAGEMENT };
    const generic: GenericClient = {
      _get: (req, next) => client._get({ ...req, headers }, next),
      _put: (req, next) => client._put({ ...req, headers }, next),
      _delete: (req, next) => client._delete({ ...req, headers }, next),
    };
    const made = (await generic._put(
      { name: 'acl.role.create', path: '/acl/role', type: 'json', body: { Name: 'npm-role' } },
      bodyOf,
    )) as { ID: string; Name: string };
    expect(made.Name).toBe('npm-role');
    const read = (await generic._get({ name: 'acl.role.read', path: `/acl/role/${made.ID}` }, bodyOf)) as {
      Name: string;
    };
    expect(read.Name).toBe('npm-role');
    const token = (await generic._put(
      { name: 'acl.token.create', path: '/acl/token', type: 'json', body: { Roles: [{ Name: 'npm-role' }] } },
      bodyOf,
    )) as { Roles: { ID: string; Name: string }[] };
    expect(token.Roles).toEqual([{ ID: made.ID, Name: 'npm-role' }]);
    expect(await generic._delete({ name: 'acl.role.delete', path: `/acl/role/${made.ID}` }, bodyOf)).toBe(true);
    await expect(generic._get({ name: 'acl.role.read', path: `/acl/role/${made.ID}` }, bodyOf)).rejects.toMatchObject({
      statusCode: 404,
    });
  });
});

interface GenericClient {
  _get(req: Record<string, unknown>, next: typeof bodyOf): Promise<unknown>;
  _put(req: Record<string, unknown>, next: typeof bodyOf): Promise<unknown>;
  _delete(req: Record<string, unknown>, next: typeof bodyOf): Promise<unknown>;
}

/** papi's response middleware, as the consul package's own `utils.body`: the error, else the decoded body. */
function bodyOf(
  request: { err?: unknown; res: { body: unknown } },
  next: (stop: boolean, err?: unknown, value?: unknown) => void,
): void {
  if (request.err) return next(false, request.err);
  next(false, undefined, request.res.body);
}

describe('tokens through roles', () => {
  it('a role governs the requests of a token that links it; an edit is in force on the next request', async () => {
    const kv = await json<{ ID: string }>('PUT', '/v1/acl/policy', {
      Name: 'app-kv',
      Rules: 'key_prefix "app/" { policy = "write" }',
    });
    const role = await json<{ ID: string }>('PUT', '/v1/acl/role', { Name: 'app', Policies: [{ ID: kv.ID }] });
    const token = await json<{ SecretID: string; Roles: unknown }>('PUT', '/v1/acl/token', {
      Roles: [{ Name: 'app' }],
    });
    expect(token.Roles).toEqual([{ ID: role.ID, Name: 'app' }]);
    expect((await call('PUT', '/v1/kv/app/x', 'v', token.SecretID)).status).toBe(200);
    expect((await call('PUT', '/v1/kv/other', 'v', token.SecretID)).status).toBe(403);

    await json('PUT', `/v1/acl/role/${role.ID}`, { Name: 'app', Policies: [] });
    expect((await call('PUT', '/v1/kv/app/x', 'v', token.SecretID)).status).toBe(403);

    await json('PUT', `/v1/acl/role/${role.ID}`, { Name: 'app', Policies: [{ ID: kv.ID }] });
    expect((await call('GET', '/v1/kv/app/x', undefined, token.SecretID)).status).toBe(200);
    await json('DELETE', `/v1/acl/role/${role.ID}`);
    expect((await call('GET', '/v1/kv/app/x', undefined, token.SecretID)).status).toBe(403);
    expect(await json('GET', `/v1/acl/token/${(await tokenSelf(token.SecretID)).AccessorID}`)).not.toHaveProperty(
      'Roles',
    );
  });

  it("builtin/service on a token grants what Consul's template grants: its service and sidecar, read on the rest", async () => {
    const token = await json<{ SecretID: string }>('PUT', '/v1/acl/token', {
      TemplatedPolicies: [{ TemplateName: 'builtin/service', TemplateVariables: { Name: 'web' } }],
    });
    const register = (name: string) => call('PUT', '/v1/agent/service/register', { Name: name }, token.SecretID);
    expect((await register('web')).status).toBe(200);
    expect((await register('web-sidecar-proxy')).status).toBe(200);
    expect((await register('api')).status).toBe(403);
    expect((await call('GET', '/v1/kv/x', undefined, token.SecretID)).status).toBe(403);
    expect((await call('GET', '/v1/acl/tokens', undefined, token.SecretID)).status).toBe(403);
  });

  it('builtin/nomad-server grants acl:write and no KV', async () => {
    const token = await json<{ SecretID: string }>('PUT', '/v1/acl/token', {
      TemplatedPolicies: [{ TemplateName: 'builtin/nomad-server' }],
    });
    expect((await call('GET', '/v1/acl/tokens', undefined, token.SecretID)).status).toBe(200);
    expect((await call('GET', '/v1/kv/x', undefined, token.SecretID)).status).toBe(403);
  });

  it("refuses a templated policy whose variables do not validate, with Consul's text", async () => {
    expect(
      await answer('PUT', '/v1/acl/token', {
        TemplatedPolicies: [{ TemplateName: 'builtin/node', TemplateVariables: {} }],
      }),
    ).toEqual(
      answerOf('ACL_TEMPLATED_INVALID', { owner: 'token', detail: '1 error occurred:\n\t* name is required\n\n' }),
    );
  });
});

async function tokenSelf(secret: string): Promise<{ AccessorID: string }> {
  return json('GET', '/v1/acl/token/self', undefined, secret);
}

describe('templated-policy endpoints', () => {
  it('lists the templates keyed by name, reads one, refuses an unknown name', async () => {
    const all = await json<Record<string, Record<string, string>>>('GET', '/v1/acl/templated-policies');
    expect(Object.keys(all)).toEqual([
      'builtin/api-gateway',
      'builtin/dns',
      'builtin/node',
      'builtin/nomad-client',
      'builtin/nomad-server',
      'builtin/service',
      'builtin/workload-identity',
    ]);
    const dns = await json('GET', '/v1/acl/templated-policy/name/builtin/dns');
    expect(Object.keys(dns)).toEqual(['TemplateName', 'Schema', 'Template', 'Description']);
    expect(dns).toEqual(all['builtin/dns']);
    expect(await answer('GET', '/v1/acl/templated-policy/name/builtin/nope')).toEqual(
      answerOf('ACL_TEMPLATED_NAME_INVALID', { name: 'builtin/nope' }),
    );
    expect(await answer('GET', '/v1/acl/templated-policy/name/')).toEqual(answerOf('ACL_MISSING_TEMPLATED_NAME'));
  });

  it('previews the synthetic policy, validating the variables as Consul does', async () => {
    const preview = await json('POST', '/v1/acl/templated-policy/preview/builtin/service', { Name: 'api' });
    expect(Object.keys(preview)).toEqual(['ID', 'Name', 'Description', 'Rules', 'Hash', 'CreateIndex', 'ModifyIndex']);
    expect(preview).toMatchObject({
      Description: 'synthetic policy generated from templated policy: builtin/service',
      Rules: expect.stringContaining('service "api-sidecar-proxy"'),
      CreateIndex: 0,
    });
    expect(await answer('POST', '/v1/acl/templated-policy/preview/builtin/service', {})).toEqual(
      answerOf('ACL_TEMPLATED_PREVIEW_INVALID', {
        name: 'builtin/service',
        detail: '1 error occurred:\n\t* name is required\n\n',
      }),
    );
    expect((await call('POST', '/v1/acl/templated-policy/preview/builtin/dns')).status).toBe(200);
  });
});

describe('CLI', () => {
  const cli = (...args: string[]) => runCli(['acl', ...args, '-http-addr', agent.url, '-token', MANAGEMENT]);

  it('acl role create|read|update|list|delete and acl token create -role-name, printed as Consul prints them', async () => {
    const created = await cli(
      'role',
      'create',
      '-name',
      'cli-role',
      '-description',
      'from the CLI',
      '-service-identity',
      'web:dc1,dc2',
      '-node-identity',
      'n1:dc1',
      '-templated-policy',
      'builtin/node',
      '-var',
      'name:n2',
    );
    expect(created.code, created.stderr).toBe(0);
    const id = /^ID:\s+(\S+)$/m.exec(created.stdout)?.[1] ?? '';
    expect(created.stdout).toBe(
      `ID:           ${id}\nName:         cli-role\nDescription:  from the CLI\n` +
        'Service Identities:\n   web (Datacenters: dc1, dc2)\nNode Identities:\n   n1 (Datacenter: dc1)\n' +
        'Templated Policies:\n   builtin/node\n      Name: n2\n      Datacenters: all\n',
    );
    const read = await cli('role', 'read', '-name', 'cli-role', '-format', 'json');
    expect(JSON.parse(read.stdout)).toMatchObject({ ID: id, Name: 'cli-role' });
    const updated = await cli(
      'role',
      'update',
      '-id',
      id,
      '-description',
      'changed',
      '-policy-name',
      'global-management',
    );
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.stdout).toContain(
      'Description:  changed\nPolicies:\n   00000000-0000-0000-0000-000000000001 - global-management\n',
    );
    expect(updated.stdout).toContain('   web (Datacenters: dc1, dc2)');
    expect((await cli('role', 'list')).stdout).toContain('cli-role:\n   ID:           ');
    const token = await cli('token', 'create', '-role-name', 'cli-role', '-format', 'json');
    expect(JSON.parse(token.stdout)).toMatchObject({ Roles: [{ ID: id, Name: 'cli-role' }] });
    const deleted = await cli('role', 'delete', '-id', id);
    expect([deleted.code, deleted.stdout]).toEqual([0, `Role "${id}" deleted successfully\n`]);
  });

  it('acl templated-policy list|read|preview', async () => {
    const list = await cli('templated-policy', 'list');
    expect(list.stdout.split('\n')).toContain('builtin/service');
    const read = await cli('templated-policy', 'read', '-name', 'builtin/dns');
    expect(read.stdout).toBe(
      'Name:            builtin/dns\nInput variables: None\nExample usage:\n\tconsul acl token create -templated-policy builtin/dns\n',
    );
    const preview = await cli('templated-policy', 'preview', '-name', 'builtin/node', '-var', 'name:n9');
    expect(preview.code, preview.stderr).toBe(0);
    expect(preview.stdout).toContain('Rules:\n\nnode "n9" {\n\tpolicy = "write"\n}');
  });
});
