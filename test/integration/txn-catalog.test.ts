// PUT /v1/txn's Node, Service, Check and Session ops on one agent, as Consul's api.Txn sends them
// (every TxnOp with its four kinds, the absent ones null) and as the npm `consul` client's
// transaction.create passes them on: Consul's results in order, one commit with the KV ops beside
// them, read back through /v1/catalog and /v1/health; 409 with every failing op's index and nothing
// applied; a session's delete freeing its key at once; ACLs per op (node:write, service:write,
// session:write), results the token may not read left out.
import Consul from 'consul';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from './support/agent-process.js';

const ROOT = 'b1a5ad0c-0000-4000-8000-000000000003';
const NODE_ID = '7d1f5a9e-2c3b-4d4e-8f5a-6b7c8d9e0f1a';
const b64 = (text: string): string => Buffer.from(text).toString('base64');

type Json = Record<string, unknown>;
interface TxnReply {
  Results: Json[] | null;
  Errors: { OpIndex: number; What: string }[] | null;
}

/** One op as Go's encoder writes api.TxnOp: the kinds it does not carry are null. */
const goOp = (kind: 'KV' | 'Node' | 'Service' | 'Check', op: Json): Json => ({
  KV: null,
  Node: null,
  Service: null,
  Check: null,
  [kind]: op,
});

/** api.Node as Go writes it. */
const apiNode = (name: string, fields: Json = {}): Json => ({
  ID: '',
  Node: name,
  Address: '',
  Datacenter: '',
  TaggedAddresses: null,
  Meta: null,
  CreateIndex: 0,
  ModifyIndex: 0,
  ...fields,
});

/** api.AgentService as Go writes it (its omitempty fields left out). */
const apiService = (fields: Json): Json => ({
  Kind: '',
  ID: '',
  Service: '',
  Tags: null,
  Meta: null,
  Port: 0,
  Address: '',
  Weights: { Passing: 0, Warning: 0 },
  EnableTagOverride: false,
  CreateIndex: 0,
  ModifyIndex: 0,
  ...fields,
});

/** api.HealthCheck as Go writes it, its Definition's durations as ReadableDuration text. */
const apiCheck = (fields: Json): Json => ({
  Node: '',
  CheckID: '',
  Name: '',
  Status: '',
  Notes: '',
  Output: '',
  ServiceID: '',
  ServiceName: '',
  ServiceTags: null,
  Type: '',
  ExposedPort: 0,
  Definition: {
    HTTP: '',
    Header: null,
    Method: '',
    Body: '',
    TLSServerName: '',
    TLSSkipVerify: false,
    TCP: '',
    TCPUseTLS: false,
    UDP: '',
    GRPC: '',
    OSService: '',
    GRPCUseTLS: false,
    Interval: '0s',
    Timeout: '0s',
    DeregisterCriticalServiceAfter: '0s',
  },
  CreateIndex: 0,
  ModifyIndex: 0,
  ...fields,
});

describe('catalog and session ops in transactions on one agent', () => {
  let agent: AgentProcess;
  let consul: Consul;

  const call = (method: string, path: string, body?: string, token = ROOT): Promise<Response> =>
    fetch(`${agent.url}${path}`, {
      method,
      ...(body === undefined ? {} : { body }),
      headers: { 'X-Svc-Token': token },
    });
  const get = async <T>(path: string): Promise<T> => (await (await call('GET', path)).json()) as T;
  const txn = async (
    ops: unknown,
    token = ROOT,
    query = '',
  ): Promise<{ status: number; body: TxnReply; headers: Headers }> => {
    const res = await call('PUT', `/v1/txn${query}`, JSON.stringify(ops), token);
    const text = await res.text();
    return { status: res.status, body: JSON.parse(text) as TxnReply, headers: res.headers };
  };
  const tokenWith = async (name: string, rules: string): Promise<string> => {
    expect((await call('PUT', '/v1/acl/policy', JSON.stringify({ Name: name, Rules: rules }))).status).toBe(200);
    const res = await call('PUT', '/v1/acl/token', JSON.stringify({ Policies: [{ Name: name }] }));
    return ((await res.json()) as { SecretID: string }).SecretID;
  };

  beforeAll(async () => {
    agent = await startAgent({
      args: ['-node', 'txn-agent'],
      config: { acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: ROOT } } },
    });
    consul = new Consul({ host: '127.0.0.1', port: agent.port, defaults: { token: ROOT } });
  });
  afterAll(() => agent?.stop());

  it('npm consul: a node, its service, its check and a key in one commit, read back through the catalog', async () => {
    const create = consul.transaction.create.bind(consul.transaction) as unknown as (
      ops: Json[],
      options: object,
    ) => Promise<TxnReply>;
    const reply = await create(
      [
        {
          Node: {
            Verb: 'set',
            Node: { ID: NODE_ID, Node: 'web-node', Address: '10.1.0.5', Meta: { rack: 'r1' } },
          },
        },
        {
          Service: {
            Verb: 'set',
            Node: 'web-node',
            Service: { ID: 'web-1', Service: 'web', Tags: ['v1'], Port: 8080, Meta: { team: 'a' } },
          },
        },
        {
          Check: {
            Verb: 'set',
            Check: {
              Node: 'web-node',
              CheckID: 'web-1-alive',
              Name: 'web alive',
              Status: 'passing',
              ServiceID: 'web-1',
              Definition: { HTTP: 'http://10.1.0.5:8080/health', Interval: '10s' },
            },
          },
        },
        { KV: { Verb: 'set', Key: 'deploy/web', Value: b64('v1') } },
      ],
      {},
    );
    expect(reply.Errors).toBeNull();
    const results = reply.Results ?? [];
    expect(results).toHaveLength(4);
    const [node, service, check, kv] = results as [Json, Json, Json, Json];
    expect(node).toEqual({
      Node: {
        ID: NODE_ID,
        Node: 'web-node',
        Address: '10.1.0.5',
        Datacenter: 'dc1',
        TaggedAddresses: {},
        Meta: { rack: 'r1' },
        CreateIndex: expect.any(Number),
        ModifyIndex: expect.any(Number),
      },
    });
    const index = (node.Node as Json).ModifyIndex;
    expect(service).toEqual({
      Service: {
        ID: 'web-1',
        Service: 'web',
        Tags: ['v1'],
        Address: '',
        Meta: { team: 'a' },
        Port: 8080,
        Weights: { Passing: 1, Warning: 1 },
        EnableTagOverride: false,
        Proxy: { Mode: '', MeshGateway: {}, Expose: {} },
        Connect: {},
        PeerName: '',
        CreateIndex: index,
        ModifyIndex: index,
      },
    });
    expect(check).toMatchObject({
      Check: {
        Node: 'web-node',
        CheckID: 'web-1-alive',
        Status: 'passing',
        ServiceName: 'web',
        ServiceTags: ['v1'],
        Definition: { HTTP: 'http://10.1.0.5:8080/health', Interval: '10s' },
        ModifyIndex: index,
      },
    });
    expect(kv).toMatchObject({ KV: { Key: 'deploy/web', Value: null, ModifyIndex: index } });

    const instances = await get<Json[]>('/v1/catalog/service/web');
    expect(instances).toMatchObject([
      { Node: 'web-node', Address: '10.1.0.5', ServiceID: 'web-1', ServicePort: 8080, ModifyIndex: index },
    ]);
    const healthy = await get<{ Checks: Json[] }[]>('/v1/health/service/web?passing');
    expect(healthy).toHaveLength(1);
    expect(healthy[0]?.Checks.map((c) => c.CheckID)).toEqual(['web-1-alive']);
    expect((await get<{ Node: Json }>('/v1/catalog/node/web-node')).Node).toMatchObject({ ID: NODE_ID });
  });

  it("reads with api.Txn's shapes: a read-only transaction carries the index headers", async () => {
    const read = await txn(
      [
        goOp('Node', { Verb: 'get', Node: apiNode('web-node') }),
        goOp('Service', { Verb: 'get', Node: 'web-node', Service: apiService({ ID: 'web-1' }) }),
        goOp('Check', { Verb: 'get', Check: apiCheck({ Node: 'web-node', CheckID: 'web-1-alive' }) }),
        goOp('Node', { Verb: 'get', Node: apiNode('', { ID: NODE_ID.toUpperCase() }) }),
      ],
      ROOT,
      '?stale',
    );
    expect(read.status).toBe(200);
    expect(read.body.Results?.map((r) => Object.keys(r))).toEqual([['Node'], ['Service'], ['Check'], ['Node']]);
    expect(read.body.Results?.[3]).toMatchObject({ Node: { Node: 'web-node' } });
    expect(Number(read.headers.get('X-Svc-Index'))).toBeGreaterThan(0);
    expect(read.headers.get('X-Svc-KnownLeader')).toBe('true');
  });

  it('a failing op applies nothing: 409 with every failing op, the catalog as it was', async () => {
    const failed = await txn([
      goOp('Service', {
        Verb: 'set',
        Node: 'web-node',
        Service: apiService({ ID: 'web-2', Service: 'web', Port: 81 }),
      }),
      goOp('Node', { Verb: 'set', Node: apiNode('other-node', { Address: '10.1.0.6' }) }),
      goOp('Check', {
        Verb: 'set',
        Check: apiCheck({ Node: 'web-node', CheckID: 'c', ServiceID: 'nope', ServiceName: 'nope' }),
      }),
      goOp('Node', { Verb: 'cas', Node: apiNode('web-node', { ModifyIndex: 1 }) }),
      goOp('KV', { Verb: 'set', Key: 'deploy/web', Value: b64('v2') }),
      goOp('Service', { Verb: 'get', Node: 'web-node', Service: apiService({ ID: 'web-9' }) }),
    ]);
    expect(failed).toMatchObject({
      status: 409,
      body: {
        Results: null,
        Errors: [
          { OpIndex: 2, What: 'Missing service registration' },
          { OpIndex: 3, What: 'failed to set node "web-node", index is stale' },
          { OpIndex: 5, What: 'service "web-9" on node "web-node" doesn\'t exist' },
        ],
      },
    });
    expect(await get<Json[]>('/v1/catalog/service/web')).toHaveLength(1);
    expect(await get('/v1/catalog/node/other-node')).toBeNull();
    expect(await (await call('GET', '/v1/kv/deploy/web?raw')).text()).toBe('v1');
  });

  it('cas by ModifyIndex, then deletes: a service with its checks, then the node', async () => {
    const { Node: node } = await get<{ Node: { ModifyIndex: number } }>('/v1/catalog/node/web-node');
    const moved = await txn([
      goOp('Node', {
        Verb: 'cas',
        Node: apiNode('web-node', { ID: NODE_ID, Address: '10.1.0.7', ModifyIndex: node.ModifyIndex }),
      }),
    ]);
    expect(moved.status).toBe(200);
    expect(moved.body.Results?.[0]).toMatchObject({ Node: { Address: '10.1.0.7' } });

    const service = (await get<{ ModifyIndex: number }[]>('/v1/catalog/service/web'))[0];
    const deleted = await txn([
      goOp('Service', {
        Verb: 'delete-cas',
        Node: 'web-node',
        Service: apiService({ ID: 'web-1', Service: 'web', ModifyIndex: service?.ModifyIndex }),
      }),
    ]);
    expect(deleted).toMatchObject({ status: 200, body: { Results: [], Errors: null } });
    expect(await get<Json[]>('/v1/catalog/service/web')).toEqual([]);
    expect(await get<Json[]>('/v1/health/node/web-node')).toEqual([]);

    expect((await txn([goOp('Node', { Verb: 'delete', Node: apiNode('web-node') })])).status).toBe(200);
    expect(await get('/v1/catalog/node/web-node')).toBeNull();
  });

  it('a session delete frees its key in the same commit; a node delete ends the sessions on it', async () => {
    const create = async (body: Json): Promise<string> => {
      const res = await call('PUT', '/v1/session/create', JSON.stringify(body));
      expect(res.status).toBe(200);
      return ((await res.json()) as { ID: string }).ID;
    };
    const session = await create({ LockDelay: '0s' });
    expect((await call('PUT', `/v1/kv/leader?acquire=${session}`, 'me')).status).toBe(200);
    const ended = await txn([
      { Session: { Verb: 'delete', Session: { ID: session } } },
      goOp('KV', { Verb: 'get', Key: 'leader' }),
    ]);
    expect(ended.status).toBe(200);
    expect(ended.body.Results).toEqual([{ KV: expect.objectContaining({ Key: 'leader', LockIndex: 1 }) }]);
    expect(ended.body.Results?.[0]).not.toHaveProperty('KV.Session');
    expect(await get<Json[]>(`/v1/session/info/${session}`)).toEqual([]);
    expect(await txn([{ Session: { Verb: 'delete', Session: { ID: session } } }])).toMatchObject({
      status: 409,
      body: { Errors: [{ OpIndex: 0, What: 'failed to delete session: failed deleting session: not found' }] },
    });

    // A session on a node of its own, which a transaction deletes: the session ends with it.
    expect(
      (await txn([goOp('Node', { Verb: 'set', Node: apiNode('batch-node', { Address: '10.1.0.8' }) })])).status,
    ).toBe(200);
    const onNode = await create({ Node: 'batch-node', Checks: [], LockDelay: '0s' });
    const info = await call('GET', `/v1/session/info/${onNode}`);
    const index = info.headers.get('X-Svc-Index');
    await info.arrayBuffer();
    expect((await txn([goOp('Node', { Verb: 'delete', Node: apiNode('batch-node') })])).status).toBe(200);
    for (let i = 0; i < 20; i++) {
      const now = await get<Json[]>(`/v1/session/info/${onNode}?index=${index}&wait=5s`);
      if (now.length === 0) break;
    }
    expect(await get<Json[]>(`/v1/session/info/${onNode}`)).toEqual([]);
  });

  it('checks each op against the token: node:write, service:write, session:write; nothing applies', async () => {
    expect(
      (await txn([goOp('Node', { Verb: 'set', Node: apiNode('acl-node', { Address: '10.1.0.9' }) })])).status,
    ).toBe(200);
    const token = await tokenWith(
      'txn-web',
      'service "web" { policy = "write" } node "acl-node" { policy = "read" } session "acl-node" { policy = "read" }',
    );
    const session = (
      (await (await call('PUT', '/v1/session/create', JSON.stringify({ Node: 'acl-node', Checks: [] }))).json()) as {
        ID: string;
      }
    ).ID;
    const denied = await txn(
      [
        goOp('Service', { Verb: 'set', Node: 'acl-node', Service: apiService({ Service: 'web', Port: 80 }) }),
        goOp('Node', { Verb: 'set', Node: apiNode('acl-node', { Address: '10.1.0.10' }) }),
        goOp('Service', { Verb: 'set', Node: 'acl-node', Service: apiService({ Service: 'db', Port: 5432 }) }),
        goOp('Check', { Verb: 'set', Check: apiCheck({ Node: 'acl-node', CheckID: 'node-check' }) }),
        { Session: { Verb: 'delete', Session: { ID: session } } },
      ],
      token,
    );
    expect(denied).toMatchObject({
      status: 409,
      body: {
        Results: null,
        Errors: [
          { OpIndex: 1, What: 'Permission denied' },
          { OpIndex: 2, What: 'Permission denied' },
          { OpIndex: 3, What: 'Permission denied' },
          { OpIndex: 4, What: 'Permission denied' },
        ],
      },
    });
    expect(await get<Json[]>('/v1/catalog/service/web')).toEqual([]);
    expect(await get<Json[]>(`/v1/session/info/${session}`)).toHaveLength(1);

    const allowed = await txn(
      [
        goOp('Service', { Verb: 'set', Node: 'acl-node', Service: apiService({ Service: 'web', Port: 80 }) }),
        goOp('Check', {
          Verb: 'set',
          Check: apiCheck({ Node: 'acl-node', CheckID: 'web-check', ServiceID: 'web', Status: 'passing' }),
        }),
      ],
      token,
    );
    expect(allowed.status).toBe(200);
    expect(allowed.body.Results?.map((r) => Object.keys(r)[0])).toEqual(['Service', 'Check']);
    expect(await get<Json[]>('/v1/catalog/service/web')).toHaveLength(1);
  });

  it('leaves out the results a token may not read, and says so on a read-only transaction', async () => {
    const token = await tokenWith('txn-web-read', 'service "web" { policy = "read" }');
    const read = await txn(
      [
        goOp('Node', { Verb: 'get', Node: apiNode('acl-node') }),
        goOp('Service', { Verb: 'get', Node: 'acl-node', Service: apiService({ ID: 'web' }) }),
        goOp('Check', { Verb: 'get', Check: apiCheck({ Node: 'acl-node', CheckID: 'web-check' }) }),
      ],
      token,
    );
    expect(read.status).toBe(200);
    expect(read.body.Results).toEqual([{ Service: expect.objectContaining({ ID: 'web', Service: 'web' }) }]);
    expect(read.headers.get('X-Svc-Results-Filtered-By-ACLs')).toBe('true');
  });
});
