// Client agents write through servers (docs/decisions.md D25), on a 3-member etcd with RBAC on as
// docs/cluster-security.md sets it up: a client agent's etcd user reads the shared view and KV and
// writes only its own member entry and its mailbox requests; every write its HTTP API takes is run
// by a server with the caller's token, checked there again. Agents run in process (createAgent).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replyKey, type Sealed } from '../../src/acl/sealed.js';
import { ACL_POLICIES, ACL_TOKENS } from '../../src/acl/model.js';
import { CA_TABLE } from '../../src/connect/ca/model.js';
import { INTENTIONS_TABLE } from '../../src/connect/intentions/model.js';
import { silentLogger } from '../../src/core/log.js';
import { KV_TABLE } from '../../src/kv/entries.js';
import { connectEtcd, openEtcdMailbox, openEtcdStore, type EtcdConnection } from '../../src/state/etcd/index.js';
import type { WriteOp } from '../../src/state/types.js';
import { asUser, clientUser } from '../support/etcd-rbac.js';
import { callAgent, startRbacCluster, until, type Answer, type InProcessAgent, type RbacCluster } from './support.js';

const PREFIX = '/svc/';
const MANAGEMENT = '3c2b1a09-8f7e-4d6c-9b5a-4e3d2c1b0a98';
let rbac: RbacCluster;

const call = (at: InProcessAgent, method: string, path: string, body?: unknown, token = MANAGEMENT): Promise<Answer> =>
  callAgent(at, method, path, body, token);

let server: InProcessAgent;
let client: InProcessAgent;
let other: InProcessAgent;
let raw: EtcdConnection;

beforeAll(async () => {
  rbac = await startRbacCluster(PREFIX, ['client-1', 'client-2']);
  server = await rbac.start('server-1', true, { initialManagement: MANAGEMENT });
  [client, other] = await Promise.all([rbac.start('client-1', false), rbac.start('client-2', false)]);
  raw = connectEtcd(asUser(rbac.etcd, clientUser('client-1')));
  rbac.onStop(() => raw.close());
}, 180_000);
afterAll(() => rbac?.stop());

describe('a client agent writes through a server', () => {
  it("etcd refuses every direct write of a client agent's user to shared state and to other agents' member entries", async () => {
    const put = (key: string): Promise<unknown> =>
      raw.txn(
        { compares: [], success: [{ op: 'put', key: Buffer.from(key), value: Buffer.from('{}') }], failure: [] },
        5_000,
      );
    const del = (key: string): Promise<unknown> =>
      raw.txn({ compares: [], success: [{ op: 'delete', key: Buffer.from(key) }], failure: [] }, 5_000);
    // The same through the store a client agent runs on, one commit per table.
    const store = await openEtcdStore({
      etcd: asUser(rbac.etcd, clientUser('client-1')),
      prefix: PREFIX,
      log: silentLogger,
      readThroughTables: [KV_TABLE],
    });
    rbac.onStop(() => store.close());
    const direct = [
      put(`${PREFIX}data/${INTENTIONS_TABLE}/forged`),
      put(`${PREFIX}data/${ACL_TOKENS}/forged`),
      put(`${PREFIX}data/${ACL_POLICIES}/forged`),
      put(`${PREFIX}data/${CA_TABLE}/config`),
      put(`${PREFIX}bulk/${KV_TABLE}/forged`),
      put(`${PREFIX}meta/tables/${INTENTIONS_TABLE}`),
      put(`${PREFIX}members/server-1`),
      put(`${PREFIX}members/client-2`),
      del(`${PREFIX}members/server-1`),
      del(`${PREFIX}bulk/${KV_TABLE}/`),
    ];
    const commits: WriteOp[] = [
      { op: 'set', table: KV_TABLE, key: 'forged', value: { Flags: 0, Value: null } },
      { op: 'delete', table: INTENTIONS_TABLE, key: 'any' },
      { op: 'delete', table: ACL_TOKENS, key: 'any' },
      { op: 'delete', table: ACL_POLICIES, key: 'any' },
      { op: 'delete', table: CA_TABLE, key: 'config' },
    ];
    const results = await Promise.allSettled([...direct, ...commits.map((op) => store.commit([op]))]);
    const refused = results.filter((r) => r.status === 'rejected' && /permission denied/.test(String(r.reason)));
    expect(refused.length).toBe(direct.length + commits.length);
    // Its own member entry is its to write: the agent registered, both agents list it, and the
    // user may put it (here again as it is, under its lease).
    for (const agent of [server, client])
      expect((await call(agent, 'GET', '/v1/agent/members')).body.map((m: { Name: string }) => m.Name)).toContain(
        'client-1',
      );
    const own = Buffer.from(`${PREFIX}members/client-1`);
    const entry = await raw.getKey(own, 5_000);
    expect(entry).toBeDefined();
    const again = { op: 'put', key: own, value: entry!.value, lease: entry!.lease } as const;
    expect((await raw.txn({ compares: [], success: [again], failure: [] }, 5_000)).succeeded).toBe(true);
  });

  it('writes through the client agent with a good token are done, read back at once on it and on the server, and reach every agent', async () => {
    const policy = await call(client, 'PUT', '/v1/acl/policy', {
      Name: 'kv-app',
      Rules: 'key_prefix "app/" { policy = "write" }',
    });
    expect(policy.status).toBe(200);
    const token = await call(client, 'PUT', '/v1/acl/token', { Policies: [{ ID: policy.body.ID }] });
    expect(token.status).toBe(200);
    expect(token.body.SecretID).toMatch(/^[0-9a-f-]{36}$/);
    const created = await call(client, 'POST', '/v1/connect/intentions', {
      SourceName: 'web',
      DestinationName: 'db',
      Action: 'allow',
    });
    expect(created.status).toBe(200);
    const exact = await call(client, 'PUT', '/v1/connect/intentions/exact?source=api&destination=db', {
      Action: 'deny',
    });
    expect(exact.status).toBe(200);
    expect((await call(client, 'PUT', '/v1/kv/app/one', 'v1', token.body.SecretID)).body).toBe(true);
    expect((await call(client, 'PUT', '/v1/kv/app/two', 'v2', token.body.SecretID)).body).toBe(true);
    expect((await call(client, 'DELETE', '/v1/kv/app/two', undefined, token.body.SecretID)).body).toBe(true);
    const caConfig = await call(client, 'GET', '/v1/connect/ca/configuration');
    const caPut = await call(client, 'PUT', '/v1/connect/ca/configuration', {
      Provider: caConfig.body.Provider,
      Config: { ...caConfig.body.Config, LeafCertTTL: '48h' },
    });
    expect(caPut.status).toBe(200);

    // Read-your-writes on the client, and the server committed them: no waiting on either.
    for (const agent of [client, server]) {
      expect((await call(agent, 'GET', `/v1/acl/policy/${policy.body.ID}`)).body.Name).toBe('kv-app');
      expect((await call(agent, 'GET', '/v1/acl/token/self', undefined, token.body.SecretID)).status).toBe(200);
      expect((await call(agent, 'GET', `/v1/connect/intentions/${created.body.ID}`)).body.Action).toBe('allow');
      expect((await call(agent, 'GET', '/v1/connect/intentions/exact?source=api&destination=db')).body.Action).toBe(
        'deny',
      );
      expect((await call(agent, 'GET', '/v1/kv/app/one?raw', undefined, token.body.SecretID)).body).toBe('v1');
      expect((await call(agent, 'GET', '/v1/kv/app/two', undefined, token.body.SecretID)).status).toBe(404);
      expect((await call(agent, 'GET', '/v1/connect/ca/configuration')).body.Config.LeafCertTTL).toBe('48h');
    }
    // Another client agent's view follows.
    await until(
      () => call(other, 'GET', `/v1/connect/intentions/${created.body.ID}`),
      (r) => r.status === 200,
    );
    expect((await call(other, 'GET', '/v1/connect/ca/configuration')).body.Config.LeafCertTTL).toBe('48h');
  });

  it('a write with a bad token is refused by the client, and forged straight into the mailbox, by the server: nothing is committed', async () => {
    const reader = await call(server, 'PUT', '/v1/acl/policy', {
      Name: 'kv-reader',
      Rules: 'key_prefix "" { policy = "read" }',
    });
    const readerToken = (await call(server, 'PUT', '/v1/acl/token', { Policies: [{ ID: reader.body.ID }] })).body as {
      AccessorID: string;
      SecretID: string;
    };
    await until(
      () => call(client, 'GET', '/v1/acl/token/self', undefined, readerToken.SecretID),
      (r) => r.status === 200,
    );
    expect(await call(client, 'PUT', '/v1/kv/forged/http', 'x', readerToken.SecretID)).toMatchObject({ status: 403 });

    // Past the client's own check: the mailbox written with the client agent's etcd user.
    const forger = openEtcdMailbox({
      etcd: asUser(rbac.etcd, clientUser('client-1')),
      prefix: PREFIX,
      log: silentLogger,
      mailbox: 'writes',
    });
    rbac.onStop(() => forger.close());
    const forge = async (method: string, target: string, token: string, body?: string): Promise<Answer> => {
      const key = replyKey();
      const [path, query = ''] = target.split('?');
      const answer = (await forger.request(
        {
          Method: method,
          Path: path,
          Query: query,
          Token: token,
          Namespace: '',
          ReplyKey: key.publicKey,
          ...(body === undefined ? {} : { Body: Buffer.from(body).toString('base64') }),
        },
        10_000,
      )) as { ok: boolean; Reply: Sealed };
      expect(answer.ok).toBe(true);
      const reply = key.open(answer.Reply) as { Status: number; Body?: string };
      return { status: reply.Status, body: Buffer.from(reply.Body ?? '', 'base64').toString('utf8') };
    };
    const refusals = [
      await forge('PUT', '/v1/kv/forged/none', '', 'x'),
      await forge('PUT', '/v1/kv/forged/reader', readerToken.SecretID, 'x'),
      await forge('PUT', '/v1/kv/forged/unknown', '00000000-1111-4222-8333-444444444444', 'x'),
      await forge('DELETE', '/v1/kv/app/one', readerToken.SecretID),
      await forge('PUT', '/v1/acl/token', readerToken.SecretID, '{}'),
      await forge('PUT', '/v1/connect/intentions/exact?source=x&destination=y', '', '{"Action":"allow"}'),
    ];
    expect(refusals.map((r) => r.status)).toEqual([403, 403, 403, 403, 403, 403]);
    expect(refusals[0]?.body).toBe(
      `Permission denied: anonymous token lacks permission 'key:write' on "forged/none". The anonymous token is used implicitly when a request does not specify a token.`,
    );
    expect(refusals[1]?.body).toBe(
      `Permission denied: token with AccessorID '${readerToken.AccessorID}' lacks permission 'key:write' on "forged/reader"`,
    );
    expect(refusals[2]?.body).toBe('ACL not found');
    // Only the state routes are reachable: an agent's own endpoints are not, whatever the token.
    expect((await forge('PUT', '/v1/agent/token/default', MANAGEMENT, '{"Token":"x"}')).status).toBe(404);
    expect((await forge('PUT', '/v1/agent/reload', MANAGEMENT)).status).toBe(404);
    // Nothing was committed.
    for (const key of ['forged/http', 'forged/none', 'forged/reader', 'forged/unknown'])
      expect((await call(server, 'GET', `/v1/kv/${key}`)).status).toBe(404);
    expect((await call(server, 'GET', '/v1/kv/app/one?raw')).body).toBe('v1');
    expect((await call(server, 'GET', '/v1/connect/intentions/exact?source=x&destination=y')).status).toBe(404);
    // With a token that may write, the same channel commits: the refusals were the tokens'.
    expect(await forge('PUT', '/v1/kv/forged/managed', MANAGEMENT, 'ok')).toEqual({ status: 200, body: 'true' });
  });

  it('with no server agent running, a write through a client agent answers 503 No cluster leader', async () => {
    await server.agent.close();
    const answers = [
      await call(client, 'PUT', '/v1/kv/app/late', 'x'),
      await call(client, 'PUT', '/v1/connect/intentions/exact?source=late&destination=db', { Action: 'allow' }),
    ];
    expect(answers).toEqual([
      { status: 503, body: 'No cluster leader' },
      { status: 503, body: 'No cluster leader' },
    ]);
    // Reads keep coming from the client's view and from etcd.
    expect((await call(client, 'GET', '/v1/kv/app/one?raw')).body).toBe('v1');
  });
});
