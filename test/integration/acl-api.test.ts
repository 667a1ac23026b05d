// /v1/acl/* against the real agent (docs/decisions.md#acl-api, D2, D3, D4): bootstrap, tokens and
// policies end to end, with Consul's JSON key order, status codes and message texts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { permissionDenied } from '../../src/acl/errors.js';
import { answerOf, answerOfError } from '../support/errors.js';
import { startAgent, type AgentProcess } from './support/agent-process.js';

const MANAGEMENT = '3f1c1d2e-8a7b-4c6d-9e0f-a1b2c3d4e5f6';
const MISSING = 'dddddddd-1111-2222-3333-444444444444';
const GM_ID = '00000000-0000-0000-0000-000000000001';
const ANONYMOUS_ID = '00000000-0000-0000-0000-000000000002';
const TOKEN_KEYS = [
  'AccessorID',
  'SecretID',
  'Description',
  'Policies',
  'Local',
  'CreateTime',
  'Hash',
  'Namespace',
  'CreateIndex',
  'ModifyIndex',
];

let agent: AgentProcess;

interface CallOptions {
  readonly token?: string | null;
  readonly body?: unknown;
}

/** A request as the management token unless told otherwise (`token: null` sends none). */
function call(method: string, path: string, options: CallOptions = {}): Promise<Response> {
  const token = options.token === undefined ? MANAGEMENT : options.token;
  const init: RequestInit = { method, headers: token === null ? {} : { 'X-Svc-Token': token } };
  if (options.body !== undefined)
    init.body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
  return fetch(`${agent.url}${path}`, init);
}

async function json<T = Record<string, unknown>>(method: string, path: string, options: CallOptions = {}): Promise<T> {
  const res = await call(method, path, options);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

async function failure(method: string, path: string, options: CallOptions = {}): Promise<[number, string]> {
  const res = await call(method, path, options);
  return [res.status, await res.text()];
}

beforeAll(async () => {
  agent = await startAgent({
    config: { acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: MANAGEMENT } } },
  });
});
afterAll(() => agent.stop());

describe('bootstrap', () => {
  it('is used up by the initial management token: 403 with the reset index', async () => {
    const [status, text] = await failure('PUT', '/v1/acl/bootstrap', { token: null });
    const resetIndex = /\(reset index: ([1-9]\d*)\)$/.exec(text)?.[1] ?? 'none';
    expect([status, text]).toEqual(answerOf('ACL_BOOTSTRAP_DONE', { resetIndex }));
  });
});

describe('tokens', () => {
  it('creates a token and answers with Consul key order, names filled in', async () => {
    const res = await call('PUT', '/v1/acl/token', {
      body: { Description: 'made', Policies: [{ Name: 'global-management' }] },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    const token = (await res.json()) as Record<string, unknown>;
    expect(Object.keys(token)).toEqual(TOKEN_KEYS);
    expect(token).toMatchObject({
      Description: 'made',
      Policies: [{ ID: GM_ID, Name: 'global-management' }],
      Local: false,
      Namespace: 'default',
    });
    expect(token.SecretID).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });

  it('reads a token: the secret shows with acl:write, `<hidden>` with acl:read only', async () => {
    await json('PUT', '/v1/acl/policy', { body: { Name: 'acl-reader', Rules: 'acl = "read"' } });
    const reader = await json<{ SecretID: string }>('PUT', '/v1/acl/token', {
      body: { Policies: [{ Name: 'acl-reader' }] },
    });
    const target = await json<{ AccessorID: string; SecretID: string }>('PUT', '/v1/acl/token', {
      body: { Description: 'target' },
    });
    const asManager = await call('GET', `/v1/acl/token/${target.AccessorID}`);
    expect(asManager.status).toBe(200);
    expect(Number(asManager.headers.get('x-svc-index'))).toBeGreaterThan(0);
    expect(((await asManager.json()) as { SecretID: string }).SecretID).toBe(target.SecretID);
    const asReader = await json<{ SecretID: string }>('GET', `/v1/acl/token/${target.AccessorID}`, {
      token: reader.SecretID,
    });
    expect(asReader.SecretID).toBe('<hidden>');
    const listed = await json<{ AccessorID: string; SecretID: string }[]>('GET', '/v1/acl/tokens', {
      token: reader.SecretID,
    });
    expect(listed.every((t) => t.SecretID === '<hidden>')).toBe(true);
    const readerId = (await json<{ AccessorID: string }>('GET', '/v1/acl/token/self', { token: reader.SecretID }))
      .AccessorID;
    expect(await failure('PUT', '/v1/acl/token', { token: reader.SecretID, body: {} })).toEqual(
      answerOfError(permissionDenied({ accessorId: readerId, anonymous: false }, 'acl', 'write')),
    );
  });

  it('token/self needs only a valid token and shows the secret', async () => {
    const plain = await json<{ AccessorID: string; SecretID: string }>('PUT', '/v1/acl/token', {
      body: { Description: 'plain' },
    });
    const self = await json<{ AccessorID: string; SecretID: string }>('GET', '/v1/acl/token/self', {
      token: plain.SecretID,
    });
    expect([self.AccessorID, self.SecretID]).toEqual([plain.AccessorID, plain.SecretID]);
    const anonymous = await json<{ AccessorID: string }>('GET', '/v1/acl/token/self', { token: null });
    expect(anonymous.AccessorID).toBe(ANONYMOUS_ID);
    expect(await failure('GET', '/v1/acl/token/self', { token: MISSING })).toEqual(answerOf('ACL_NOT_FOUND'));
    const res = await call('PUT', '/v1/acl/token/self', { body: {} });
    expect([res.status, await res.text(), res.headers.get('allow')]).toEqual([
      ...answerOf('HTTP_METHOD_NOT_ALLOWED', { method: 'PUT' }),
      'OPTIONS,GET',
    ]);
  });

  it('answers missing and malformed requests with 4xx and Consul texts', async () => {
    expect(await failure('GET', `/v1/acl/token/${MISSING}`)).toEqual(answerOf('ACL_TOKEN_READ_NOT_FOUND'));
    expect(await failure('GET', '/v1/acl/token/')).toEqual(answerOf('ACL_MISSING_ACCESSOR'));
    expect(await failure('PUT', `/v1/acl/token/${MISSING}`, { body: {} })).toEqual(
      answerOf('ACL_TOKEN_NOT_FOUND', { accessorId: MISSING }),
    );
    expect(await failure('PUT', `/v1/acl/token/${MISSING}`, { body: { AccessorID: GM_ID } })).toEqual(
      answerOf('ACL_TOKEN_ID_MISMATCH'),
    );
    expect(await failure('DELETE', `/v1/acl/token/${MISSING}`)).toEqual(answerOf('ACL_TOKEN_DELETE_NOT_FOUND'));
    expect(await failure('PUT', `/v1/acl/token/${MISSING}/clone`, { body: {} })).toEqual(
      answerOf('ACL_TOKEN_CLONE_NOT_FOUND'),
    );
    expect(await failure('PUT', '/v1/acl/token', { body: { Policies: [{ Name: 'nope' }] } })).toEqual(
      answerOf('ACL_TOKEN_NO_POLICY_NAME', { name: 'nope' }),
    );
    expect(await failure('PUT', '/v1/acl/token', { body: { Roles: [{ Name: 'ops' }] } })).toEqual(
      answerOf('ACL_TOKEN_NO_ROLE_NAME', { name: 'ops' }),
    );
    expect(await failure('PUT', '/v1/acl/token', { body: { ExpirationTTL: '10s' } })).toEqual(
      answerOf('ACL_TOKEN_EXPIRES_TOO_SOON', { min: '1m0s', expiresIn: '10s' }),
    );
    const decodeFailed = (detail: string) => answerOf('BODY_DECODE', { prefix: 'Token decoding failed', detail });
    expect(await failure('PUT', '/v1/acl/token', { body: { Bogus: true } })).toEqual(
      decodeFailed('json: unknown field "Bogus"'),
    );
    expect(await failure('PUT', '/v1/acl/token', { body: '' })).toEqual(decodeFailed('EOF'));
    expect(await failure('PUT', '/v1/acl/token', { body: { AccessorID: 'x' } })).toEqual(
      answerOf('ACL_TOKEN_ID_NOT_UUID', { field: 'AccessorID' }),
    );
  });

  it("keeps Consul 1.17's TemplatedPolicies on create and update (docs/decisions.md#templated-policies); clone copies the source's, reading only Description", async () => {
    const templated = [{ TemplateName: 'builtin/service', TemplateVariables: { Name: 'web' } }];
    const shown = [
      {
        TemplateID: '00000000-0000-0000-0000-000000000003',
        TemplateName: 'builtin/service',
        TemplateVariables: { name: 'web' },
      },
    ];
    const made = await json<{ AccessorID: string; TemplatedPolicies: unknown }>('PUT', '/v1/acl/token', {
      body: { Description: 't', TemplatedPolicies: templated },
    });
    expect(made.TemplatedPolicies).toEqual(shown);
    const plain = await json<{ AccessorID: string }>('PUT', '/v1/acl/token', {
      body: { Description: 'plain', TemplatedPolicies: [] },
    });
    expect(plain).not.toHaveProperty('TemplatedPolicies');
    const updated = await json<Record<string, unknown>>('PUT', `/v1/acl/token/${plain.AccessorID}`, {
      body: { TemplatedPolicies: templated },
    });
    expect(updated.TemplatedPolicies).toEqual(shown);
    const clone = await json<Record<string, unknown>>('PUT', `/v1/acl/token/${made.AccessorID}/clone`, {
      body: { Description: 'copy', TemplatedPolicies: [{ TemplateName: 'builtin/dns' }] },
    });
    expect(clone).toMatchObject({ Description: 'copy', TemplatedPolicies: shown });
  });

  it('refuses an AccessorID or SecretID in use with 409', async () => {
    const made = await json<{ AccessorID: string; SecretID: string }>('PUT', '/v1/acl/token', { body: {} });
    expect(await failure('PUT', '/v1/acl/token', { body: { AccessorID: made.AccessorID } })).toEqual(
      answerOf('ACL_TOKEN_ID_IN_USE', { field: 'AccessorID' }),
    );
    expect(await failure('PUT', '/v1/acl/token', { body: { SecretID: MANAGEMENT } })).toEqual(
      answerOf('ACL_TOKEN_ID_IN_USE', { field: 'SecretID' }),
    );
  });

  it('updates, clones and deletes', async () => {
    const made = await json<{ AccessorID: string; SecretID: string; CreateIndex: number }>('PUT', '/v1/acl/token', {
      body: { Description: 'v1', Policies: [{ ID: GM_ID }] },
    });
    const updated = await json<{ Description: string; Policies?: unknown; CreateIndex: number; ModifyIndex: number }>(
      'PUT',
      `/v1/acl/token/${made.AccessorID}`,
      { body: { Description: 'v2' } },
    );
    expect(updated.Description).toBe('v2');
    expect(updated.Policies).toBeUndefined();
    expect(updated.CreateIndex).toBe(made.CreateIndex);
    expect(updated.ModifyIndex).toBeGreaterThan(made.CreateIndex);
    const clone = await json<{ AccessorID: string; Description: string }>(
      'PUT',
      `/v1/acl/token/${made.AccessorID}/clone`,
      {
        body: { Description: 'copy' },
      },
    );
    expect(clone.AccessorID).not.toBe(made.AccessorID);
    expect(clone.Description).toBe('copy');
    const res = await call('DELETE', `/v1/acl/token/${made.AccessorID}`);
    expect([res.status, await res.text()]).toEqual([200, 'true']);
    expect(await failure('GET', `/v1/acl/token/${made.AccessorID}`)).toEqual(answerOf('ACL_TOKEN_READ_NOT_FOUND'));
    expect(await failure('GET', '/v1/acl/token/self', { token: made.SecretID })).toEqual(answerOf('ACL_NOT_FOUND'));
  });

  it('a token may not delete itself, and the anonymous token stays', async () => {
    const manager = await json<{ AccessorID: string; SecretID: string }>('PUT', '/v1/acl/token', {
      body: { Policies: [{ ID: GM_ID }] },
    });
    expect(await failure('DELETE', `/v1/acl/token/${manager.AccessorID}`, { token: manager.SecretID })).toEqual(
      answerOf('ACL_TOKEN_DELETE_SELF'),
    );
    expect(await failure('DELETE', `/v1/acl/token/${ANONYMOUS_ID}`)).toEqual(answerOf('ACL_TOKEN_DELETE_ANONYMOUS'));
  });

  it('lists stubs sorted by AccessorID, filtered by ?policy=', async () => {
    const policy = await json<{ ID: string }>('PUT', '/v1/acl/policy', { body: { Name: 'list-filter' } });
    const linked = await json<{ AccessorID: string }>('PUT', '/v1/acl/token', {
      body: { Policies: [{ ID: policy.ID }] },
    });
    const all = await json<{ AccessorID: string }[]>('GET', '/v1/acl/tokens');
    const ids = all.map((t) => t.AccessorID);
    expect(ids).toEqual([...ids].sort());
    expect(ids).toContain(ANONYMOUS_ID);
    const filtered = await json<Record<string, unknown>[]>('GET', `/v1/acl/tokens?policy=${policy.ID}`);
    expect(filtered.map((t) => t.AccessorID)).toEqual([linked.AccessorID]);
    expect(Object.keys(filtered[0]!)).toEqual([
      'AccessorID',
      'SecretID',
      'Description',
      'Policies',
      'Local',
      'CreateTime',
      'Hash',
      'CreateIndex',
      'ModifyIndex',
      'Namespace',
    ]);
  });

  it('puts a token in the namespace of ?ns= or the body (D2)', async () => {
    const viaQuery = await json<{ Namespace: string }>('PUT', '/v1/acl/token?ns=team-a', { body: {} });
    expect(viaQuery.Namespace).toBe('team-a');
    const viaBody = await json<{ AccessorID: string; Namespace: string }>('PUT', '/v1/acl/token', {
      body: { Namespace: 'team-b' },
    });
    expect(viaBody.Namespace).toBe('team-b');
    const inB = await json<{ AccessorID: string }[]>('GET', '/v1/acl/tokens?ns=team-b');
    expect(inB.map((t) => t.AccessorID)).toEqual([viaBody.AccessorID]);
    expect(await failure('PUT', '/v1/acl/token', { body: { Namespace: 'bad_ns' } })).toEqual(
      answerOf('NAMESPACE_INVALID', { name: 'bad_ns' }),
    );
  });

  it('refuses the anonymous caller under default deny with the anonymous wording', async () => {
    expect(await failure('GET', '/v1/acl/tokens', { token: null })).toEqual(
      answerOfError(permissionDenied({ accessorId: ANONYMOUS_ID, anonymous: true }, 'acl', 'read')),
    );
  });
});

describe('policies', () => {
  it('creates with Consul key order and reads by ID and by name', async () => {
    const res = await call('PUT', '/v1/acl/policy', {
      body: { Name: 'team/kv', Description: 'kv', Rules: 'key_prefix "team/" { policy = "write" }' },
    });
    expect(res.status).toBe(200);
    const policy = (await res.json()) as Record<string, unknown>;
    expect(Object.keys(policy)).toEqual(['ID', 'Name', 'Description', 'Rules', 'Hash', 'CreateIndex', 'ModifyIndex']);
    expect(await json('GET', `/v1/acl/policy/${policy.ID as string}`)).toEqual(policy);
    expect(await json('GET', '/v1/acl/policy/name/team%2Fkv')).toEqual(policy);
    expect(await json('GET', '/v1/acl/policy/name/TEAM%252FKV')).toEqual(policy);
  });

  it('answers mistakes with 4xx and Consul texts', async () => {
    await json('PUT', '/v1/acl/policy', { body: { Name: 'taken' } });
    expect(await failure('PUT', '/v1/acl/policy', { body: { Name: 'taken' } })).toEqual(
      answerOf('ACL_POLICY_NAME_IN_USE', { name: 'taken' }),
    );
    expect(await failure('PUT', '/v1/acl/policy', { body: { ID: MISSING, Name: 'x' } })).toEqual(
      answerOf('ACL_POLICY_ID_SET'),
    );
    expect(await failure('PUT', '/v1/acl/policy', { body: {} })).toEqual(answerOf('ACL_POLICY_NO_NAME'));
    expect(await failure('PUT', '/v1/acl/policy', { body: { Name: 'bad', Rules: 'acl = "bad"' } })).toEqual(
      answerOf('ACL_RULES_BAD_LEVEL', { rule: 'acl', policy: 'bad' }),
    );
    expect(await failure('PUT', `/v1/acl/policy/${MISSING}`, { body: { ID: GM_ID, Name: 'x' } })).toEqual(
      answerOf('ACL_POLICY_ID_MISMATCH'),
    );
    expect(await failure('PUT', `/v1/acl/policy/${MISSING}`, { body: { Name: 'x' } })).toEqual(
      answerOf('ACL_POLICY_NOT_FOUND', { id: MISSING }),
    );
    expect(await failure('GET', `/v1/acl/policy/${MISSING}`)).toEqual(answerOf('ACL_POLICY_READ_NOT_FOUND'));
    expect(await failure('GET', '/v1/acl/policy/name/nobody')).toEqual(answerOf('ACL_POLICY_READ_NOT_FOUND'));
    expect(await failure('GET', '/v1/acl/policy/')).toEqual(answerOf('ACL_MISSING_POLICY_ID'));
    expect(await failure('GET', '/v1/acl/policy/name/')).toEqual(answerOf('ACL_MISSING_POLICY_NAME'));
    expect(
      await failure('PUT', `/v1/acl/policy/${GM_ID}`, { body: { Name: 'global-management', Rules: 'acl = "read"' } }),
    ).toEqual(answerOf('ACL_POLICY_BUILTIN_RULES'));
    expect(await failure('DELETE', `/v1/acl/policy/${GM_ID}`)).toEqual(answerOf('ACL_POLICY_BUILTIN_DELETE'));
  });

  it('deletes (a missing policy too) and lists stubs, never null', async () => {
    const made = await json<{ ID: string }>('PUT', '/v1/acl/policy', { body: { Name: 'doomed' } });
    for (const id of [made.ID, MISSING]) {
      const res = await call('DELETE', `/v1/acl/policy/${id}`);
      expect([res.status, await res.text()]).toEqual([200, 'true']);
    }
    const list = await json<Record<string, unknown>[]>('GET', '/v1/acl/policies');
    expect(list.map((p) => p.Name)).toContain('global-management');
    expect(list.map((p) => p.Name)).not.toContain('doomed');
    expect(Object.keys(list[0]!)).toEqual([
      'ID',
      'Name',
      'Description',
      'Datacenters',
      'Hash',
      'CreateIndex',
      'ModifyIndex',
    ]);
  });

  it('a policy edit changes what its tokens may do on the next request', async () => {
    const policy = await json<{ ID: string }>('PUT', '/v1/acl/policy', {
      body: { Name: 'app-writer', Rules: 'key_prefix "app/" { policy = "write" }' },
    });
    const token = await json<{ SecretID: string }>('PUT', '/v1/acl/token', { body: { Policies: [{ ID: policy.ID }] } });
    expect((await call('PUT', '/v1/kv/app/x', { token: token.SecretID, body: 'v' })).status).toBe(200);
    const accessorId = (await json<{ AccessorID: string }>('GET', '/v1/acl/token/self', { token: token.SecretID }))
      .AccessorID;
    const denied = (key: string) =>
      answerOfError(permissionDenied({ accessorId, anonymous: false }, 'key', 'write', key));
    expect(await failure('PUT', '/v1/kv/other/x', { token: token.SecretID, body: 'v' })).toEqual(denied('other/x'));
    await json('PUT', `/v1/acl/policy/${policy.ID}`, {
      body: { Name: 'app-writer', Rules: 'key_prefix "app/" { policy = "read" }' },
    });
    expect(await failure('PUT', '/v1/kv/app/x', { token: token.SecretID, body: 'v' })).toEqual(denied('app/x'));
  });

  it('a blocking list wakes when a policy is written', async () => {
    const first = await call('GET', '/v1/acl/policies');
    const index = Number(first.headers.get('x-svc-index'));
    await first.arrayBuffer();
    const parked = call('GET', `/v1/acl/policies?index=${index}&wait=30s`);
    await json('PUT', '/v1/acl/policy', { body: { Name: 'wakes-the-list' } });
    const woke = await parked;
    expect(Number(woke.headers.get('x-svc-index'))).toBeGreaterThan(index);
    expect(((await woke.json()) as { Name: string }[]).map((p) => p.Name)).toContain('wakes-the-list');
  });
});

describe('with ACLs disabled', () => {
  it('every /v1/acl endpoint answers 401 ACL support disabled', async () => {
    const plain = await startAgent();
    try {
      for (const [method, path] of [
        ['PUT', '/v1/acl/bootstrap'],
        ['PUT', '/v1/acl/token'],
        ['GET', '/v1/acl/token/self'],
        ['GET', '/v1/acl/tokens'],
        ['PUT', '/v1/acl/policy'],
        ['GET', `/v1/acl/policy/${GM_ID}`],
        ['GET', '/v1/acl/policy/name/x'],
        ['GET', '/v1/acl/policies'],
      ] as const) {
        const res = await fetch(`${plain.url}${path}`, { method, ...(method === 'PUT' ? { body: '{}' } : {}) });
        expect([method, path, res.status, await res.text()]).toEqual([method, path, ...answerOf('ACL_DISABLED')]);
      }
    } finally {
      await plain.stop();
    }
  });
});
