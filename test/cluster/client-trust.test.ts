// What a client agent is trusted with, on a cluster with etcd's RBAC on as docs/cluster-security.md
// sets it up. Token secrets: the shared view holds only hashes, the secrets sit where a client
// agent's etcd user cannot read, and still every token works on every agent and the token APIs show
// secrets through either agent (docs/decisions.md D23). Leaves: a server signs only for a caller
// whose token may write the service, whatever a client writes into etcd itself (docs/decisions.md D24).
// Agents run in process (createAgent) on a 3-member etcd, as svc-server-1 and each client agent's own user.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPairSync } from 'node:crypto';
import { silentLogger } from '../../src/core/log.js';
import { connectEtcd, openEtcdMailbox, type EtcdConnection } from '../../src/state/etcd/index.js';
import { asUser, clientUser } from '../support/etcd-rbac.js';
import { callAgent, startRbacCluster, until, type Answer, type InProcessAgent, type RbacCluster } from './support.js';

const PREFIX = '/svc/';
const INITIAL_MANAGEMENT = '6f1d2c3b-4a5e-4f60-8b7c-9d0e1f2a3b4c';
/** The bootstrap token's secret, once the first test has bootstrapped through the client agent. */
let management = '';
let rbac: RbacCluster;

const start = (name: string, server: boolean, initialManagement?: string): Promise<InProcessAgent> =>
  rbac.start(name, server, { initialManagement });
const call = (at: InProcessAgent, method: string, path: string, body?: unknown, token = management): Promise<Answer> =>
  callAgent(at, method, path, body, token);

/** Every key and value a client agent's etcd user may read under `prefix`, as the client reads them. */
async function everythingAClientReads(client: EtcdConnection, prefix: string): Promise<string[]> {
  const ranges: [string, string][] = [
    [`${prefix}data/`, `${prefix}meta0`],
    [`${prefix}bulk/`, `${prefix}bulk0`],
    [`${prefix}sign/responses/`, `${prefix}sign/responses0`],
    [`${prefix}sign/acl/responses/`, `${prefix}sign/acl/responses0`],
    [`${prefix}sign/writes/responses/`, `${prefix}sign/writes/responses0`],
  ];
  const out: string[] = [];
  for (const [from, to] of ranges) {
    const { kvs } = await client.rangeKeys(Buffer.from(from), Buffer.from(to), 5_000);
    for (const kv of kvs) out.push(`${kv.key} ${kv.value.toString('utf8')}`);
  }
  return out;
}

beforeAll(async () => {
  rbac = await startRbacCluster(PREFIX, ['client-1', 'client-2']);
}, 180_000);
afterAll(() => rbac?.stop());

describe('token secrets on a cluster with RBAC on', () => {
  let server: InProcessAgent;
  let client: InProcessAgent;
  let raw: EtcdConnection;

  beforeAll(async () => {
    server = await start('server-1', true);
    client = await start('client-1', false);
    raw = connectEtcd(asUser(rbac.etcd, clientUser('client-1')));
    rbac.onStop(() => raw.close());
  }, 60_000);

  it('bootstrap through a client agent: the secret works on both agents, the server shows it, and bootstrap is then done', async () => {
    const boot = await call(client, 'PUT', '/v1/acl/bootstrap', undefined, '');
    expect(boot.status).toBe(200);
    management = boot.body.SecretID;
    expect(boot.body.ID).toBe(management);
    for (const agent of [server, client]) {
      const self = await until(
        () => call(agent, 'GET', '/v1/acl/token/self'),
        (r) => r.status === 200,
      );
      expect(self.body).toMatchObject({ AccessorID: boot.body.AccessorID, SecretID: management });
    }
    expect((await call(server, 'GET', `/v1/acl/token/${boot.body.AccessorID}`)).body.SecretID).toBe(management);
    expect((await call(server, 'PUT', '/v1/acl/bootstrap', undefined, '')).status).toBe(403);
    expect((await call(client, 'PUT', '/v1/acl/bootstrap', undefined, '')).status).toBe(403);
    expect((await everythingAClientReads(raw, PREFIX)).filter((kv) => kv.includes(management))).toEqual([]);
  });

  it('initial_management of a server started later works on every agent and the server shows its secret; a client agent ignores the key', async () => {
    // As in Consul, the key is a server's: a client agent writes nothing (docs/decisions.md D25).
    const ignored = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
    const lateClient = await start('client-2', false, ignored);
    await start('server-2', true, INITIAL_MANAGEMENT);
    const self = await until(
      () => call(lateClient, 'GET', '/v1/acl/token/self', undefined, INITIAL_MANAGEMENT),
      (r) => r.status === 200,
    );
    expect(self.body.Description).toBe('Initial Management Token');
    const shown = await until(
      () => call(server, 'GET', `/v1/acl/token/${self.body.AccessorID}`),
      (r) => r.body.SecretID === INITIAL_MANAGEMENT,
    );
    expect(shown.status).toBe(200);
    expect((await call(client, 'GET', '/v1/acl/token/self', undefined, INITIAL_MANAGEMENT)).status).toBe(200);
    // The client agent started before the server with a key of its own: no such token anywhere.
    for (const agent of [server, client, lateClient])
      expect(await call(agent, 'GET', '/v1/acl/token/self', undefined, ignored)).toMatchObject({
        status: 403,
        body: 'ACL not found',
      });
    expect((await everythingAClientReads(raw, PREFIX)).filter((kv) => kv.includes(INITIAL_MANAGEMENT))).toEqual([]);
  });

  it('a client agent reads no secret: the view holds hashes, and etcd refuses it where the secrets are', async () => {
    const policy = await call(server, 'PUT', '/v1/acl/policy', {
      Name: 'web-writer',
      Rules: 'service "web" { policy = "write" }',
    });
    expect(policy.status).toBe(200);
    const onServer = await call(server, 'PUT', '/v1/acl/token', { Policies: [{ ID: policy.body.ID }] });
    const onClient = await call(client, 'PUT', '/v1/acl/token', { Policies: [{ ID: policy.body.ID }] });
    expect([onServer.status, onClient.status]).toEqual([200, 200]);
    const cloned = await call(client, 'PUT', `/v1/acl/token/${onServer.body.AccessorID}/clone`, {});
    expect(cloned.status).toBe(200);
    const secrets = [
      management,
      INITIAL_MANAGEMENT,
      onServer.body.SecretID,
      onClient.body.SecretID,
      cloned.body.SecretID,
    ] as string[];
    for (const secret of secrets) expect(secret).toMatch(/^[0-9a-f-]{36}$/);

    const readable = await everythingAClientReads(raw, PREFIX);
    expect(readable.some((kv) => kv.includes('/data/acl-tokens/'))).toBe(true);
    for (const secret of secrets) expect(readable.filter((kv) => kv.includes(secret))).toEqual([]);
    for (const kv of readable.filter((line) => line.includes('/data/acl-tokens/'))) {
      expect(kv).not.toContain('SecretID');
      expect(kv).toContain('SecretHash');
    }
    // Where the secrets are, etcd answers the client's user "permission denied".
    await expect(raw.rangePrefix(Buffer.from(`${PREFIX}private/acl/`), 5_000)).rejects.toThrow(/permission denied/);
    await expect(
      raw.getKey(Buffer.from(`${PREFIX}private/acl/secrets/${onClient.body.AccessorID}`), 5_000),
    ).rejects.toThrow(/permission denied/);
    await expect(raw.rangePrefix(Buffer.from(`${PREFIX}sign/acl/requests/`), 5_000)).rejects.toThrow(
      /permission denied/,
    );
    // The server's user reads them.
    const serverRaw = connectEtcd(asUser(rbac.etcd, 'svc-server-1'));
    rbac.onStop(() => serverRaw.close());
    const kept = await serverRaw.getKey(Buffer.from(`${PREFIX}private/acl/secrets/${onClient.body.AccessorID}`), 5_000);
    expect(JSON.parse(kept?.value.toString('utf8') ?? '{}')).toEqual({ SecretID: onClient.body.SecretID });
  });

  it('a token made through either agent works on both, and either agent shows its secret to acl:write', async () => {
    const made = {
      server: await call(server, 'PUT', '/v1/acl/token', { Description: 'on the server' }),
      client: await call(client, 'PUT', '/v1/acl/token', { Description: 'on the client' }),
    };
    for (const token of [made.server.body, made.client.body]) {
      for (const agent of [server, client]) {
        const self = await until(
          () => call(agent, 'GET', '/v1/acl/token/self', undefined, token.SecretID),
          (r) => r.status === 200,
        );
        expect(self.body).toMatchObject({ AccessorID: token.AccessorID, SecretID: token.SecretID });
        const read = await call(agent, 'GET', `/v1/acl/token/${token.AccessorID}`);
        expect(read.body).toMatchObject({ AccessorID: token.AccessorID, SecretID: token.SecretID });
      }
    }
    // Update and list through the client show the secrets the server keeps; without acl:write, `<hidden>`.
    const updated = await call(client, 'PUT', `/v1/acl/token/${made.server.body.AccessorID}`, {
      Description: 'renamed',
    });
    expect(updated.body).toMatchObject({ Description: 'renamed', SecretID: made.server.body.SecretID });
    const listed = await call(client, 'GET', '/v1/acl/tokens');
    const byAccessor = new Map(
      (listed.body as { AccessorID: string; SecretID: string }[]).map((t) => [t.AccessorID, t.SecretID]),
    );
    expect(byAccessor.get(made.server.body.AccessorID)).toBe(made.server.body.SecretID);
    expect(byAccessor.get(made.client.body.AccessorID)).toBe(made.client.body.SecretID);
    expect([...byAccessor.values()]).toContain(management);
    const reader = await call(server, 'PUT', '/v1/acl/policy', { Name: 'acl-reader', Rules: 'acl = "read"' });
    const readerToken = await call(server, 'PUT', '/v1/acl/token', { Policies: [{ ID: reader.body.ID }] });
    await until(
      () => call(client, 'GET', '/v1/acl/token/self', undefined, readerToken.body.SecretID),
      (r) => r.status === 200,
    );
    const hidden = await call(
      client,
      'GET',
      `/v1/acl/token/${made.server.body.AccessorID}`,
      undefined,
      readerToken.body.SecretID,
    );
    expect(hidden.body.SecretID).toBe('<hidden>');
    // The view's rows still hold no secret.
    const readable = await everythingAClientReads(raw, PREFIX);
    expect(
      readable.filter((kv) => kv.includes(made.server.body.SecretID) || kv.includes(made.client.body.SecretID)),
    ).toEqual([]);
  });

  it('a server refuses secret requests a client writes straight into etcd without the right to them', async () => {
    const reader = await call(server, 'PUT', '/v1/acl/policy', { Name: 'acl-reader-2', Rules: 'acl = "read"' });
    const readerToken = (await call(server, 'PUT', '/v1/acl/token', { Policies: [{ ID: reader.body.ID }] })).body as {
      AccessorID: string;
      SecretID: string;
    };
    await until(
      () => call(client, 'GET', '/v1/acl/token/self', undefined, readerToken.SecretID),
      (r) => r.status === 200,
    );
    const forger = openEtcdMailbox({
      etcd: asUser(rbac.etcd, clientUser('client-1')),
      prefix: PREFIX,
      log: silentLogger,
      mailbox: 'acl',
    });
    rbac.onStop(() => forger.close());
    const replyKey = generateKeyPairSync('x25519').publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
    // Showing secrets takes acl:write, checked on the server whatever the client let through.
    expect(
      await forger.request(
        { Kind: 'reveal', Token: readerToken.SecretID, AccessorIDs: [readerToken.AccessorID], ReplyKey: replyKey },
        10_000,
      ),
    ).toEqual({
      ok: false,
      code: 'ACL_PERMISSION_DENIED',
      kind: 'permission-denied',
      message: `Permission denied: token with AccessorID '${readerToken.AccessorID}' lacks permission 'acl:write'`,
    });
    // Recording a secret takes one that hashes to what the token's row holds.
    const keep = {
      Kind: 'keep',
      AccessorID: readerToken.AccessorID,
      SecretID: '00000000-1111-4222-8333-444444444444',
      Index: 1,
    };
    expect(await forger.request(keep, 10_000)).toMatchObject({ ok: false, code: 'ACL_SECRET_MISMATCH' });
    expect((await call(server, 'GET', `/v1/acl/token/${readerToken.AccessorID}`)).body.SecretID).toBe(
      readerToken.SecretID,
    );
  });

  it('a server signs a leaf only for a caller whose token may write the service, even when a client forges the request in etcd', async () => {
    const policy = await call(server, 'PUT', '/v1/acl/policy', {
      Name: 'api-writer',
      Rules: 'service "api" { policy = "write" }',
    });
    const apiToken = (await call(server, 'PUT', '/v1/acl/token', { Policies: [{ ID: policy.body.ID }] })).body as {
      AccessorID: string;
      SecretID: string;
    };
    await until(
      () => call(client, 'GET', '/v1/acl/token/self', undefined, apiToken.SecretID),
      (r) => r.status === 200,
    );
    // Through the client agent's API: a leaf for what the token may write, a refusal for the rest.
    const leaf = await call(client, 'GET', '/v1/agent/connect/ca/leaf/api', undefined, apiToken.SecretID);
    expect(leaf.status).toBe(200);
    expect(leaf.body.ServiceURI).toMatch(/\/svc\/api$/);
    expect((await call(client, 'GET', '/v1/agent/connect/ca/leaf/db', undefined, apiToken.SecretID)).status).toBe(403);

    // Straight into etcd with the client agent's own credentials, past its HTTP checks.
    const forger = openEtcdMailbox({
      etcd: asUser(rbac.etcd, clientUser('client-1')),
      prefix: PREFIX,
      log: silentLogger,
    });
    rbac.onStop(() => forger.close());
    const publicKey = generateKeyPairSync('ec', { namedCurve: 'P-256' })
      .publicKey.export({ type: 'spki', format: 'der' })
      .toString('base64');
    const ask = (service: string, token?: string): Promise<unknown> =>
      forger.request(
        {
          Namespace: 'default',
          Service: service,
          PublicKey: publicKey,
          Datacenter: 'dc1',
          Node: 'forger',
          ...(token === undefined ? {} : { Token: token }),
        },
        10_000,
      );
    expect(await ask('db')).toEqual({
      ok: false,
      code: 'ACL_PERMISSION_DENIED',
      kind: 'permission-denied',
      message: `Permission denied: anonymous token lacks permission 'service:write' on "db". The anonymous token is used implicitly when a request does not specify a token.`,
    });
    expect(await ask('db', apiToken.SecretID)).toEqual({
      ok: false,
      code: 'ACL_PERMISSION_DENIED',
      kind: 'permission-denied',
      message: `Permission denied: token with AccessorID '${apiToken.AccessorID}' lacks permission 'service:write' on "db"`,
    });
    expect(await ask('db', '00000000-1111-4222-8333-444444444444')).toMatchObject({ ok: false, code: 'ACL_NOT_FOUND' });
    // The same channel with a token that covers the service is signed: the refusals are the token's.
    expect(await ask('api', apiToken.SecretID)).toMatchObject({ ok: true, URI: expect.stringMatching(/\/svc\/api$/) });
    // And no client agent reads the tokens in other clients' requests.
    await expect(raw.rangePrefix(Buffer.from(`${PREFIX}sign/requests/`), 5_000)).rejects.toThrow(/permission denied/);
  });
});
