// /v1/acl/* against the real agent (docs/decisions.md#acl-api, D2, D3, D4): bootstrap, tokens and
// policies end to end, with Consul's JSON key order, status codes and message texts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from './support/agent-process.js';

const MANAGEMENT = '3f1c1d2e-8a7b-4c6d-9e0f-a1b2c3d4e5f6';
const MISSING = 'dddddddd-1111-2222-3333-444444444444';
const GM_ID = '00000000-0000-0000-0000-000000000001';
const ANONYMOUS_ID = '00000000-0000-0000-0000-000000000002';
const TOKEN_KEYS = ['AccessorID', 'SecretID', 'Description', 'Policies', 'Local', 'CreateTime', 'Hash', 'Namespace', 'CreateIndex', 'ModifyIndex'];

let agent: AgentProcess;

interface CallOptions {
  readonly token?: string | null;
  readonly body?: unknown;
}

/** A request as the management token unless told otherwise (`token: null` sends none). */
function call(method: string, path: string, options: CallOptions = {}): Promise<Response> {
  const token = options.token === undefined ? MANAGEMENT : options.token;
  const init: RequestInit = { method, headers: token === null ? {} : { 'X-Svc-Token': token } };
  if (options.body !== undefined) init.body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
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
  agent = await startAgent({ config: { acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: MANAGEMENT } } } });
});
afterAll(() => agent.stop());

describe('bootstrap', () => {
  it('is used up by the initial management token: 403 with the reset index', async () => {
    const [status, text] = await failure('PUT', '/v1/acl/bootstrap', { token: null });
    expect(status).toBe(403);
    expect(text).toMatch(/^Permission denied: ACL bootstrap no longer allowed \(reset index: [1-9]\d*\)$/);
  });
});

describe('tokens', () => {
  it('creates a token and answers with Consul key order, names filled in', async () => {
    const res = await call('PUT', '/v1/acl/token', { body: { Description: 'made', Policies: [{ Name: 'global-management' }] } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    const token = (await res.json()) as Record<string, unknown>;
    expect(Object.keys(token)).toEqual(TOKEN_KEYS);
    expect(token).toMatchObject({ Description: 'made', Policies: [{ ID: GM_ID, Name: 'global-management' }], Local: false, Namespace: 'default' });
    expect(token.SecretID).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });

  it('reads a token: the secret shows with acl:write, `<hidden>` with acl:read only', async () => {
    await json('PUT', '/v1/acl/policy', { body: { Name: 'acl-reader', Rules: 'acl = "read"' } });
    const reader = await json<{ SecretID: string }>('PUT', '/v1/acl/token', { body: { Policies: [{ Name: 'acl-reader' }] } });
    const target = await json<{ AccessorID: string; SecretID: string }>('PUT', '/v1/acl/token', { body: { Description: 'target' } });
    const asManager = await call('GET', `/v1/acl/token/${target.AccessorID}`);
    expect(asManager.status).toBe(200);
    expect(Number(asManager.headers.get('x-svc-index'))).toBeGreaterThan(0);
    expect(((await asManager.json()) as { SecretID: string }).SecretID).toBe(target.SecretID);
    const asReader = await json<{ SecretID: string }>('GET', `/v1/acl/token/${target.AccessorID}`, { token: reader.SecretID });
    expect(asReader.SecretID).toBe('<hidden>');
    const listed = await json<{ AccessorID: string; SecretID: string }[]>('GET', '/v1/acl/tokens', { token: reader.SecretID });
    expect(listed.every((t) => t.SecretID === '<hidden>')).toBe(true);
    expect(await failure('PUT', '/v1/acl/token', { token: reader.SecretID, body: {} })).toEqual([
      403,
      `Permission denied: token with AccessorID '${(await json<{ AccessorID: string }>('GET', '/v1/acl/token/self', { token: reader.SecretID })).AccessorID}' lacks permission 'acl:write'`,
    ]);
  });

  it('token/self needs only a valid token and shows the secret', async () => {
    const plain = await json<{ AccessorID: string; SecretID: string }>('PUT', '/v1/acl/token', { body: { Description: 'plain' } });
    const self = await json<{ AccessorID: string; SecretID: string }>('GET', '/v1/acl/token/self', { token: plain.SecretID });
    expect([self.AccessorID, self.SecretID]).toEqual([plain.AccessorID, plain.SecretID]);
    const anonymous = await json<{ AccessorID: string }>('GET', '/v1/acl/token/self', { token: null });
    expect(anonymous.AccessorID).toBe(ANONYMOUS_ID);
    expect(await failure('GET', '/v1/acl/token/self', { token: MISSING })).toEqual([403, 'ACL not found']);
    const [status, text] = await failure('PUT', '/v1/acl/token/self', { body: {} });
    expect([status, text]).toEqual([405, 'method PUT not allowed']);
  });

  it('answers missing and malformed requests with 4xx and Consul texts', async () => {
    expect(await failure('GET', `/v1/acl/token/${MISSING}`)).toEqual([404, 'Requested token does not exist: ACL not found']);
    expect(await failure('GET', '/v1/acl/token/')).toEqual([400, 'Missing token AccessorID']);
    expect(await failure('PUT', `/v1/acl/token/${MISSING}`, { body: {} })).toEqual([404, `Cannot find token "${MISSING}"`]);
    expect(await failure('PUT', `/v1/acl/token/${MISSING}`, { body: { AccessorID: GM_ID } })).toEqual([
      400,
      'Token Accessor ID in URL and payload do not match',
    ]);
    expect(await failure('DELETE', `/v1/acl/token/${MISSING}`)).toEqual([404, 'Cannot find token to delete']);
    expect(await failure('PUT', `/v1/acl/token/${MISSING}/clone`, { body: {} })).toEqual([404, 'ACL not found']);
    expect(await failure('PUT', '/v1/acl/token', { body: { Policies: [{ Name: 'nope' }] } })).toEqual([400, 'No such ACL policy with name "nope"']);
    expect(await failure('PUT', '/v1/acl/token', { body: { Roles: [{ Name: 'ops' }] } })).toEqual([400, 'No such ACL role with name "ops"']);
    expect(await failure('PUT', '/v1/acl/token', { body: { ExpirationTTL: '10s' } })).toEqual([
      400,
      'ExpirationTime cannot be less than 1m0s in the future (was 10s)',
    ]);
    expect(await failure('PUT', '/v1/acl/token', { body: { Bogus: true } })).toEqual([400, 'Token decoding failed: json: unknown field "Bogus"']);
    expect(await failure('PUT', '/v1/acl/token', { body: '' })).toEqual([400, 'Token decoding failed: EOF']);
    expect(await failure('PUT', '/v1/acl/token', { body: { AccessorID: 'x' } })).toEqual([400, 'Invalid Token: AccessorID - not a valid UUID']);
  });

  it('refuses an AccessorID or SecretID in use with 409', async () => {
    const made = await json<{ AccessorID: string; SecretID: string }>('PUT', '/v1/acl/token', { body: {} });
    expect(await failure('PUT', '/v1/acl/token', { body: { AccessorID: made.AccessorID } })).toEqual([409, 'Invalid Token: AccessorID is already in use']);
    expect(await failure('PUT', '/v1/acl/token', { body: { SecretID: MANAGEMENT } })).toEqual([409, 'Invalid Token: SecretID is already in use']);
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
    const clone = await json<{ AccessorID: string; Description: string }>('PUT', `/v1/acl/token/${made.AccessorID}/clone`, {
      body: { Description: 'copy' },
    });
    expect(clone.AccessorID).not.toBe(made.AccessorID);
    expect(clone.Description).toBe('copy');
    const res = await call('DELETE', `/v1/acl/token/${made.AccessorID}`);
    expect([res.status, await res.text()]).toEqual([200, 'true']);
    expect((await call('GET', `/v1/acl/token/${made.AccessorID}`)).status).toBe(404);
    expect(await failure('GET', '/v1/acl/token/self', { token: made.SecretID })).toEqual([403, 'ACL not found']);
  });

  it('a token may not delete itself, and the anonymous token stays', async () => {
    const manager = await json<{ AccessorID: string; SecretID: string }>('PUT', '/v1/acl/token', { body: { Policies: [{ ID: GM_ID }] } });
    expect(await failure('DELETE', `/v1/acl/token/${manager.AccessorID}`, { token: manager.SecretID })).toEqual([
      400,
      "Deletion of the request's authorization token is not permitted",
    ]);
    expect(await failure('DELETE', `/v1/acl/token/${ANONYMOUS_ID}`)).toEqual([400, 'Delete operation not permitted on the anonymous token']);
  });

  it('lists stubs sorted by AccessorID, filtered by ?policy=', async () => {
    const policy = await json<{ ID: string }>('PUT', '/v1/acl/policy', { body: { Name: 'list-filter' } });
    const linked = await json<{ AccessorID: string }>('PUT', '/v1/acl/token', { body: { Policies: [{ ID: policy.ID }] } });
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
    const viaBody = await json<{ AccessorID: string; Namespace: string }>('PUT', '/v1/acl/token', { body: { Namespace: 'team-b' } });
    expect(viaBody.Namespace).toBe('team-b');
    const inB = await json<{ AccessorID: string }[]>('GET', '/v1/acl/tokens?ns=team-b');
    expect(inB.map((t) => t.AccessorID)).toEqual([viaBody.AccessorID]);
    expect((await failure('PUT', '/v1/acl/token', { body: { Namespace: 'bad_ns' } }))[0]).toBe(400);
  });

  it('refuses the anonymous caller under default deny with the anonymous wording', async () => {
    expect(await failure('GET', '/v1/acl/tokens', { token: null })).toEqual([
      403,
      "Permission denied: anonymous token lacks permission 'acl:read'. The anonymous token is used implicitly when a request does not specify a token.",
    ]);
  });
});

describe('policies', () => {
  it('creates with Consul key order and reads by ID and by name', async () => {
    const res = await call('PUT', '/v1/acl/policy', { body: { Name: 'team/kv', Description: 'kv', Rules: 'key_prefix "team/" { policy = "write" }' } });
    expect(res.status).toBe(200);
    const policy = (await res.json()) as Record<string, unknown>;
    expect(Object.keys(policy)).toEqual(['ID', 'Name', 'Description', 'Rules', 'Hash', 'CreateIndex', 'ModifyIndex']);
    expect(await json('GET', `/v1/acl/policy/${policy.ID as string}`)).toEqual(policy);
    expect(await json('GET', '/v1/acl/policy/name/team%2Fkv')).toEqual(policy);
    expect(await json('GET', '/v1/acl/policy/name/TEAM%252FKV')).toEqual(policy);
  });

  it('answers mistakes with 4xx and Consul texts', async () => {
    await json('PUT', '/v1/acl/policy', { body: { Name: 'taken' } });
    expect(await failure('PUT', '/v1/acl/policy', { body: { Name: 'taken' } })).toEqual([409, 'Invalid Policy: A Policy with Name "taken" already exists']);
    expect(await failure('PUT', '/v1/acl/policy', { body: { ID: MISSING, Name: 'x' } })).toEqual([400, 'Cannot specify the ID when creating a new policy']);
    expect(await failure('PUT', '/v1/acl/policy', { body: {} })).toEqual([400, 'Invalid Policy: no Name is set']);
    expect(await failure('PUT', '/v1/acl/policy', { body: { Name: 'bad', Rules: 'acl = "bad"' } })).toEqual([400, 'Invalid acl policy: "bad"']);
    expect(await failure('PUT', `/v1/acl/policy/${MISSING}`, { body: { ID: GM_ID, Name: 'x' } })).toEqual([400, 'Policy ID in URL and payload do not match']);
    expect(await failure('PUT', `/v1/acl/policy/${MISSING}`, { body: { Name: 'x' } })).toEqual([404, `cannot find policy ${MISSING}`]);
    expect(await failure('GET', `/v1/acl/policy/${MISSING}`)).toEqual([404, 'Requested policy does not exist: ACL not found']);
    expect(await failure('GET', '/v1/acl/policy/name/nobody')).toEqual([404, 'Requested policy does not exist: ACL not found']);
    expect(await failure('GET', '/v1/acl/policy/')).toEqual([400, 'Missing policy ID']);
    expect(await failure('GET', '/v1/acl/policy/name/')).toEqual([400, 'Missing policy Name']);
    expect(await failure('PUT', `/v1/acl/policy/${GM_ID}`, { body: { Name: 'global-management', Rules: 'acl = "read"' } })).toEqual([
      400,
      'Changing the Rules for the builtin global-management policy is not permitted',
    ]);
    expect(await failure('DELETE', `/v1/acl/policy/${GM_ID}`)).toEqual([400, 'Delete operation not permitted on the builtin global-management policy']);
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
    expect(Object.keys(list[0]!)).toEqual(['ID', 'Name', 'Description', 'Datacenters', 'Hash', 'CreateIndex', 'ModifyIndex']);
  });

  it('a policy edit changes what its tokens may do on the next request', async () => {
    const policy = await json<{ ID: string }>('PUT', '/v1/acl/policy', { body: { Name: 'app-writer', Rules: 'key_prefix "app/" { policy = "write" }' } });
    const token = await json<{ SecretID: string }>('PUT', '/v1/acl/token', { body: { Policies: [{ ID: policy.ID }] } });
    expect((await call('PUT', '/v1/kv/app/x', { token: token.SecretID, body: 'v' })).status).toBe(200);
    expect((await call('PUT', '/v1/kv/other/x', { token: token.SecretID, body: 'v' })).status).toBe(403);
    await json('PUT', `/v1/acl/policy/${policy.ID}`, { body: { Name: 'app-writer', Rules: 'key_prefix "app/" { policy = "read" }' } });
    expect((await call('PUT', '/v1/kv/app/x', { token: token.SecretID, body: 'v' })).status).toBe(403);
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
        expect([method, path, res.status, await res.text()]).toEqual([method, path, 401, 'ACL support disabled']);
      }
    } finally {
      await plain.stop();
    }
  });
});
