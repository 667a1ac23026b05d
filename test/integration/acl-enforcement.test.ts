// Every endpoint that exists, against {no token, anonymous, unknown, expired, read-only, write,
// management} under both default policies: status codes and error codes. And a deleted policy or
// token stops working on the very next request.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { permissionDenied } from '../../src/acl/errors.js';
import type { Resource } from '../../src/acl/types.js';
import { answerOf, answerOfError } from '../support/errors.js';
import { startAgent, type AgentProcess } from './support/agent-process.js';

const MANAGEMENT = '6a3a4a57-0f43-4d4b-9a65-3c5d0f7a1b2c';
const UNKNOWN = '11111111-2222-3333-4444-555555555555';

type Who = 'none' | 'anonymous' | 'unknown' | 'expired' | 'read' | 'write' | 'management';
const WHO: readonly Who[] = ['none', 'anonymous', 'unknown', 'expired', 'read', 'write', 'management'];

interface Endpoint {
  readonly name: string;
  readonly method: string;
  readonly path: string;
  readonly body?: string;
  /** The permission it needs, or 'filter' for lists trimmed by ACLs, or 'none'. */
  readonly needs: { resource: Resource; access: 'read' | 'write'; name?: string } | 'filter' | 'none';
}

const ENDPOINTS: readonly Endpoint[] = [
  {
    name: 'KV read',
    method: 'GET',
    path: '/v1/kv/app/config',
    needs: { resource: 'key', access: 'read', name: 'app/config' },
  },
  {
    name: 'KV write',
    method: 'PUT',
    path: '/v1/kv/app/new',
    body: 'v',
    needs: { resource: 'key', access: 'write', name: 'app/new' },
  },
  {
    name: 'KV delete',
    method: 'DELETE',
    path: '/v1/kv/app/other',
    needs: { resource: 'key', access: 'write', name: 'app/other' },
  },
  { name: 'KV list', method: 'GET', path: '/v1/kv/app/?recurse', needs: 'filter' },
  {
    name: 'agent self',
    method: 'GET',
    path: '/v1/agent/self',
    needs: { resource: 'agent', access: 'read', name: 'acl-node' },
  },
  { name: 'agent members', method: 'GET', path: '/v1/agent/members', needs: 'filter' },
  { name: 'status leader', method: 'GET', path: '/v1/status/leader', needs: 'none' },
  { name: 'ACL token list', method: 'GET', path: '/v1/acl/tokens', needs: { resource: 'acl', access: 'read' } },
  {
    name: 'ACL policy create',
    method: 'PUT',
    path: '/v1/acl/policy',
    body: JSON.stringify({ Name: 'p-{n}', Rules: '' }),
    needs: { resource: 'acl', access: 'write' },
  },
];

const READ_RULES =
  'key_prefix "" { policy = "read" }\nagent_prefix "" { policy = "read" }\nnode_prefix "" { policy = "read" }\nacl = "read"';
const WRITE_RULES =
  'key_prefix "" { policy = "write" }\nagent_prefix "" { policy = "write" }\nnode_prefix "" { policy = "write" }\nacl = "write"';

interface Setup {
  agent: AgentProcess;
  secrets: Record<Who, string | undefined>;
  accessors: Record<Who, string>;
}

async function setUp(defaultPolicy: 'allow' | 'deny'): Promise<Setup> {
  const agent = await startAgent({
    args: ['-node', 'acl-node'],
    config: {
      acl: {
        enabled: true,
        default_policy: defaultPolicy,
        token_min_expiration_ttl: '10ms',
        tokens: { initial_management: MANAGEMENT },
      },
    },
  });
  const api = async (method: string, path: string, body?: unknown): Promise<Record<string, unknown>> => {
    const res = await fetch(`${agent.url}${path}`, {
      method,
      headers: { 'X-Svc-Token': MANAGEMENT },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as Record<string, unknown>;
  };
  await api('PUT', '/v1/acl/policy', { Name: 'reader', Rules: READ_RULES });
  await api('PUT', '/v1/acl/policy', { Name: 'writer', Rules: WRITE_RULES });
  const read = await api('PUT', '/v1/acl/token', { Description: 'read', Policies: [{ Name: 'reader' }] });
  const write = await api('PUT', '/v1/acl/token', { Description: 'write', Policies: [{ Name: 'writer' }] });
  const expired = await api('PUT', '/v1/acl/token', {
    Description: 'short',
    Policies: [{ Name: 'writer' }],
    ExpirationTTL: '20ms',
  });
  const self = await api('GET', '/v1/acl/token/self');
  for (const key of ['app/config', 'app/other', 'app/third']) {
    await fetch(`${agent.url}/v1/kv/${key}`, { method: 'PUT', body: 'x', headers: { 'X-Svc-Token': MANAGEMENT } });
  }
  // The short-lived token expires by the agent's clock: wait until the agent itself refuses it.
  const expiredSecret = { 'X-Svc-Token': expired.SecretID as string };
  await until(async () => (await fetch(`${agent.url}/v1/acl/token/self`, { headers: expiredSecret })).status === 403);
  return {
    agent,
    secrets: {
      none: undefined,
      anonymous: 'anonymous',
      unknown: UNKNOWN,
      expired: expired.SecretID as string,
      read: read.SecretID as string,
      write: write.SecretID as string,
      management: MANAGEMENT,
    },
    accessors: {
      none: '00000000-0000-0000-0000-000000000002',
      anonymous: '00000000-0000-0000-0000-000000000002',
      unknown: '',
      expired: expired.AccessorID as string,
      read: read.AccessorID as string,
      write: write.AccessorID as string,
      management: self.AccessorID as string,
    },
  };
}

async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** What the request should get: a status and, for errors, the body its error code renders. */
function expected(
  endpoint: Endpoint,
  who: Who,
  defaultPolicy: 'allow' | 'deny',
  setup: Setup,
): { status: number; text?: string } {
  const answer = ([status, text]: [number, string]) => ({ status, text });
  if (endpoint.needs === 'none') return { status: 200 };
  if (who === 'unknown' || who === 'expired') return answer(answerOf('ACL_NOT_FOUND'));
  const anonymousAllowed = (who === 'none' || who === 'anonymous') && defaultPolicy === 'allow';
  // A KV listing filtered down to nothing is a 404 (Consul: no entries → not found).
  if (endpoint.needs === 'filter')
    return {
      status: endpoint.name === 'KV list' && (who === 'none' || who === 'anonymous') && !anonymousAllowed ? 404 : 200,
    };
  const { resource, access, name } = endpoint.needs;
  // As in Consul, the default policy never grants acl:*; only a rule does.
  const granted =
    who === 'management' ||
    who === 'write' ||
    (who === 'read' && access === 'read') ||
    (anonymousAllowed && resource !== 'acl');
  if (granted) return { status: 200 };
  const subject = { accessorId: setup.accessors[who], anonymous: who === 'none' || who === 'anonymous' };
  return answer(answerOfError(permissionDenied(subject, resource, access, name)));
}

for (const defaultPolicy of ['allow', 'deny'] as const) {
  describe(`ACL enforcement, default policy ${defaultPolicy}`, () => {
    let setup: Setup;
    let counter = 0;
    beforeAll(async () => {
      setup = await setUp(defaultPolicy);
    });
    afterAll(() => setup.agent.stop());

    it('sends X-Svc-Default-ACL-Policy on every response', async () => {
      const res = await fetch(`${setup.agent.url}/v1/status/leader`);
      expect(res.headers.get('x-svc-default-acl-policy')).toBe(defaultPolicy);
    });

    for (const endpoint of ENDPOINTS) {
      it.each(WHO)(`${endpoint.name} (${endpoint.method} ${endpoint.path}) as %s`, async (who) => {
        const secret = setup.secrets[who];
        const body = endpoint.body?.replace('{n}', String(counter++));
        const res = await fetch(`${setup.agent.url}${endpoint.path}`, {
          method: endpoint.method,
          headers: secret === undefined ? {} : { 'X-Svc-Token': secret },
          ...(body === undefined ? {} : { body }),
        });
        const want = expected(endpoint, who, defaultPolicy, setup);
        const text = await res.text();
        expect({ status: res.status, text: want.text === undefined ? undefined : text }).toEqual(want);
      });
    }

    it('filters KV listings silently by key:read, and says so', async () => {
      const list = async (secret?: string): Promise<Response> =>
        fetch(`${setup.agent.url}/v1/kv/app/?recurse`, { headers: secret ? { 'X-Svc-Token': secret } : {} });
      const all = await list(setup.secrets.read);
      expect(((await all.json()) as unknown[]).length).toBe(3);
      expect(all.headers.get('x-svc-results-filtered-by-acls')).toBeNull();
      const anonymous = await list();
      if (defaultPolicy === 'allow') {
        expect(((await anonymous.json()) as unknown[]).length).toBe(3);
      } else {
        expect(anonymous.status).toBe(404);
        expect(anonymous.headers.get('x-svc-results-filtered-by-acls')).toBe('true');
      }
    });

    it('filters agent members by node:read, with the header only for a caller that gave a token', async () => {
      const members = async (secret?: string): Promise<Response> =>
        fetch(`${setup.agent.url}/v1/agent/members`, { headers: secret ? { 'X-Svc-Token': secret } : {} });
      const visible = defaultPolicy === 'allow' ? 1 : 0;
      const none = await members();
      expect(((await none.json()) as unknown[]).length).toBe(visible);
      expect(none.headers.get('x-svc-results-filtered-by-acls')).toBeNull();
      const anonymous = await members('anonymous');
      expect(((await anonymous.json()) as unknown[]).length).toBe(visible);
      expect(anonymous.headers.get('x-svc-results-filtered-by-acls')).toBe(visible ? null : 'true');
      expect(((await (await members(setup.secrets.read)).json()) as unknown[]).length).toBe(1);
    });

    it('takes the token from ?token=, X-Consul-Token and Authorization: Bearer too', async () => {
      const url = `${setup.agent.url}/v1/kv/app/new2`;
      const write = setup.secrets.write!;
      expect((await fetch(`${url}?token=${write}`, { method: 'PUT', body: 'a' })).status).toBe(200);
      expect((await fetch(url, { method: 'PUT', body: 'a', headers: { 'X-Consul-Token': write } })).status).toBe(200);
      expect(
        (await fetch(url, { method: 'PUT', body: 'a', headers: { Authorization: `Bearer ${write}` } })).status,
      ).toBe(200);
      // ?token= wins over the header, as in Consul.
      const res = await fetch(`${url}?token=${setup.secrets.read}`, {
        method: 'PUT',
        body: 'a',
        headers: { 'X-Svc-Token': write },
      });
      const reader = { accessorId: setup.accessors.read, anonymous: false };
      expect([res.status, await res.text()]).toEqual(
        answerOfError(permissionDenied(reader, 'key', 'write', 'app/new2')),
      );
    });
  });
}

describe('changes take effect on the very next request', () => {
  let setup: Setup;
  beforeAll(async () => {
    setup = await setUp('deny');
  });
  afterAll(() => setup.agent.stop());

  const asManagement = { 'X-Svc-Token': MANAGEMENT };
  const selfOf = async (secret: string) => {
    const self = (await (
      await fetch(`${setup.agent.url}/v1/acl/token/self`, { headers: { 'X-Svc-Token': secret } })
    ).json()) as { AccessorID: string };
    return { accessorId: self.AccessorID, anonymous: false };
  };

  it('a deleted token is unknown at once', async () => {
    const token = (await (
      await fetch(`${setup.agent.url}/v1/acl/token`, {
        method: 'PUT',
        headers: asManagement,
        body: JSON.stringify({ Policies: [{ Name: 'reader' }] }),
      })
    ).json()) as { AccessorID: string; SecretID: string };
    const read = (): Promise<Response> =>
      fetch(`${setup.agent.url}/v1/kv/app/config`, { headers: { 'X-Svc-Token': token.SecretID } });
    expect((await read()).status).toBe(200);
    expect(
      (await fetch(`${setup.agent.url}/v1/acl/token/${token.AccessorID}`, { method: 'DELETE', headers: asManagement }))
        .status,
    ).toBe(200);
    const after = await read();
    expect([after.status, await after.text()]).toEqual(answerOf('ACL_NOT_FOUND'));
  });

  it('a deleted policy stops granting at once', async () => {
    const policy = (await (
      await fetch(`${setup.agent.url}/v1/acl/policy`, {
        method: 'PUT',
        headers: asManagement,
        body: JSON.stringify({ Name: 'short-lived', Rules: 'key "app/config" { policy = "read" }' }),
      })
    ).json()) as { ID: string };
    const token = (await (
      await fetch(`${setup.agent.url}/v1/acl/token`, {
        method: 'PUT',
        headers: asManagement,
        body: JSON.stringify({ Policies: [{ ID: policy.ID }] }),
      })
    ).json()) as { SecretID: string };
    const read = (): Promise<Response> =>
      fetch(`${setup.agent.url}/v1/kv/app/config`, { headers: { 'X-Svc-Token': token.SecretID } });
    expect((await read()).status).toBe(200);
    expect(
      (await fetch(`${setup.agent.url}/v1/acl/policy/${policy.ID}`, { method: 'DELETE', headers: asManagement }))
        .status,
    ).toBe(200);
    const after = await read();
    expect([after.status, await after.text()]).toEqual(
      answerOfError(permissionDenied(await selfOf(token.SecretID), 'key', 'read', 'app/config')),
    );
  });

  it('an edited policy applies at once', async () => {
    const policy = (await (
      await fetch(`${setup.agent.url}/v1/acl/policy`, {
        method: 'PUT',
        headers: asManagement,
        body: JSON.stringify({ Name: 'editable', Rules: 'key "app/config" { policy = "deny" }' }),
      })
    ).json()) as { ID: string };
    const token = (await (
      await fetch(`${setup.agent.url}/v1/acl/token`, {
        method: 'PUT',
        headers: asManagement,
        body: JSON.stringify({ Policies: [{ ID: policy.ID }] }),
      })
    ).json()) as { SecretID: string };
    const read = (): Promise<Response> =>
      fetch(`${setup.agent.url}/v1/kv/app/config`, { headers: { 'X-Svc-Token': token.SecretID } });
    const before = await read();
    expect([before.status, await before.text()]).toEqual(
      answerOfError(permissionDenied(await selfOf(token.SecretID), 'key', 'read', 'app/config')),
    );
    const update = await fetch(`${setup.agent.url}/v1/acl/policy/${policy.ID}`, {
      method: 'PUT',
      headers: asManagement,
      body: JSON.stringify({ ID: policy.ID, Name: 'editable', Rules: 'key "app/config" { policy = "read" }' }),
    });
    expect(update.status).toBe(200);
    expect((await read()).status).toBe(200);
  });
});

describe('ACLs disabled', () => {
  let agent: AgentProcess;
  beforeAll(async () => {
    agent = await startAgent();
  });
  afterAll(() => agent.stop());

  it('answers every /v1/acl/* endpoint with 401 `ACL support disabled`', async () => {
    for (const [method, path] of [
      ['PUT', '/v1/acl/bootstrap'],
      ['PUT', '/v1/acl/token'],
      ['GET', '/v1/acl/token/self'],
      ['GET', '/v1/acl/tokens'],
      ['GET', '/v1/acl/policies'],
      ['PUT', '/v1/acl/policy'],
    ] as const) {
      const res = await fetch(`${agent.url}${path}`, { method, headers: { 'X-Svc-Token': UNKNOWN } });
      expect([res.status, await res.text()], `${method} ${path}`).toEqual(answerOf('ACL_DISABLED'));
    }
  });

  it('lets any token do anything else', async () => {
    expect(
      (await fetch(`${agent.url}/v1/kv/x`, { method: 'PUT', body: '1', headers: { 'X-Svc-Token': UNKNOWN } })).status,
    ).toBe(200);
  });
});
