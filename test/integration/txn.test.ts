// PUT /v1/txn's KV verbs on one agent, as the npm `consul` client and Consul's api.Txn send them:
// results in order (a get after a set in the same transaction sees it), all or nothing (a failed
// op applies none, read back), every failing op in Errors with its index (409), locks through a
// session, ?stale reads with the index headers, Consul's limits and texts, and ACLs per op. The
// catalog's verbs are test/integration/txn-catalog.test.ts's.
import Consul from 'consul';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from './support/agent-process.js';

const ROOT = 'b1a5ad0c-0000-4000-8000-000000000002';
const b64 = (text: string): string => Buffer.from(text).toString('base64');

interface KvResult {
  KV: { Key: string; Value: string | null; Flags: number; LockIndex: number; Session?: string; ModifyIndex: number };
}
interface TxnReply {
  Results: KvResult[] | null;
  Errors: { OpIndex: number; What: string }[] | null;
}

type Op = { KV: Record<string, unknown> };

async function txn(
  agent: AgentProcess,
  ops: unknown,
  query = '',
  token = ROOT,
): Promise<{ status: number; body: TxnReply; index: string | null }> {
  const res = await fetch(`${agent.url}/v1/txn${query}`, {
    method: 'PUT',
    body: typeof ops === 'string' ? ops : JSON.stringify(ops),
    headers: { 'X-Svc-Token': token },
  });
  const text = await res.text();
  return {
    status: res.status,
    body: (text.startsWith('{') ? JSON.parse(text) : { text }) as TxnReply,
    index: res.headers.get('X-Svc-Index'),
  };
}

describe('transactions on one agent', () => {
  let agent: AgentProcess;
  let consul: Consul;
  const raw = async (key: string): Promise<string | undefined> => {
    const res = await fetch(`${agent.url}/v1/kv/${key}?raw`, { headers: { 'X-Svc-Token': ROOT } });
    return res.status === 404 ? undefined : res.text();
  };

  beforeAll(async () => {
    agent = await startAgent({
      config: { acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: ROOT } } },
    });
    consul = new Consul({ host: '127.0.0.1', port: agent.port, defaults: { token: ROOT } });
  });
  afterAll(() => agent?.stop());

  it('npm consul: sets and reads in one transaction, in order', async () => {
    // Its typings name flat ops; it sends what it is given, and Consul's api.TxnOp wraps each in KV.
    const create = consul.transaction.create.bind(consul.transaction) as unknown as (
      ops: Op[],
      options: object,
    ) => Promise<TxnReply>;
    const reply = await create(
      [
        { KV: { Verb: 'set', Key: 'app/a', Value: b64('one') } },
        { KV: { Verb: 'set', Key: 'app/b', Value: b64('two'), Flags: 42 } },
        { KV: { Verb: 'get', Key: 'app/a' } },
        { KV: { Verb: 'get-tree', Key: 'app/' } },
      ],
      {},
    );
    expect(reply.Errors).toBeNull();
    const results = reply.Results ?? [];
    expect(results.map((r) => [r.KV.Key, r.KV.Value, r.KV.Flags])).toEqual([
      ['app/a', null, 0],
      ['app/b', null, 42],
      ['app/a', b64('one'), 0],
      ['app/a', b64('one'), 0],
      ['app/b', b64('two'), 42],
    ]);
    // One commit: every entry carries its index.
    expect(new Set(results.map((r) => r.KV.ModifyIndex)).size).toBe(1);
  });

  it('applies nothing when an op fails, and lists every failing op', async () => {
    const before = await txn(agent, [{ KV: { Verb: 'get', Key: 'app/a' } }]);
    const index = before.body.Results?.[0]?.KV.ModifyIndex ?? 0;
    const failed = await txn(agent, [
      { KV: { Verb: 'set', Key: 'app/c', Value: b64('never') } },
      { KV: { Verb: 'cas', Key: 'app/a', Value: b64('stale'), Index: index + 1000 } },
      { KV: { Verb: 'check-not-exists', Key: 'app/b' } },
      { KV: { Verb: 'get', Key: 'app/missing' } },
    ]);
    expect(failed).toMatchObject({
      status: 409,
      body: {
        Results: null,
        Errors: [
          { OpIndex: 1, What: 'failed to set key "app/a", index is stale' },
          { OpIndex: 2, What: 'key "app/b" exists' },
          { OpIndex: 3, What: 'key "app/missing" doesn\'t exist' },
        ],
      },
    });
    expect(await raw('app/c')).toBeUndefined();
    expect(await raw('app/a')).toBe('one');

    const cas = await txn(agent, [
      { KV: { Verb: 'check-index', Key: 'app/a', Index: index } },
      { KV: { Verb: 'cas', Key: 'app/a', Value: b64('three'), Index: index } },
      { KV: { Verb: 'delete-cas', Key: 'app/b', Index: index } },
      { KV: { Verb: 'get', Key: 'app/a' } },
    ]);
    expect(cas.status).toBe(200);
    expect(cas.body.Results?.map((r) => r.KV.Value)).toEqual([null, null, b64('three')]);
    expect(await raw('app/b')).toBeUndefined();
  });

  it('takes and lets go of a lock through a session, checked by check-session', async () => {
    const session = (
      (await (
        await fetch(`${agent.url}/v1/session/create`, {
          method: 'PUT',
          body: '{"LockDelay":0}',
          headers: { 'X-Svc-Token': ROOT },
        })
      ).json()) as { ID: string }
    ).ID;
    const locked = await txn(agent, [
      { KV: { Verb: 'lock', Key: 'app/leader', Value: b64('me'), Session: session } },
      { KV: { Verb: 'check-session', Key: 'app/leader', Session: session } },
    ]);
    expect(locked.status).toBe(200);
    expect(locked.body.Results?.[0]?.KV).toMatchObject({ Session: session, LockIndex: 1 });
    const other = await txn(agent, [{ KV: { Verb: 'check-session', Key: 'app/leader', Session: 'someone' } }]);
    expect(other.body.Errors?.[0]?.What).toBe(
      `failed session check for key "app/leader", current session "${session}" != "someone"`,
    );
    const unlocked = await txn(agent, [
      { KV: { Verb: 'unlock', Key: 'app/leader', Value: b64('free'), Session: session } },
    ]);
    expect(unlocked.body.Results?.[0]?.KV.Session).toBeUndefined();
    const ghost = await txn(agent, [{ KV: { Verb: 'lock', Key: 'app/leader', Session: 'ghost' } }]);
    expect(ghost.body.Errors).toEqual([{ OpIndex: 0, What: 'Invalid session "ghost"' }]);
  });

  it('serves a read-only transaction ?stale with the index headers; delete-tree empties a prefix', async () => {
    const read = await txn(agent, [{ KV: { Verb: 'get-tree', Key: 'app/' } }], '?stale');
    expect(read.status).toBe(200);
    expect(Number(read.index)).toBeGreaterThan(0);
    const gone = await txn(agent, [
      { KV: { Verb: 'delete-tree', Key: 'app/' } },
      { KV: { Verb: 'get-tree', Key: 'app/' } },
    ]);
    expect(gone.body).toEqual({ Results: [], Errors: null });
  });

  it("refuses what Consul refuses, with Consul's texts", async () => {
    const many: Op[] = Array.from({ length: 129 }, (_, i) => ({ KV: { Verb: 'get', Key: `k${i}` } }));
    expect(await txn(agent, many)).toMatchObject({
      status: 413,
      body: { text: 'Transaction contains too many operations (129 > 128)' },
    });
    const big = await txn(agent, 'x'.repeat(600 * 1024));
    expect(big.status).toBe(413);
    expect((big.body as unknown as { text: string }).text).toMatch(
      /^Request body\(614400 bytes\) too large, max size: 524288 bytes/,
    );
    expect(await txn(agent, '{"KV":{}}')).toMatchObject({ status: 400 });
    expect(await txn(agent, [{ KV: { Verb: 'set', Key: 'x', Value: '%%%' } }])).toMatchObject({ status: 400 });
    expect(await txn(agent, [{ KV: { Verb: 'frob', Key: 'x' } }])).toMatchObject({
      status: 409,
      body: { Errors: [{ OpIndex: 0, What: 'unknown KV verb "frob"' }] },
    });
    const node = await txn(agent, [{ Node: { Verb: 'get', Node: { Node: 'n' } } }]);
    expect(node).toMatchObject({ status: 409, body: { Errors: [{ OpIndex: 0, What: 'node "n" doesn\'t exist' }] } });
    // An intention op is Consul's pre-1.9 raft entry only: refused whole.
    expect((await txn(agent, [{ Intention: { Op: 'create' } }])).status).toBe(400);
  });

  it('checks each op against the token: a denied one is an error, and nothing applies', async () => {
    const rules = 'key_prefix "app/" { policy = "write" } key_prefix "ro/" { policy = "read" }';
    const policy = await fetch(`${agent.url}/v1/acl/policy`, {
      method: 'PUT',
      body: JSON.stringify({ Name: 'app', Rules: rules }),
      headers: { 'X-Svc-Token': ROOT },
    });
    expect(policy.status).toBe(200);
    const token = await fetch(`${agent.url}/v1/acl/token`, {
      method: 'PUT',
      body: JSON.stringify({ Policies: [{ Name: 'app' }] }),
      headers: { 'X-Svc-Token': ROOT },
    });
    const secret = ((await token.json()) as { SecretID: string }).SecretID;
    const denied = await txn(
      agent,
      [
        { KV: { Verb: 'set', Key: 'app/x', Value: b64('x') } },
        { KV: { Verb: 'set', Key: 'ro/x', Value: b64('x') } },
        { KV: { Verb: 'get', Key: 'secret/x' } },
        { KV: { Verb: 'delete-tree', Key: '' } },
      ],
      '',
      secret,
    );
    expect(denied.status).toBe(409);
    expect(denied.body.Errors).toEqual([
      { OpIndex: 1, What: 'Permission denied' },
      { OpIndex: 2, What: 'Permission denied' },
      { OpIndex: 3, What: 'Permission denied' },
    ]);
    expect(await raw('app/x')).toBeUndefined();
    expect((await txn(agent, [{ KV: { Verb: 'set', Key: 'app/x', Value: b64('x') } }], '', secret)).status).toBe(200);
  });
});
