// The intentions API against the real agent (docs/decisions.md#intentions-api): both write APIs and
// their errors, the JSON shape and key order, match and check, blocking reads that wake only on
// their own change, ACLs on the destination, and persistence across a restart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { permissionDenied } from '../../src/acl/errors.js';
import { answerOf, answerOfError } from '../support/errors.js';
import { startAgent, tempDir, type AgentProcess } from './support/agent-process.js';

interface Answer {
  status: number;
  text: string;
  headers: Headers;
  json: () => unknown;
}

function client(agentOf: () => AgentProcess) {
  return async (path: string, init: { method?: string; body?: unknown; token?: string } = {}): Promise<Answer> => {
    const res = await fetch(`${agentOf().url}${path}`, {
      method: init.method ?? 'GET',
      headers: init.token === undefined ? {} : { 'X-Svc-Token': init.token },
      ...(init.body === undefined
        ? {}
        : { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) }),
    });
    const text = await res.text();
    return { status: res.status, text, headers: res.headers, json: () => JSON.parse(text) as unknown };
  };
}

/** An error answer as `api()` returns it, for toMatchObject. */
const failed = ([status, text]: [number, string]) => ({ status, text });
const denied = (accessorId: string, access: 'read' | 'write', name: string) =>
  failed(answerOfError(permissionDenied({ accessorId, anonymous: false }, 'intention', access, name)));

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

describe('intentions API', () => {
  let agent: AgentProcess;
  const api = client(() => agent);
  beforeAll(async () => {
    agent = await startAgent();
  });
  afterAll(() => agent.stop());

  it("legacy create, read, update and delete, in Consul's shape and key order", async () => {
    const created = await api('/v1/connect/intentions', {
      method: 'POST',
      body: { SourceName: 'web', DestinationName: 'db', Action: 'allow', Description: 'd', Meta: { b: '2', a: '1' } },
    });
    expect(created.status).toBe(200);
    const id = (created.json() as { ID: string }).ID;
    expect(id).toMatch(UUID);
    expect(created.text).toBe(`{"ID":"${id}"}`);

    const read = await api(`/v1/connect/intentions/${id}`);
    const x = read.json() as Record<string, unknown>;
    expect(Object.keys(x)).toEqual([
      'CreatedAt',
      'UpdatedAt',
      'ID',
      'Description',
      'SourceNS',
      'SourceName',
      'DestinationNS',
      'DestinationName',
      'SourceType',
      'Action',
      'Meta',
      'Precedence',
      'Hash',
      'CreateIndex',
      'ModifyIndex',
    ]);
    expect(x).toMatchObject({
      ID: id,
      SourceNS: 'default',
      DestinationNS: 'default',
      SourceType: 'consul',
      Precedence: 9,
      Meta: { a: '1', b: '2' },
    });
    expect(read.text).toContain('"Meta":{"a":"1","b":"2"}');
    expect(x.CreatedAt).toMatch(TIME);
    expect(read.headers.get('x-svc-index')).toBe(String(x.ModifyIndex));
    expect(read.headers.get('x-svc-knownleader')).toBe('true');

    const updated = await api(`/v1/connect/intentions/${id}`, {
      method: 'PUT',
      body: { ...x, Action: 'deny', Description: '' },
    });
    expect([updated.status, updated.text]).toEqual([200, `{"ID":"${id}"}`]);
    const after = (await api(`/v1/connect/intentions/${id}`)).json() as Record<string, unknown>;
    expect(after).toMatchObject({ Action: 'deny', CreatedAt: x.CreatedAt, CreateIndex: x.CreateIndex });
    expect(after).not.toHaveProperty('Description');

    expect(await api(`/v1/connect/intentions/${id}`, { method: 'DELETE' })).toMatchObject({
      status: 200,
      text: 'true',
    });
    expect(await api(`/v1/connect/intentions/${id}`)).toMatchObject(failed(answerOf('INTENTION_READ_NOT_FOUND')));
  });

  it("refuses every bad legacy write with a 4xx and Consul's text", async () => {
    const post = (body: unknown) => api('/v1/connect/intentions', { method: 'POST', body });
    expect(await post({ SourceName: 'w*', DestinationNS: '*', DestinationName: 'db', Action: 'x' })).toMatchObject(
      failed(
        answerOf('INTENTION_INVALID', {
          problems:
            "3 errors occurred:\n\t* SourceName: wildcard character '*' cannot be used with partial values\n" +
            "\t* DestinationName: exact value cannot follow wildcard namespace\n\t* Action must be set to 'allow' or 'deny'\n\n",
        }),
      ),
    );
    expect(
      await post({
        ID: '11111111-2222-3333-4444-555555555555',
        SourceName: 'a',
        DestinationName: 'b',
        Action: 'allow',
      }),
    ).toMatchObject(failed(answerOf('INTENTION_ID_SET')));
    const decodeFailed = (detail: string) =>
      failed(answerOf('BODY_DECODE', { prefix: 'Failed to decode request body', detail }));
    expect(await post({ SourceName: 5 })).toMatchObject(
      decodeFailed('json: cannot unmarshal number into Go struct field Intention.SourceName of type string'),
    );
    expect(await post({ SourceName: 'a', DestinationName: 'b', Action: 'allow', Bogus: true })).toMatchObject(
      decodeFailed('json: unknown field "Bogus"'),
    );
    await post({ SourceName: 'dup', DestinationName: 'b', Action: 'allow' });
    const dup = await post({ SourceName: 'dup', DestinationName: 'b', Action: 'deny' });
    const first = /\(ID: ([0-9a-f-]{36}),/.exec(dup.text)?.[1] ?? 'none';
    const intention = `default/dup => default/b (ID: ${first}, Precedence: 9, Action: ALLOW)`;
    expect(dup).toMatchObject(failed(answerOf('INTENTION_DUPLICATE', { intention })));

    const missing = '11111111-2222-3333-4444-555555555555';
    expect(await api('/v1/connect/intentions/nope')).toMatchObject(
      failed(answerOf('INTENTION_BAD_ID', { reason: 'UUID must be 36 characters' })),
    );
    expect(await api(`/v1/connect/intentions/${missing}`)).toMatchObject(failed(answerOf('INTENTION_READ_NOT_FOUND')));
    expect(
      await api(`/v1/connect/intentions/${missing}`, {
        method: 'PUT',
        body: { SourceName: 'a', DestinationName: 'b', Action: 'allow' },
      }),
    ).toMatchObject(failed(answerOf('INTENTION_NOT_FOUND', { action: 'modify', id: missing })));
    expect(await api(`/v1/connect/intentions/${missing}`, { method: 'DELETE' })).toMatchObject(
      failed(answerOf('INTENTION_NOT_FOUND', { action: 'delete', id: missing })),
    );
    const id = ((await post({ SourceName: 'mover', DestinationName: 'b', Action: 'allow' })).json() as { ID: string })
      .ID;
    expect(
      await api(`/v1/connect/intentions/${id}`, {
        method: 'PUT',
        body: { SourceName: 'mover', DestinationName: 'c', Action: 'allow' },
      }),
    ).toMatchObject(failed(answerOf('INTENTION_DESTINATION_FIXED')));
  });

  it('exact: upsert by name (no ID), read, idempotent delete, and its errors', async () => {
    const path = '/v1/connect/intentions/exact?source=team-a/web&destination=team-b/api';
    expect(await api(path, { method: 'PUT', body: { ID: 'ignored', Action: 'deny', Description: 'x' } })).toMatchObject(
      { status: 200, text: 'true' },
    );
    const read = await api(path);
    const x = read.json() as Record<string, unknown>;
    expect(Object.keys(x)).toEqual([
      'Description',
      'SourceNS',
      'SourceName',
      'DestinationNS',
      'DestinationName',
      'SourceType',
      'Action',
      'Precedence',
      'CreateIndex',
      'ModifyIndex',
    ]);
    expect(x).toMatchObject({
      SourceNS: 'team-a',
      SourceName: 'web',
      DestinationNS: 'team-b',
      DestinationName: 'api',
      Action: 'deny',
    });
    expect(
      await api(path, { method: 'PUT', body: { Permissions: [{ Action: 'allow', HTTP: { PathExact: 'no-slash' } }] } }),
    ).toMatchObject(
      failed(
        answerOf('INTENTION_INVALID', { problems: `Permissions[0].HTTP.PathExact doesn't start with '/': "no-slash"` }),
      ),
    );
    expect(
      await api(path, {
        method: 'PUT',
        body: { Action: 'allow', Permissions: [{ Action: 'allow', HTTP: { PathExact: '/' } }] },
      }),
    ).toMatchObject(
      failed(answerOf('INTENTION_INVALID', { problems: 'Action must be omitted if Permissions are specified' })),
    );
    expect(await api(path, { method: 'DELETE' })).toMatchObject({ status: 200, text: 'true' });
    expect(await api(path, { method: 'DELETE' })).toMatchObject({ status: 200, text: 'true' });
    expect(await api(path)).toMatchObject(failed(answerOf('INTENTION_READ_NOT_FOUND')));

    expect(await api('/v1/connect/intentions/exact?destination=db')).toMatchObject(
      failed(answerOf('INTENTION_MISSING_PARAM', { name: 'source' })),
    );
    expect(await api('/v1/connect/intentions/exact?source=web')).toMatchObject(
      failed(answerOf('INTENTION_MISSING_PARAM', { name: 'destination' })),
    );
    expect(await api('/v1/connect/intentions/exact?source=a/b/c/d&destination=db')).toMatchObject(
      failed(
        answerOf('INTENTION_BAD_NAME', {
          what: 'source',
          input: 'a/b/c/d',
          reason: "input can contain at most two '/'",
        }),
      ),
    );
    expect(
      await api('/v1/connect/intentions/exact?source=web&destination=db', { method: 'PUT', body: { Action: 'maybe' } }),
    ).toMatchObject(failed(answerOf('INTENTION_INVALID', { problems: "Action must be set to 'allow' or 'deny'" })));
  });

  it("match lists each name's intentions in precedence order, keys sorted, [] for none; check answers Allowed", async () => {
    for (const [source, destination, action] of [
      ['*', 'm-db', 'deny'],
      ['m-web', 'm-db', 'allow'],
      ['*/*', '*/*', 'allow'],
    ] as const) {
      await api(`/v1/connect/intentions/exact?source=${source}&destination=${destination}`, {
        method: 'PUT',
        body: { Action: action },
      });
    }
    await api('/v1/connect/intentions/exact?source=m-web&destination=m-l7', {
      method: 'PUT',
      body: { Permissions: [{ Action: 'allow', HTTP: { PathPrefix: '/' } }] },
    });
    const match = await api('/v1/connect/intentions/match?by=destination&name=m-db&name=default/a-none&name=ns9/x');
    expect(match.status).toBe(200);
    expect(match.headers.get('x-svc-effective-consistency')).toBe('leader');
    const lists = match.json() as Record<string, { SourceName: string; Precedence: number }[]>;
    expect(Object.keys(lists)).toEqual(['default/a-none', 'm-db', 'ns9/x']);
    expect(lists['m-db']?.map((i) => `${i.SourceName}:${i.Precedence}`)).toEqual(['m-web:9', '*:8', '*:1']);
    expect(lists['ns9/x']?.map((i) => i.Precedence)).toEqual([1]);
    const bySource = (await api('/v1/connect/intentions/match?by=source&name=m-web')).json() as Record<
      string,
      { DestinationName: string }[]
    >;
    expect(bySource['m-web']?.map((i) => i.DestinationName)).toEqual(expect.arrayContaining(['m-db', 'm-l7', '*']));

    expect(await api('/v1/connect/intentions/match?name=x')).toMatchObject(
      failed(answerOf('INTENTION_MISSING_PARAM', { name: 'by' })),
    );
    expect(await api('/v1/connect/intentions/match?by=x&name=x')).toMatchObject(failed(answerOf('INTENTION_MATCH_BY')));
    expect(await api('/v1/connect/intentions/match?by=source')).toMatchObject(
      failed(answerOf('INTENTION_MISSING_PARAM', { name: 'name' })),
    );

    const check = async (q: string) => (await api(`/v1/connect/intentions/check?${q}`)).text;
    expect(await check('source=m-web&destination=m-db')).toBe('{"Allowed":true}');
    expect(await check('source=m-api&destination=m-db')).toBe('{"Allowed":false}');
    expect(await check('source=m-web&destination=m-l7')).toBe('{"Allowed":false}');
    expect(await api('/v1/connect/intentions/check?destination=db')).toMatchObject(
      failed(answerOf('INTENTION_MISSING_PARAM', { name: 'source' })),
    );
    expect(await api('/v1/connect/intentions/check?source=a&destination=db&source-type=dns')).toMatchObject(
      failed(answerOf('INTENTION_SOURCE_TYPE', { sourceType: 'dns' })),
    );
  });

  it('lists in precedence order and filters with ?filter', async () => {
    await api('/v1/connect/intentions/exact?source=f-web&destination=f-db', {
      method: 'PUT',
      body: { Action: 'allow', Description: 'flt' },
    });
    const all = (await api('/v1/connect/intentions')).json() as { Precedence: number }[];
    expect(all.map((i) => i.Precedence)).toEqual([...all.map((i) => i.Precedence)].sort((a, b) => b - a));
    const filtered = await api(
      `/v1/connect/intentions?filter=${encodeURIComponent('Description == flt and DestinationName == "f-db"')}`,
    );
    expect((filtered.json() as { SourceName: string }[]).map((i) => i.SourceName)).toEqual(['f-web']);
    // ?ns scopes the list to destinations in that namespace; `*` lists every namespace.
    const teamA = (await api('/v1/connect/intentions?ns=f-team')).json() as unknown[];
    expect(teamA).toEqual([]);
    await api('/v1/connect/intentions/exact?source=x&destination=f-team/svc', {
      method: 'PUT',
      body: { Action: 'deny' },
    });
    expect(
      ((await api('/v1/connect/intentions?ns=f-team')).json() as { DestinationName: string }[]).map(
        (i) => i.DestinationName,
      ),
    ).toEqual(['svc']);
    expect(((await api('/v1/connect/intentions?ns=*')).json() as unknown[]).length).toBe(all.length + 1);
    expect(await api(`/v1/connect/intentions?filter=${encodeURIComponent('Bogus == 1')}`)).toMatchObject(
      failed(answerOf('FILTER_INVALID', { detail: 'Selector "Bogus" is not valid' })),
    );
  });

  it('a blocking list wakes on a change to its answer, not on a change outside its filter', async () => {
    const first = await api('/v1/connect/intentions?filter=SourceName%20%3D%3D%20b-watched');
    const index = Number(first.headers.get('x-svc-index'));
    const parkedBefore = await parked(agent);
    const waiting = api(`/v1/connect/intentions?filter=SourceName%20%3D%3D%20b-watched&index=${index}&wait=30s`);
    await until(async () => (await parked(agent)) === parkedBefore + 1);
    // Outside the filter: the query stays parked, so the answer below holds the later write.
    await api('/v1/connect/intentions/exact?source=b-other&destination=b-db', {
      method: 'PUT',
      body: { Action: 'allow' },
    });
    await api('/v1/connect/intentions/exact?source=b-watched&destination=b-db', {
      method: 'PUT',
      body: { Action: 'deny' },
    });
    const woke = await waiting;
    expect((woke.json() as { SourceName: string }[]).map((i) => i.SourceName)).toEqual(['b-watched']);
    expect(Number(woke.headers.get('x-svc-index'))).toBeGreaterThan(index);
  });
});

async function parked(agent: AgentProcess): Promise<number> {
  const self = (await (await fetch(`${agent.url}/v1/agent/self`)).json()) as {
    Stats: { agent: Record<string, string> };
  };
  return Number(self.Stats.agent.parked_queries);
}

async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('intentions API with ACLs', () => {
  const MANAGEMENT = '5d0c3b1a-6e2f-4a7b-8c9d-0e1f2a3b4c5d';
  let agent: AgentProcess;
  const api = client(() => agent);
  const tokens: Record<string, { SecretID: string; AccessorID: string }> = {};

  beforeAll(async () => {
    agent = await startAgent({
      config: { acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: MANAGEMENT } } },
    });
    const put = async (path: string, body: unknown) =>
      (await api(path, { method: 'PUT', body, token: MANAGEMENT })).json() as { SecretID: string; AccessorID: string };
    await put('/v1/acl/policy', {
      Name: 'db-owner',
      Rules: 'service "db" {\n policy = "write"\n intentions = "write"\n}',
    });
    await put('/v1/acl/policy', { Name: 'db-reader', Rules: 'service "db" { policy = "read" }' });
    await put('/v1/acl/policy', {
      Name: 'db-blind',
      Rules: 'service "db" {\n policy = "read"\n intentions = "deny"\n}',
    });
    for (const name of ['db-owner', 'db-reader', 'db-blind'])
      tokens[name] = await put('/v1/acl/token', { Policies: [{ Name: name }] });
    await api('/v1/connect/intentions/exact?source=web&destination=db', {
      method: 'PUT',
      body: { Action: 'allow' },
      token: MANAGEMENT,
    });
    await api('/v1/connect/intentions/exact?source=web&destination=other', {
      method: 'PUT',
      body: { Action: 'allow' },
      token: MANAGEMENT,
    });
  });
  afterAll(() => agent.stop());

  it('writes need intentions:write on the destination', async () => {
    const owner = tokens['db-owner'] as { SecretID: string; AccessorID: string };
    expect(
      await api('/v1/connect/intentions/exact?source=api&destination=db', {
        method: 'PUT',
        body: { Action: 'deny' },
        token: owner.SecretID,
      }),
    ).toMatchObject({ status: 200 });
    expect(
      await api('/v1/connect/intentions/exact?source=api&destination=other', {
        method: 'PUT',
        body: { Action: 'deny' },
        token: owner.SecretID,
      }),
    ).toMatchObject(denied(owner.AccessorID, 'write', 'other'));
    const reader = tokens['db-reader'] as { SecretID: string; AccessorID: string };
    expect(
      await api('/v1/connect/intentions', {
        method: 'POST',
        body: { SourceName: 'x', DestinationName: 'db', Action: 'allow' },
        token: reader.SecretID,
      }),
    ).toMatchObject(denied(reader.AccessorID, 'write', 'db'));
  });

  it('reads: a service read rule grants intentions read unless it says intentions = "deny"; lists are filtered and say so', async () => {
    const reader = tokens['db-reader'] as { SecretID: string };
    const blind = tokens['db-blind'] as { SecretID: string; AccessorID: string };
    const list = await api('/v1/connect/intentions', { token: reader.SecretID });
    expect((list.json() as { DestinationName: string }[]).map((i) => i.DestinationName)).toEqual(['db', 'db']);
    expect(list.headers.get('x-svc-results-filtered-by-acls')).toBe('true');
    const everything = await api('/v1/connect/intentions', { token: MANAGEMENT });
    expect(everything.headers.get('x-svc-results-filtered-by-acls')).toBeNull();
    expect(
      await api('/v1/connect/intentions/exact?source=web&destination=db', { token: blind.SecretID }),
    ).toMatchObject(denied(blind.AccessorID, 'read', 'db'));
    expect(await api('/v1/connect/intentions/match?by=destination&name=db', { token: blind.SecretID })).toMatchObject(
      denied(blind.AccessorID, 'read', 'db'),
    );
    expect(await api('/v1/connect/intentions/match?by=destination&name=db', { token: reader.SecretID })).toMatchObject({
      status: 200,
    });
    // check needs only service:read on the destination; the default (deny) answers a miss.
    expect(
      await api('/v1/connect/intentions/check?source=web&destination=db', { token: blind.SecretID }),
    ).toMatchObject({ status: 200, text: '{"Allowed":true}' });
    expect(await api('/v1/connect/intentions/check?source=zz&destination=db', { token: blind.SecretID })).toMatchObject(
      { status: 200, text: '{"Allowed":false}' },
    );
    const blindService = answerOfError(
      permissionDenied({ accessorId: blind.AccessorID, anonymous: false }, 'service', 'read', 'other'),
    );
    expect(
      await api('/v1/connect/intentions/check?source=web&destination=other', { token: blind.SecretID }),
    ).toMatchObject(failed(blindService));
  });
});

describe('intentions across restarts and with connect off', () => {
  it('persist in the data directory', async () => {
    const dir = await tempDir();
    try {
      let agent = await startAgent({ dataDir: dir.path });
      const api = client(() => agent);
      await api('/v1/connect/intentions/exact?source=web&destination=db', { method: 'PUT', body: { Action: 'deny' } });
      await agent.stop();
      agent = await startAgent({ dataDir: dir.path });
      try {
        const a = await api('/v1/agent/connect/authorize', {
          method: 'POST',
          body: { Target: 'db', ClientCertURI: 'spiffe://td/ns/default/dc/dc1/svc/web' },
        });
        expect((a.json() as { Authorized: boolean }).Authorized).toBe(false);
      } finally {
        await agent.stop();
      }
    } finally {
      await dir.remove();
    }
  });

  it('every endpoint says so when connect is disabled', async () => {
    const agent = await startAgent({ config: { connect: { enabled: false } } });
    const api = client(() => agent);
    try {
      for (const [method, path] of [
        ['GET', '/v1/connect/intentions'],
        ['GET', '/v1/connect/intentions/check?source=a&destination=b'],
        ['PUT', '/v1/connect/intentions/exact?source=a&destination=b'],
        ['POST', '/v1/agent/connect/authorize'],
      ] as const) {
        expect(await api(path, { method, body: method === 'GET' ? undefined : { Action: 'allow' } })).toMatchObject(
          failed(answerOf('CONNECT_DISABLED')),
        );
      }
    } finally {
      await agent.stop();
    }
  });
});
