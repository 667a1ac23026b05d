// POST /v1/agent/connect/authorize against the real agent: the eleven behaviours of Consul's
// agent_endpoint tests (docs/decisions.md#authorize-steps), the five-step namespace resolution, and
// decisions after an intention is created, updated and deleted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANONYMOUS_ACCESSOR_ID } from '../../src/acl/builtin.js';
import { permissionDenied } from '../../src/acl/errors.js';
import { answerOf, answerOfError } from '../support/errors.js';
import { startAgent, type AgentProcess } from './support/agent-process.js';
import { rawRequest, request, serverClosesAfter } from './support/raw-http.js';

const MANAGEMENT = '2f1c9a0e-7d1b-4f5e-9c1a-0b7e3d5c8a11';
const uri = (service: string, ns = 'default', td = '11111111-2222-3333-4444-555555555555.consul') =>
  `spiffe://${td}/ns/${ns}/dc/dc1/svc/${service}`;

interface Answer {
  status: number;
  text: string;
  headers: Headers;
}

async function call(
  agent: AgentProcess,
  path: string,
  init: { method?: string; body?: unknown; token?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token !== undefined) headers['X-Svc-Token'] = init.token;
  const res = await fetch(`${agent.url}${path}`, {
    method: init.method ?? 'GET',
    headers,
    ...(init.body === undefined ? {} : { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) }),
  });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

const authorize = (
  agent: AgentProcess,
  body: unknown,
  init: { token?: string; query?: string; headers?: Record<string, string> } = {},
) => call(agent, `/v1/agent/connect/authorize${init.query ?? ''}`, { method: 'POST', body, ...init });

/** An error answer as `call()` returns it, for toMatchObject. */
const failed = ([status, text]: [number, string]) => ({ status, text });

async function ok(answer: Promise<Answer>): Promise<Answer> {
  const a = await answer;
  if (a.status !== 200) throw new Error(`expected 200, got ${a.status}: ${a.text}`);
  return a;
}

describe('authorize, ACLs off', () => {
  let agent: AgentProcess;
  beforeAll(async () => {
    agent = await startAgent();
  });
  afterAll(() => agent.stop());

  it('badBody: a JSON array is a 400 naming the decode failure', async () => {
    const decodeFailed = (detail: string) =>
      failed(answerOf('BODY_DECODE', { prefix: 'Request decode failed', detail }));
    expect(await authorize(agent, '[]')).toMatchObject(
      decodeFailed('json: cannot unmarshal array into Go value of type structs.ConnectAuthorizeRequest'),
    );
    expect(await authorize(agent, '')).toMatchObject(decodeFailed('EOF'));
    expect(await authorize(agent, { Target: 'db', Nope: 1 })).toMatchObject(decodeFailed('json: unknown field "Nope"'));
  });

  it('noTarget, idInvalidFormat, idNotService: 400s in that order', async () => {
    expect(await authorize(agent, {})).toMatchObject(failed(answerOf('AUTHORIZE_NO_TARGET')));
    expect(await authorize(agent, { Target: 'db', ClientCertURI: 'tubes' })).toMatchObject(
      failed(answerOf('AUTHORIZE_BAD_URI')),
    );
    expect(await authorize(agent, { Target: 'db', ClientCertURI: 'spiffe://1234.consul' })).toMatchObject(
      failed(answerOf('AUTHORIZE_NOT_SERVICE')),
    );
    // Field names match case-insensitively, as Go's decoder does.
    expect(await authorize(agent, { target: 'db', clientcerturi: 'tubes' })).toMatchObject(
      failed(answerOf('AUTHORIZE_BAD_URI')),
    );
  });

  it('allow: MISS then HIT with Age 0, and an edit to deny flips the very next call (still HIT)', async () => {
    const created = JSON.parse(
      (
        await ok(
          call(agent, '/v1/connect/intentions', {
            method: 'POST',
            body: { SourceName: 'web', DestinationName: 'db', Action: 'allow' },
          }),
        )
      ).text,
    ) as { ID: string };
    const body = { Target: 'db', ClientCertURI: uri('web'), ClientCertSerial: '04:00:00' };
    const first = await ok(authorize(agent, body));
    expect(first.text).toBe(
      `{"Authorized":true,"Reason":"Matched L4 intention: default/web =\\u003e default/db (ID: ${created.ID}, Precedence: 9, Action: ALLOW)"}`,
    );
    expect([first.headers.get('x-cache'), first.headers.get('age'), first.headers.get('content-type')]).toEqual([
      'MISS',
      null,
      'application/json',
    ]);
    expect(first.headers.get('x-svc-index')).toBeNull();
    const second = await ok(authorize(agent, body));
    expect([second.headers.get('x-cache'), second.headers.get('age')]).toEqual(['HIT', '0']);

    // Update through the legacy API…
    await ok(
      call(agent, `/v1/connect/intentions/${created.ID}`, {
        method: 'PUT',
        body: { SourceName: 'web', DestinationName: 'db', Action: 'deny' },
      }),
    );
    const denied = await ok(authorize(agent, body));
    expect(JSON.parse(denied.text)).toEqual({
      Authorized: false,
      Reason: `Matched L4 intention: default/web => default/db (ID: ${created.ID}, Precedence: 9, Action: DENY)`,
    });
    expect(denied.headers.get('x-cache')).toBe('HIT');
    // …delete: back to the default.
    await ok(call(agent, `/v1/connect/intentions/${created.ID}`, { method: 'DELETE' }));
    expect(JSON.parse((await ok(authorize(agent, body))).text)).toEqual({
      Authorized: true,
      Reason: 'Default behavior configured by ACLs',
    });
  });

  it('deny, and an exact write, update and delete each show on the next call', async () => {
    const body = { Target: 'cache', ClientCertURI: uri('web') };
    const exact = '/v1/connect/intentions/exact?source=web&destination=cache';
    await ok(call(agent, exact, { method: 'PUT', body: { Action: 'deny' } }));
    expect(JSON.parse((await ok(authorize(agent, body))).text)).toEqual({
      Authorized: false,
      Reason: 'Matched L4 intention: default/web => default/cache (Precedence: 9, Action: DENY)',
    });
    await ok(call(agent, exact, { method: 'PUT', body: { Action: 'allow' } }));
    expect(JSON.parse((await ok(authorize(agent, body))).text).Authorized).toBe(true);
    await ok(
      call(agent, exact, { method: 'PUT', body: { Permissions: [{ Action: 'allow', HTTP: { PathPrefix: '/' } }] } }),
    );
    expect(JSON.parse((await ok(authorize(agent, body))).text)).toEqual({
      Authorized: false,
      Reason: 'Matched L7 intention: default/web => default/cache (Precedence: 9, Permissions: 1)',
    });
    await ok(call(agent, exact, { method: 'DELETE' }));
    expect(JSON.parse((await ok(authorize(agent, body))).text).Reason).toBe('Default behavior configured by ACLs');
  });

  it('allowTrustDomain: a foreign trust domain, datacenter and serial are not checked', async () => {
    await ok(
      call(agent, '/v1/connect/intentions/exact?source=web&destination=store', {
        method: 'PUT',
        body: { Action: 'allow' },
      }),
    );
    const a = await ok(
      authorize(agent, {
        Target: 'store',
        ClientCertURI: 'spiffe://fake-domain.consul/ns/default/dc/nowhere/svc/web',
        ClientCertSerial: 'garbage',
      }),
    );
    expect(JSON.parse(a.text)).toMatchObject({ Authorized: true, Reason: expect.stringContaining('Matched') });
  });

  it('denyWildcard: * → db deny plus web → db allow lets web in and keeps api out', async () => {
    await ok(
      call(agent, '/v1/connect/intentions/exact?source=*&destination=wild', {
        method: 'PUT',
        body: { Action: 'deny' },
      }),
    );
    await ok(
      call(agent, '/v1/connect/intentions/exact?source=web&destination=wild', {
        method: 'PUT',
        body: { Action: 'allow' },
      }),
    );
    expect(
      JSON.parse((await ok(authorize(agent, { Target: 'wild', ClientCertURI: uri('web') }))).text).Authorized,
    ).toBe(true);
    expect(JSON.parse((await ok(authorize(agent, { Target: 'wild', ClientCertURI: uri('api') }))).text)).toEqual({
      Authorized: false,
      Reason: 'Matched L4 intention: default/* => default/wild (Precedence: 8, Action: DENY)',
    });
  });

  it('answers ?pretty, refuses GET with 405, and honours Connection: close', async () => {
    const pretty = await ok(authorize(agent, { Target: 'nothing', ClientCertURI: uri('web') }, { query: '?pretty' }));
    expect(pretty.text).toBe('{\n    "Authorized": true,\n    "Reason": "Default behavior configured by ACLs"\n}\n');
    const get = await call(agent, '/v1/agent/connect/authorize');
    expect([get.status, get.text, get.headers.get('allow')]).toEqual([
      ...answerOf('HTTP_METHOD_NOT_ALLOWED', { method: 'GET' }),
      'OPTIONS,POST',
    ]);
    const body = JSON.stringify({ Target: 'nothing', ClientCertURI: uri('web') });
    const closing = await serverClosesAfter(
      agent.port,
      request('POST', '/v1/agent/connect/authorize', body, { Connection: 'close' }),
    );
    expect([closing.response.status, closing.closedByServer]).toEqual([200, true]);
    const raw = await rawRequest(agent.port, request('POST', '/v1/agent/connect/authorize', body));
    expect(raw.rawHeaders).toContain('X-Svc-Default-ACL-Policy');
  });
});

describe('authorize, ACLs on', () => {
  for (const defaultPolicy of ['deny', 'allow'] as const) {
    it(`default${defaultPolicy === 'deny' ? 'Deny' : 'Allow'}: with no intention the management token gets the ACL default`, async () => {
      const agent = await startAgent({
        config: { acl: { enabled: true, default_policy: defaultPolicy, tokens: { initial_management: MANAGEMENT } } },
      });
      try {
        const a = await ok(authorize(agent, { Target: 'db', ClientCertURI: uri('web') }, { token: MANAGEMENT }));
        expect(JSON.parse(a.text)).toEqual({
          Authorized: defaultPolicy === 'allow',
          Reason: 'Default behavior configured by ACLs',
        });
        expect(a.headers.get('x-svc-default-acl-policy')).toBe(defaultPolicy);
      } finally {
        await agent.stop();
      }
    });
  }

  describe('tokens', () => {
    let agent: AgentProcess;
    const secrets: Record<string, string> = {};
    const accessors: Record<string, string> = {};

    beforeAll(async () => {
      agent = await startAgent({
        config: { acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: MANAGEMENT } } },
      });
      const api = async (path: string, body: unknown): Promise<Record<string, string>> =>
        JSON.parse((await ok(call(agent, path, { method: 'PUT', body, token: MANAGEMENT }))).text) as Record<
          string,
          string
        >;
      await api('/v1/acl/policy', { Name: 'svc-read', Rules: 'service_prefix "" { policy = "read" }' });
      await api('/v1/acl/policy', { Name: 'svc-write', Rules: 'service_prefix "" { policy = "write" }' });
      for (const [name, policy, namespace] of [
        ['reader', 'svc-read', undefined],
        ['writer', 'svc-write', undefined],
        ['team', 'svc-write', 'team-token'],
      ] as const) {
        const token = await api('/v1/acl/token', {
          Description: name,
          Policies: [{ Name: policy }],
          ...(namespace ? { Namespace: namespace } : {}),
        });
        secrets[name] = token.SecretID as string;
        accessors[name] = token.AccessorID as string;
      }
      // An intention per namespace from any source, so the reason names the namespace used.
      for (const ns of ['body-ns', 'query-ns', 'header-ns', 'team-token', 'default']) {
        await ok(
          call(agent, `/v1/connect/intentions/exact?source=*/*&destination=${ns}/db`, {
            method: 'PUT',
            body: { Action: 'allow' },
            token: MANAGEMENT,
          }),
        );
      }
    });
    afterAll(() => agent.stop());

    it('serviceWrite: a token with only service:read on the target is refused with 403', async () => {
      const a = await authorize(
        agent,
        { Target: 'db', ClientCertURI: uri('web') },
        { token: secrets.reader as string },
      );
      const deniedTo = (accessorId: string, anonymous: boolean) =>
        failed(answerOfError(permissionDenied({ accessorId, anonymous }, 'service', 'write', 'db')));
      expect(a).toMatchObject(deniedTo(accessors.reader as string, false));
      const anonymous = await authorize(agent, { Target: 'db', ClientCertURI: uri('web') });
      expect(anonymous).toMatchObject(deniedTo(ANONYMOUS_ACCESSOR_ID, true));
      const unknown = await authorize(agent, { Target: 'db', ClientCertURI: uri('web') }, { token: 'no-such-token' });
      expect(unknown).toMatchObject(failed(answerOf('ACL_NOT_FOUND')));
      // Validation comes before the token is looked at, as in Consul.
      expect(await authorize(agent, {}, { token: 'no-such-token' })).toMatchObject(
        failed(answerOf('AUTHORIZE_NO_TARGET')),
      );
    });

    // Each step of the namespace resolution (docs/decisions.md D2) beats every later one.
    it.each([
      [
        'the body Namespace',
        { Namespace: 'body-ns' },
        '?ns=query-ns',
        { 'X-Svc-Namespace': 'header-ns' },
        'team',
        'body-ns',
      ],
      ['?ns', {}, '?ns=query-ns', { 'X-Svc-Namespace': 'header-ns' }, 'team', 'query-ns'],
      ['the X-Svc-Namespace header', {}, '', { 'X-Svc-Namespace': 'header-ns' }, 'team', 'header-ns'],
      ['the X-Consul-Namespace spelling', {}, '', { 'X-Consul-Namespace': 'header-ns' }, 'team', 'header-ns'],
      ["the token's namespace", {}, '', {}, 'team', 'team-token'],
      ['default', {}, '', {}, 'writer', 'default'],
    ])('%s', async (_name, extra, query, headers, who, ns) => {
      const a = await ok(
        authorize(
          agent,
          { Target: 'db', ClientCertURI: uri('web', 'elsewhere'), ...extra },
          { token: secrets[who] as string, query, headers },
        ),
      );
      expect(JSON.parse(a.text)).toEqual({
        Authorized: true,
        Reason: `Matched L4 intention: */* => ${ns}/db (Precedence: 7, Action: ALLOW)`,
      });
    });
  });
});
