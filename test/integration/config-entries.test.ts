// /v1/config on one agent, called as users call it: fetch (the npm `consul` package has no config
// entry calls: its generic request path, `_put`/`_get`/`_delete`, where noted) and the svc-agent
// CLI. CRUD, ?cas, blocking reads that wake on their own entry, Consul's texts, the
// service-intentions bridge both ways with authorize following, and ACLs as Consul's
// (docs/decisions.md#config-entries).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Consul from 'consul';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startAgent, type AgentProcess } from './support/agent-process.js';

const MANAGEMENT = '7c4f2a10-5d3e-4b8a-9f61-2e0d8c3b5a77';
const TD = '11111111-2222-3333-4444-555555555555.consul';
const uri = (service: string): string => `spiffe://${TD}/ns/default/dc/dc1/svc/${service}`;

interface Answer {
  status: number;
  text: string;
  headers: Headers;
  json: () => unknown;
}

async function call(
  agent: AgentProcess,
  method: string,
  path: string,
  body?: unknown,
  token?: string,
): Promise<Answer> {
  const res = await fetch(`${agent.url}${path}`, {
    method,
    ...(token === undefined ? {} : { headers: { 'X-Consul-Token': token } }),
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, text, headers: res.headers, json: () => JSON.parse(text) as unknown };
}

const authorized = async (agent: AgentProcess, source: string, target: string, token?: string): Promise<boolean> => {
  const res = await call(
    agent,
    'POST',
    '/v1/agent/connect/authorize',
    { Target: target, ClientCertURI: uri(source) },
    token,
  );
  expect(res.status).toBe(200);
  return (res.json() as { Authorized: boolean }).Authorized;
};

describe('config entries on one agent', () => {
  let agent: AgentProcess;
  let consul: Consul;
  let dir: string;
  beforeAll(async () => {
    agent = await startAgent({ config: { http_config: { header_brand: 'Consul' } } });
    consul = new Consul({ host: '127.0.0.1', port: agent.port });
    dir = await mkdtemp(join(tmpdir(), 'svc-config-entries-'));
  });
  afterAll(async () => {
    await agent?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('writes, reads, lists in name order and deletes, with Consul shapes and indexes', async () => {
    for (const name of ['web', 'api']) {
      const put = await call(agent, 'PUT', '/v1/config', { Kind: 'service-defaults', Name: name, Protocol: 'HTTP' });
      expect([put.status, put.text]).toEqual([200, 'true']);
    }
    const read = await call(agent, 'GET', '/v1/config/service-defaults/web');
    expect(read.status).toBe(200);
    const web = read.json() as Record<string, unknown>;
    expect(web).toEqual({
      Kind: 'service-defaults',
      Name: 'web',
      Protocol: 'http',
      TransparentProxy: {},
      MeshGateway: {},
      Expose: {},
      CreateIndex: web.ModifyIndex,
      ModifyIndex: web.ModifyIndex,
    });
    expect(read.headers.get('X-Consul-Index')).toBe(String(web.ModifyIndex));
    const list = await call(agent, 'GET', '/v1/config/service-defaults');
    expect((list.json() as { Name: string }[]).map((e) => e.Name)).toEqual(['api', 'web']);

    const missing = await call(agent, 'GET', '/v1/config/service-defaults/nope');
    expect([missing.status, missing.text]).toEqual([404, 'Config entry not found for "service-defaults" / "nope"']);
    expect(missing.headers.get('X-Consul-Index')).not.toBeNull();

    const deleted = await call(agent, 'DELETE', '/v1/config/service-defaults/api');
    expect([deleted.status, deleted.text]).toEqual([200, '{}']);
    expect((await call(agent, 'GET', '/v1/config/service-defaults/api')).status).toBe(404);
  });

  it('refuses with Consul texts: decoding, validation, kinds, paths and ?cas', async () => {
    const cases: [string, string, unknown, number, string][] = [
      ['PUT', '/v1/config', '', 400, 'Request decoding failed: EOF'],
      [
        'PUT',
        '/v1/config',
        { Name: 'x' },
        400,
        'Request decoding failed: Payload does not contain a kind/Kind key at the top level',
      ],
      [
        'PUT',
        '/v1/config',
        { Kind: 'ingress-gateway', Name: 'x' },
        400,
        'Request decoding failed: invalid config entry kind: ingress-gateway',
      ],
      [
        'PUT',
        '/v1/config',
        { Kind: 'proxy-defaults', Name: 'x' },
        400,
        'invalid name ("x"), only "global" is supported',
      ],
      [
        'PUT',
        '/v1/config',
        { Kind: 'service-splitter', Name: 'x', Splits: [{ Weight: 90 }] },
        400,
        'the sum of all split weights must be 100, not 90.000000',
      ],
      [
        'PUT',
        '/v1/config?cas=x',
        { Kind: 'service-defaults', Name: 'x' },
        400,
        'strconv.ParseUint: parsing "x": invalid syntax',
      ],
      ['GET', '/v1/config/nope', undefined, 400, 'invalid config entry kind: nope'],
      ['DELETE', '/v1/config/service-defaults', undefined, 404, 'Must provide both a kind and name to delete'],
      ['DELETE', '/v1/config/proxy-defaults/x', undefined, 400, 'invalid name ("x"), only "global" is supported'],
    ];
    for (const [method, path, body, status, text] of cases) {
      const res = await call(agent, method, path, body);
      expect([method, path, res.status, res.text]).toEqual([method, path, status, text]);
    }
  });

  it('?cas writes and deletes only at the ModifyIndex named, answering true or false', async () => {
    const entry = { Kind: 'proxy-defaults', Name: 'global', Config: { protocol: 'http' } };
    expect((await call(agent, 'PUT', '/v1/config?cas=0', entry)).text).toBe('true');
    expect((await call(agent, 'PUT', '/v1/config?cas=0', entry)).text).toBe('false');
    const { ModifyIndex } = (await call(agent, 'GET', '/v1/config/proxy-defaults/global')).json() as {
      ModifyIndex: number;
    };
    expect((await call(agent, 'PUT', `/v1/config?cas=${ModifyIndex + 1}`, entry)).text).toBe('false');
    expect((await call(agent, 'PUT', `/v1/config?cas=${ModifyIndex}`, entry)).text).toBe('true');
    expect((await call(agent, 'DELETE', `/v1/config/proxy-defaults/global?cas=${ModifyIndex}`)).text).toBe('false');
    const now = (await call(agent, 'GET', '/v1/config/proxy-defaults/global')).json() as { ModifyIndex: number };
    expect((await call(agent, 'DELETE', `/v1/config/proxy-defaults/global?cas=${now.ModifyIndex}`)).text).toBe('true');
    expect((await call(agent, 'GET', '/v1/config/proxy-defaults/global')).status).toBe(404);
  });

  it('a blocking read wakes for its own entry, not for another of its kind', async () => {
    await call(agent, 'PUT', '/v1/config', { Kind: 'service-resolver', Name: 'blocker', ConnectTimeout: '5s' });
    const first = await call(agent, 'GET', '/v1/config/service-resolver/blocker');
    const index = first.headers.get('X-Consul-Index');
    let settled = false;
    const parked = call(agent, 'GET', `/v1/config/service-resolver/blocker?index=${index}&wait=30s`).then((res) => {
      settled = true;
      return res;
    });
    // Another entry of the kind changes: the parked read stays (docs/decisions.md D6).
    await call(agent, 'PUT', '/v1/config', { Kind: 'service-resolver', Name: 'other' });
    const listed = await call(agent, 'GET', `/v1/config/service-resolver?index=${index}`);
    expect((listed.json() as unknown[]).length).toBe(2);
    expect(settled).toBe(false);
    await call(agent, 'PUT', '/v1/config', { Kind: 'service-resolver', Name: 'blocker', ConnectTimeout: '7s' });
    const woken = await parked;
    expect((woken.json() as { ConnectTimeout: string }).ConnectTimeout).toBe('7s');
    expect(Number(woken.headers.get('X-Consul-Index'))).toBeGreaterThan(Number(index));
  });

  it('service-intentions and /v1/connect/intentions are one: a write through either is read through both, and authorize follows', async () => {
    // Through /v1/config: each source an intention of the destination, precedence as ever.
    await call(agent, 'PUT', '/v1/config', {
      Kind: 'service-intentions',
      Name: 'db',
      Sources: [
        { Name: '*', Action: 'deny' },
        { Name: 'web', Action: 'allow' },
      ],
    });
    const matched = (await call(agent, 'GET', '/v1/connect/intentions/match?by=destination&name=db')).json() as {
      db: { SourceName: string; Action: string; Precedence: number }[];
    };
    expect(matched.db.map((i) => [i.SourceName, i.Action, i.Precedence])).toEqual([
      ['web', 'allow', 9],
      ['*', 'deny', 8],
    ]);
    expect(await authorized(agent, 'web', 'db')).toBe(true);
    expect(await authorized(agent, 'api', 'db')).toBe(false);

    // Through /v1/connect/intentions: the entry shows it, and authorize changes.
    const exact = await call(agent, 'PUT', '/v1/connect/intentions/exact?source=api&destination=db', {
      Action: 'allow',
    });
    expect(exact.text).toBe('true');
    expect(await authorized(agent, 'api', 'db')).toBe(true);
    const created = (
      await call(agent, 'POST', '/v1/connect/intentions', {
        SourceName: 'batch',
        DestinationName: 'db',
        Action: 'deny',
      })
    ).json() as { ID: string };
    const entry = (await call(agent, 'GET', '/v1/config/service-intentions/db')).json() as {
      Sources: Record<string, unknown>[];
      ModifyIndex: number;
    };
    expect(entry.Sources.map((s) => [s.Name, s.Action, s.Precedence, s.LegacyID])).toEqual([
      ['web', 'allow', 9, undefined],
      ['api', 'allow', 9, undefined],
      ['batch', 'deny', 9, created.ID],
      ['*', 'deny', 8, undefined],
    ]);

    // Deleting through the ID API takes the source out of the entry.
    await call(agent, 'DELETE', `/v1/connect/intentions/${created.ID}`);
    const after = (await call(agent, 'GET', '/v1/config/service-intentions/db')).json() as {
      Sources: { Name: string }[];
    };
    expect(after.Sources.map((s) => s.Name)).toEqual(['web', 'api', '*']);

    // Deleting the entry deletes every intention of the destination: back to the default (allow, no ACLs).
    expect((await call(agent, 'DELETE', '/v1/config/service-intentions/db')).status).toBe(200);
    expect((await call(agent, 'GET', '/v1/connect/intentions/match?by=destination&name=db')).json()).toEqual({
      db: [],
    });
    expect(await authorized(agent, 'api', 'db')).toBe(true);
  });

  it('npm consul: its generic request path (it has no config entry calls) writes, reads and deletes', async () => {
    const generic = consul as unknown as {
      _put(req: object, next: unknown): Promise<unknown>;
      _get(req: object, next: unknown): Promise<unknown>;
      _delete(req: object, next: unknown): Promise<unknown>;
    };
    // The package's own body handler for those calls (lib/utils.js has no typings).
    const { body } = createRequire(import.meta.url)('consul/lib/utils.js') as { body: unknown };
    const written = await generic._put(
      {
        name: 'config.set',
        path: '/config',
        type: 'json',
        body: { Kind: 'service-defaults', Name: 'npm', Protocol: 'grpc' },
      },
      body,
    );
    expect(written).toBe(true);
    const read = (await generic._get({ name: 'config.get', path: '/config/service-defaults/npm' }, body)) as {
      Protocol: string;
    };
    expect(read.Protocol).toBe('grpc');
    await generic._delete({ name: 'config.delete', path: '/config/service-defaults/npm' }, body);
    await expect(generic._get({ name: 'config.get', path: '/config/service-defaults/npm' }, body)).rejects.toThrow(
      /Config entry not found/,
    );
  });

  it('the CLI writes HCL and JSON (snake_case, blocks), reads, lists and deletes with -cas', async () => {
    const env = { CONSUL_HTTP_ADDR: `127.0.0.1:${agent.port}` };
    const hcl = join(dir, 'web.hcl');
    await writeFile(
      hcl,
      'kind = "service-defaults"\nname = "cli-web"\nprotocol = "http"\nupstream_config {\n  defaults {\n    connect_timeout_ms = 2500\n  }\n}\n',
    );
    const write = await runCli(['config', 'write', hcl], env);
    expect([write.code, write.stdout]).toEqual([0, 'Config entry written: service-defaults/cli-web\n']);
    const read = await runCli(['config', 'read', '-kind', 'service-defaults', '-name', 'cli-web'], env);
    expect(read.code).toBe(0);
    const entry = JSON.parse(read.stdout) as { Protocol: string; UpstreamConfig: unknown; ModifyIndex: number };
    expect(entry.Protocol).toBe('http');
    expect(entry.UpstreamConfig).toEqual({ Defaults: { ConnectTimeoutMs: 2500, MeshGateway: {} } });
    expect(read.stdout).toContain('\n    "Kind": "service-defaults",\n');

    const json = join(dir, 'db.json');
    await writeFile(json, JSON.stringify({ Kind: 'service-defaults', Name: 'cli-db', Protocol: 'tcp' }));
    expect((await runCli(['config', 'write', json], env)).code).toBe(0);
    const list = await runCli(['config', 'list', '-kind', 'service-defaults'], env);
    expect(list.stdout.split('\n').filter((l) => l.startsWith('cli-'))).toEqual(['cli-db', 'cli-web']);

    const bad = join(dir, 'bad.json');
    await writeFile(bad, JSON.stringify({ Kind: 'service-defaults', Name: 'cli-db', Colour: 'red' }));
    const refused = await runCli(['config', 'write', bad], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      'Error writing config entry service-defaults/cli-db: Unexpected response code: 400',
    );

    const wrongCas = await runCli(
      [
        'config',
        'delete',
        '-kind',
        'service-defaults',
        '-name',
        'cli-web',
        '-cas',
        '-modify-index',
        String(entry.ModifyIndex + 100),
      ],
      env,
    );
    expect([wrongCas.code, wrongCas.stderr]).toEqual([1, 'Config entry not deleted: service-defaults/cli-web\n']);
    const del = await runCli(
      [
        'config',
        'delete',
        '-kind',
        'service-defaults',
        '-name',
        'cli-web',
        '-cas',
        '-modify-index',
        String(entry.ModifyIndex),
      ],
      env,
    );
    expect([del.code, del.stdout]).toEqual([0, 'Config entry deleted: service-defaults/cli-web\n']);
    const noKind = await runCli(['config', 'read', '-name', 'x'], env);
    expect(noKind.code).toBe(1);
    expect(noKind.stderr).toContain('Must specify the -kind parameter');
  }, 60_000);
});

describe('config entries with ACLs', () => {
  let agent: AgentProcess;
  let policies = 0;

  const tokenWith = async (rules: string): Promise<string> => {
    const policy = (
      await call(agent, 'PUT', '/v1/acl/policy', { Name: `p${policies++}`, Rules: rules }, MANAGEMENT)
    ).json() as {
      ID: string;
    };
    const token = (await call(agent, 'PUT', '/v1/acl/token', { Policies: [{ ID: policy.ID }] }, MANAGEMENT)).json() as {
      SecretID: string;
    };
    return token.SecretID;
  };

  beforeAll(async () => {
    agent = await startAgent({
      config: {
        http_config: { header_brand: 'Consul' },
        acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: MANAGEMENT } },
      },
    });
  });
  afterAll(() => agent?.stop());

  it('service-defaults need service:write to write and service:read to read; lists are filtered', async () => {
    const writer = await tokenWith('service "web" { policy = "write" }');
    const reader = await tokenWith('service "web" { policy = "read" }');
    const denied = await call(agent, 'PUT', '/v1/config', { Kind: 'service-defaults', Name: 'web' }, reader);
    expect(denied.status).toBe(403);
    expect(denied.text).toMatch(
      /^Permission denied: token with AccessorID '.+' lacks permission 'service:write' on "web"$/,
    );
    expect((await call(agent, 'PUT', '/v1/config', { Kind: 'service-defaults', Name: 'web' }, writer)).text).toBe(
      'true',
    );
    expect((await call(agent, 'PUT', '/v1/config', { Kind: 'service-defaults', Name: 'db' }, MANAGEMENT)).text).toBe(
      'true',
    );
    expect((await call(agent, 'GET', '/v1/config/service-defaults/web', undefined, reader)).status).toBe(200);
    expect((await call(agent, 'GET', '/v1/config/service-defaults/db', undefined, reader)).status).toBe(403);
    const list = await call(agent, 'GET', '/v1/config/service-defaults', undefined, reader);
    expect((list.json() as { Name: string }[]).map((e) => e.Name)).toEqual(['web']);
    expect(list.headers.get('X-Consul-Results-Filtered-By-ACLs')).toBe('true');
    // Validation comes before the ACL check, as in Consul's Apply.
    expect((await call(agent, 'PUT', '/v1/config', { Kind: 'service-defaults', Name: '*' }, reader)).status).toBe(400);
  });

  it('proxy-defaults: anyone reads, mesh:write (or operator:write) writes', async () => {
    const operator = await tokenWith('operator = "write"');
    const nobody = await tokenWith('node_prefix "" { policy = "read" }');
    const entry = { Kind: 'proxy-defaults', Name: 'global', Config: { protocol: 'http' } };
    const denied = await call(agent, 'PUT', '/v1/config', entry, nobody);
    expect([denied.status, denied.text.includes("lacks permission 'mesh:write'")]).toEqual([403, true]);
    expect((await call(agent, 'PUT', '/v1/config', entry, operator)).text).toBe('true');
    expect((await call(agent, 'GET', '/v1/config/proxy-defaults/global', undefined, nobody)).status).toBe(200);
  });

  it('discovery-chain entries need service:read on every other service they name', async () => {
    const token = await tokenWith('service "web" { policy = "write" }');
    const splitter = {
      Kind: 'service-splitter',
      Name: 'web',
      Splits: [{ Weight: 50 }, { Weight: 50, Service: 'web-v2' }],
    };
    const denied = await call(agent, 'PUT', '/v1/config', splitter, token);
    expect([denied.status, denied.text.endsWith(`lacks permission 'service:read' on "web-v2"`)]).toEqual([403, true]);
    const both = await tokenWith('service "web" { policy = "write" }\nservice "web-v2" { policy = "read" }');
    expect((await call(agent, 'PUT', '/v1/config', splitter, both)).text).toBe('true');
  });

  it('service-intentions need intention:write on the destination, as /v1/connect/intentions does', async () => {
    const token = await tokenWith('service "db" { policy = "read" intentions = "write" }');
    const entry = { Kind: 'service-intentions', Name: 'db', Sources: [{ Name: 'web', Action: 'allow' }] };
    const other = { ...entry, Name: 'cache' };
    expect((await call(agent, 'PUT', '/v1/config', other, token)).status).toBe(403);
    expect((await call(agent, 'PUT', '/v1/config', entry, token)).text).toBe('true');
    expect((await call(agent, 'GET', '/v1/config/service-intentions/db', undefined, token)).status).toBe(200);
    expect(await authorized(agent, 'web', 'db', MANAGEMENT)).toBe(true);
    expect(await authorized(agent, 'api', 'db', MANAGEMENT)).toBe(false);
    expect((await call(agent, 'DELETE', '/v1/config/service-intentions/cache', undefined, token)).status).toBe(403);
  });
});
