// A token row written before docs/decisions.md D23, when the shared view held each token's SecretID,
// keeps no secret readable by a client agent once the servers start: on a 3-member etcd with RBAC as
// docs/cluster-security.md sets it up, two servers starting at once move the secret into the private
// range and leave the hash in the view (src/acl/secret-migration.ts); the token still works on every
// agent and a server shows its secret. (etcd's history of the old row is the operator's to compact.)
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GLOBAL_MANAGEMENT_POLICY_ID } from '../../src/acl/builtin.js';
import { ACL_TOKENS } from '../../src/acl/model.js';
import { connectEtcd, type EtcdConnection } from '../../src/state/etcd/index.js';
import { asUser, clientUser } from '../support/etcd-rbac.js';
import { callAgent, startRbacCluster, type InProcessAgent, type RbacCluster } from './support.js';

const PREFIX = '/svc/';
const ACCESSOR = '5b4a3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d';
const SECRET = '9e8d7c6b-5a4f-4e3d-9c2b-1a0f9e8d7c6b';
const ROW_KEY = `${PREFIX}data/${ACL_TOKENS}/${ACCESSOR}`;

/** A management token's row as agents before docs/decisions.md D23 wrote it into the view: the secret itself. */
const OLD_ROW = {
  AccessorID: ACCESSOR,
  SecretID: SECRET,
  Description: 'written before D23',
  Policies: [{ ID: GLOBAL_MANAGEMENT_POLICY_ID }],
  ServiceIdentities: [],
  NodeIdentities: [],
  Local: false,
  CreateTime: '2026-01-01T00:00:00.000Z',
  Hash: 'old',
  Namespace: 'default',
};

let rbac: RbacCluster;
let root: EtcdConnection;
let asClient: EtcdConnection;
let agents: InProcessAgent[] = [];

beforeAll(async () => {
  rbac = await startRbacCluster(PREFIX, ['client-1']);
  root = connectEtcd(asUser(rbac.etcd, 'root'));
  asClient = connectEtcd(asUser(rbac.etcd, clientUser('client-1')));
  rbac.onStop(() => root.close());
  rbac.onStop(() => asClient.close());
  // Straight into etcd, as a commit of an older agent wrote it: the row and its table's marker.
  await root.txn(
    {
      compares: [],
      success: [
        { op: 'put', key: Buffer.from(ROW_KEY), value: Buffer.from(JSON.stringify(OLD_ROW)) },
        { op: 'put', key: Buffer.from(`${PREFIX}meta/tables/${ACL_TOKENS}`), value: Buffer.alloc(0) },
      ],
      failure: [],
    },
    5_000,
  );
  const servers = await Promise.all([rbac.start('server-1', true), rbac.start('server-2', true)]);
  agents = [...servers, await rbac.start('client-1', false)];
}, 180_000);
afterAll(() => rbac?.stop());

describe('token rows written before D23, on servers starting', () => {
  it('the row in etcd holds the hash and no SecretID', async () => {
    const kv = await root.getKey(Buffer.from(ROW_KEY), 5_000);
    const row = JSON.parse(kv?.value.toString('utf8') ?? '{}') as Record<string, unknown>;
    expect(row.SecretID).toBeUndefined();
    expect(row.SecretHash).toBe(createHash('sha256').update(SECRET).digest('base64'));
    expect(row).toMatchObject({ AccessorID: ACCESSOR, Description: 'written before D23' });
  });

  it("a client agent's etcd user reads the secret nowhere: not in the view, not in the private range", async () => {
    const { kvs } = await asClient.rangeKeys(Buffer.from(`${PREFIX}data/`), Buffer.from(`${PREFIX}meta0`), 5_000);
    expect(kvs.some((kv) => kv.key === ROW_KEY)).toBe(true);
    expect(kvs.filter((kv) => kv.value.toString('utf8').includes(SECRET)).map((kv) => kv.key)).toEqual([]);
    await expect(asClient.getKey(Buffer.from(`${PREFIX}private/acl/secrets/${ACCESSOR}`), 5_000)).rejects.toThrow(
      /permission denied/,
    );
  });

  it('the token authenticates on every agent, and a server shows its SecretID', async () => {
    for (const agent of agents) {
      const self = await callAgent(agent, 'GET', '/v1/acl/token/self', undefined, SECRET);
      expect(self.status).toBe(200);
      expect(self.body).toMatchObject({ AccessorID: ACCESSOR, SecretID: SECRET });
    }
    for (const server of agents.slice(0, 2)) {
      const read = await callAgent(server, 'GET', `/v1/acl/token/${ACCESSOR}`, undefined, SECRET);
      expect(read).toMatchObject({ status: 200, body: { AccessorID: ACCESSOR, SecretID: SECRET } });
    }
    // Through the client agent too, which asks a server for it.
    const viaClient = await callAgent(
      agents[2] as InProcessAgent,
      'GET',
      `/v1/acl/token/${ACCESSOR}`,
      undefined,
      SECRET,
    );
    expect(viaClient).toMatchObject({ status: 200, body: { AccessorID: ACCESSOR, SecretID: SECRET } });
  });
});
