// Sessions and KV locks on one agent, called as users call them: the npm `consul` client and
// Debian's python3-consul (support/python-consul-sessions.py) create sessions, take and hand over a
// lock, renew and destroy; a session ends when one of its checks goes critical, freeing its key;
// a blocking read of a session wakes when it ends; refusals carry Consul's texts; with ACLs,
// session:write on the node to create and session:read to see (docs/decisions.md#sessions).
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import Consul from 'consul';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from './support/agent-process.js';

const run = promisify(execFile);
const ENSURE = resolve(import.meta.dirname, '../../scripts/ensure-python-consul.sh');
const PROGRAM = resolve(import.meta.dirname, 'support/python-consul-sessions.py');
const ROOT = 'b1a5ad0c-0000-4000-8000-000000000001';

interface Entry {
  Key: string;
  LockIndex: number;
  Session?: string;
  Value: string | null;
  ModifyIndex: number;
}

async function call(
  agent: AgentProcess,
  method: string,
  path: string,
  body?: string,
  token?: string,
): Promise<Response> {
  return fetch(`${agent.url}${path}`, {
    method,
    ...(body === undefined ? {} : { body }),
    ...(token === undefined ? {} : { headers: { 'X-Svc-Token': token } }),
  });
}

describe('sessions and locks on one agent', () => {
  let agent: AgentProcess;
  let consul: Consul;
  beforeAll(async () => {
    agent = await startAgent({ args: ['-node', 'lock-node'], config: { http_config: { header_brand: 'Consul' } } });
    consul = new Consul({ host: '127.0.0.1', port: agent.port });
  });
  afterAll(() => agent?.stop());

  const entry = async (key: string): Promise<Entry | undefined> => {
    const res = await call(agent, 'GET', `/v1/kv/${key}`);
    return res.status === 404 ? undefined : ((await res.json()) as Entry[])[0];
  };

  it('npm consul: creates a session with the defaults, takes a lock, hands it over', async () => {
    const { ID: a } = await consul.session.create({ name: 'leader-a', lockdelay: '0s' });
    const info = await consul.session.info(a);
    expect(info).toMatchObject({
      ID: a,
      Name: 'leader-a',
      Node: 'lock-node',
      LockDelay: 0,
      Behavior: 'release',
      TTL: '',
      NodeChecks: ['serfHealth'],
      ServiceChecks: null,
    });
    expect(info.CreateIndex).toBe(info.ModifyIndex);
    const { ID: b } = await consul.session.create({ name: 'leader-b' });
    expect((await consul.session.info(b)).LockDelay).toBe(15_000_000_000);

    expect(await consul.kv.set({ key: 'svc/leader', value: 'a', acquire: a })).toBe(true);
    // The library hands a `false` body on as undefined (its JSON decoding skips a falsy body).
    expect(await consul.kv.set({ key: 'svc/leader', value: 'b', acquire: b })).toBeFalsy();
    expect(await entry('svc/leader')).toMatchObject({
      Session: a,
      LockIndex: 1,
      Value: Buffer.from('a').toString('base64'),
    });
    // The holder taking it again updates the value, not LockIndex; a plain PUT keeps the lock.
    expect(await consul.kv.set({ key: 'svc/leader', value: 'a2', acquire: a })).toBe(true);
    expect(await consul.kv.set('svc/leader', 'plain')).toBe(true);
    expect(await entry('svc/leader')).toMatchObject({
      Session: a,
      LockIndex: 1,
      Value: Buffer.from('plain').toString('base64'),
    });

    expect(await consul.kv.set({ key: 'svc/leader', value: 'x', release: b })).toBeFalsy();
    expect(await consul.kv.set({ key: 'svc/leader', value: 'free', release: a })).toBe(true);
    const freed = await entry('svc/leader');
    expect(freed?.Session).toBeUndefined();
    expect(freed?.LockIndex).toBe(1);
    expect(await consul.kv.set({ key: 'svc/leader', value: 'b', acquire: b })).toBe(true);
    expect((await entry('svc/leader'))?.LockIndex).toBe(2);

    expect((await consul.session.list()).map((s) => s.Name).sort()).toEqual(['leader-a', 'leader-b']);
    expect((await consul.session.node('lock-node')).length).toBe(2);
    expect(await consul.session.renew(a)).toMatchObject([{ ID: a }]);

    // b's end frees the key and starts its lock-delay (15 s): a cannot take it meanwhile.
    await consul.session.destroy(b);
    expect((await entry('svc/leader'))?.Session).toBeUndefined();
    expect(await consul.kv.set({ key: 'svc/leader', value: 'a', acquire: a })).toBeFalsy();
    await consul.session.destroy(a);
    expect(await consul.session.list()).toEqual([]);
  });

  it("python3-consul: a user's lock script", { timeout: 300_000 }, async () => {
    const python = (await run(ENSURE, [])).stdout.trim();
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(CONSUL|SVC)_/.test(name)));
    const { stdout } = await run(python, [PROGRAM, String(agent.port)], { env });
    const steps = new Map<string, Record<string, unknown>>();
    for (const line of stdout.trim().split('\n')) {
      const { step, ...result } = JSON.parse(line) as { step: string } & Record<string, unknown>;
      steps.set(step, result);
    }
    expect(steps.get('create')).toEqual({ distinct: true, ttl: '10s', lockdelay: 0 });
    expect(steps.get('acquire')).toEqual({ a: true, b: false });
    expect(steps.get('held')).toEqual({ session: true, lockindex: 1, value: 'a' });
    expect(steps.get('renew')).toEqual({ id: true, missing: 'NotFound' });
    expect(steps.get('release')).toEqual({ b: false, a: true });
    expect(steps.get('handover')).toEqual({ b: true });
    expect(steps.get('destroyed')).toEqual({ session: null, lockindex: 2 });
    expect(steps.get('ephemeral')).toEqual({ entry: null });
    expect(steps.get('list')).toEqual({ names: ['py-a'], node: ['py-a'] });
  });

  it('ends a session whose check goes critical, freeing its key; a blocking read of it wakes', async () => {
    const check = await call(
      agent,
      'PUT',
      '/v1/agent/check/register',
      JSON.stringify({ ID: 'job', Name: 'job', TTL: '60s' }),
    );
    expect(check.status).toBe(200);
    expect((await call(agent, 'PUT', '/v1/agent/check/pass/job')).status).toBe(200);
    // The catalog has the check passing once anti-entropy synced it: a session may then use it.
    let created: Response;
    for (;;) {
      created = await call(
        agent,
        'PUT',
        '/v1/session/create',
        JSON.stringify({ Checks: ['serfHealth', 'job'], LockDelay: 0 }),
      );
      if (created.status === 200) break;
      expect(await created.text()).toMatch(/Missing check 'job' registration|Check 'job' is in critical state/);
      const nodeChecks = await call(agent, 'GET', '/v1/health/node/lock-node?index=1&wait=2s');
      await nodeChecks.arrayBuffer();
    }
    const { ID: id } = (await created.json()) as { ID: string };
    expect(await consul.kv.set({ key: 'svc/job', value: 'j', acquire: id })).toBe(true);
    const info = await call(agent, 'GET', `/v1/session/info/${id}`);
    const index = info.headers.get('X-Consul-Index');
    const woken = call(agent, 'GET', `/v1/session/info/${id}?index=${index}&wait=60s`);

    expect((await call(agent, 'PUT', '/v1/agent/check/fail/job')).status).toBe(200);
    expect(await (await woken).json()).toEqual([]);
    for (;;) {
      const held = await entry('svc/job');
      if (held?.Session === undefined) break;
      await (await call(agent, 'GET', `/v1/kv/svc/job?index=${held.ModifyIndex}&wait=5s`)).arrayBuffer();
    }
    await call(agent, 'PUT', '/v1/agent/check/deregister/job');
  });

  it("refuses what Consul refuses, with Consul's texts", async () => {
    const refused = async (method: string, path: string, body?: string): Promise<[number, string]> => {
      const res = await call(agent, method, path, body);
      return [res.status, await res.text()];
    };
    expect(await refused('PUT', '/v1/session/create', '{"TTL":"5s"}')).toEqual([
      400,
      "Invalid Session TTL '5000000000', must be between [10s=24h0m0s]",
    ]);
    expect(await refused('PUT', '/v1/session/create', '{"TTL":"soon"}')).toEqual([
      400,
      `Session TTL 'soon' invalid: time: invalid duration "soon"`,
    ]);
    expect(await refused('PUT', '/v1/session/create', '{"Behavior":"keep"}')).toEqual([
      400,
      "Invalid Behavior setting 'keep'",
    ]);
    expect(await refused('PUT', '/v1/session/create', '{"Node":"elsewhere"}')).toEqual([
      400,
      'Missing node registration',
    ]);
    expect(await refused('PUT', '/v1/session/create', '{"Checks":["nope"]}')).toEqual([
      400,
      "Missing check 'nope' registration",
    ]);
    expect(await refused('PUT', '/v1/session/create', '{"Name":5}')).toEqual([
      400,
      'Request decode failed: json: cannot unmarshal number into Go struct field Session.Name of type string',
    ]);
    expect(await refused('PUT', '/v1/kv/k?acquire=ghost', 'v')).toEqual([400, 'Invalid session "ghost"']);
    expect(await refused('PUT', '/v1/session/renew/ghost')).toEqual([404, "Session id 'ghost' not found"]);
    expect(await refused('PUT', '/v1/session/destroy/')).toEqual([400, 'Missing session']);
    expect(await refused('GET', '/v1/session/info/ghost')).toEqual([200, '[]']);
  });
});

describe('sessions with ACLs', () => {
  let agent: AgentProcess;
  let writer: string;
  beforeAll(async () => {
    agent = await startAgent({
      args: ['-node', 'acl-node'],
      config: { acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: ROOT } } },
    });
    const rules = 'session "acl-node" { policy = "write" } key_prefix "" { policy = "write" }';
    const policy = await call(agent, 'PUT', '/v1/acl/policy', JSON.stringify({ Name: 'locks', Rules: rules }), ROOT);
    expect(policy.status).toBe(200);
    const token = await call(agent, 'PUT', '/v1/acl/token', JSON.stringify({ Policies: [{ Name: 'locks' }] }), ROOT);
    writer = ((await token.json()) as { SecretID: string }).SecretID;
  });
  afterAll(() => agent?.stop());

  it('needs session:write on the node to create or destroy, and session:read to see', async () => {
    const anonymous = await call(agent, 'PUT', '/v1/session/create', '{}');
    expect(anonymous.status).toBe(403);
    expect(await anonymous.text()).toContain('lacks permission \'session:write\' on "acl-node"');
    const created = await call(agent, 'PUT', '/v1/session/create', '{"Name":"mine"}', writer);
    expect(created.status).toBe(200);
    const { ID: id } = (await created.json()) as { ID: string };
    expect(await (await call(agent, 'PUT', `/v1/kv/held?acquire=${id}`, 'v', writer)).text()).toBe('true');

    const hidden = await call(agent, 'GET', '/v1/session/list');
    expect(await hidden.json()).toEqual([]);
    expect(hidden.headers.get('X-Svc-Results-Filtered-By-ACLs')).toBe('true');
    const seen = await call(agent, 'GET', '/v1/session/list', undefined, writer);
    expect(((await seen.json()) as { ID: string }[]).map((s) => s.ID)).toEqual([id]);

    expect((await call(agent, 'PUT', `/v1/session/destroy/${id}`)).status).toBe(403);
    expect((await call(agent, 'PUT', `/v1/session/renew/${id}`)).status).toBe(403);
    expect(await (await call(agent, 'PUT', `/v1/session/destroy/${id}`, undefined, writer)).text()).toBe('true');
  });
});
