// Node, Service and Check ops of a transaction (src/txn/catalog-play.ts through KvTxn) on an
// in-memory embedded store: Consul's verbs, results and error texts (agent/consul/state/txn.go),
// the catalog's own write plan (the same rows, by-name rows and index rows as /v1/catalog/register
// writes), one commit for the whole transaction and nothing of a failing one, a play again when a
// concurrent write met its guard, and Consul's pre-check: node:write, service:write, a check's
// binding, results left out that the token may not read.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Catalog } from '../../../src/catalog/catalog.js';
import {
  CATALOG_BY_SERVICE,
  CATALOG_CHECKS,
  CATALOG_INDEX,
  CATALOG_NODES,
  CATALOG_SERVICES,
} from '../../../src/catalog/model.js';
import type { CheckInput, ServiceInput } from '../../../src/catalog/register.js';
import { FakeClock } from '../../../src/core/clock.js';
import { silentLogger } from '../../../src/core/log.js';
import { KV_TABLE } from '../../../src/kv/entries.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../../src/state/embedded/index.js';
import type { WriteOp } from '../../../src/state/types.js';
import { KvTxn } from '../../../src/txn/kv-txn.js';
import type { NodeInput, TxnAuthorizer, TxnOp, TxnOutcome } from '../../../src/txn/ops.js';
import { everyone, identityWith } from '../../support/identities.js';

const ID = '3f2a1c4e-5b6d-4e7f-8a9b-0c1d2e3f4a5b';
const node = (name: string, fields: Partial<NodeInput> = {}): NodeInput => ({
  ID: '',
  Node: name,
  Address: '10.0.0.1',
  Datacenter: '',
  TaggedAddresses: {},
  Meta: {},
  ModifyIndex: 0,
  ...fields,
});
const nodeOp = (verb: string, input: NodeInput): TxnOp => ({ type: 'Node', verb, node: input });
const serviceOp = (verb: string, on: string, service: ServiceInput, index = 0): TxnOp => ({
  type: 'Service',
  verb,
  node: on,
  service,
  index,
});
const checkOp = (verb: string, check: CheckInput, index = 0): TxnOp => ({ type: 'Check', verb, check, index });
const kvSet = (key: string, text: string): TxnOp => ({
  type: 'KV',
  verb: 'set',
  key,
  value: { Flags: 0, Value: Buffer.from(text).toString('base64') },
  index: 0,
  session: '',
});

type Results = Extract<TxnOutcome, { results: unknown }>;

describe('catalog ops of a transaction', () => {
  let store: EmbeddedStore;
  let txn: KvTxn;
  let catalog: Catalog;
  beforeEach(async () => {
    store = await openEmbeddedStore({ log: silentLogger });
    txn = new KvTxn(store, new FakeClock(1_000_000), { datacenter: 'dc1' });
    catalog = new Catalog(store, 'dc1');
  });
  afterEach(() => store.close());

  const run = (ops: TxnOp[], authorizer: TxnAuthorizer = everyone.authorizer): Promise<TxnOutcome> =>
    txn.run(ops, 'consistent', authorizer);
  const ok = async (ops: TxnOp[], authorizer?: TxnAuthorizer): Promise<Results> => {
    const outcome = await run(ops, authorizer);
    if ('errors' in outcome) throw new Error(JSON.stringify(outcome.errors));
    return outcome;
  };
  const errorsOf = async (ops: TxnOp[], authorizer?: TxnAuthorizer) => {
    const outcome = await run(ops, authorizer);
    return 'errors' in outcome ? outcome.errors : [];
  };
  /** Every catalog row (values only), by table, for comparing two stores. */
  const rowsOf = (s: EmbeddedStore) =>
    Object.fromEntries(
      [CATALOG_NODES, CATALOG_SERVICES, CATALOG_CHECKS, CATALOG_BY_SERVICE, CATALOG_INDEX].map((table) => [
        table,
        s.list(table, '').map((row) => [row.key, row.value]),
      ]),
    );

  describe('Node verbs', () => {
    it('sets a node and reads it back in the same transaction, as Consul renders a Node', async () => {
      const before = store.index;
      const { results, index } = await ok([
        nodeOp('set', node('n1', { ID, Meta: { rack: 'r1' }, TaggedAddresses: { lan: '10.0.0.1' } })),
        nodeOp('get', node('n1')),
      ]);
      expect(index).toBe(before + 1);
      const expected = {
        ID,
        Node: 'n1',
        Address: '10.0.0.1',
        Datacenter: 'dc1',
        TaggedAddresses: { lan: '10.0.0.1' },
        Meta: { rack: 'r1' },
        CreateIndex: index,
        ModifyIndex: index,
      };
      expect(results).toEqual([{ Node: expected }, { Node: expected }]);
      expect(store.get(CATALOG_NODES, 'n1')?.value).toMatchObject({ ID, Datacenter: 'dc1' });
    });

    it('gets a node by its ID, and says which one does not exist', async () => {
      await ok([nodeOp('set', node('n1', { ID }))]);
      const { results } = await ok([nodeOp('get', node('', { ID: ID.toUpperCase() }))]);
      expect(results).toMatchObject([{ Node: { Node: 'n1', ID } }]);
      expect(await errorsOf([nodeOp('get', node('n2'))])).toEqual([{ OpIndex: 0, What: 'node "n2" doesn\'t exist' }]);
    });

    it('cas: 0 only for a new node, else only at its ModifyIndex; delete-cas likewise, a missing node stale', async () => {
      const created = await ok([nodeOp('cas', node('n1'))]);
      const index = created.index;
      expect(await errorsOf([nodeOp('cas', node('n1'))])).toEqual([
        { OpIndex: 0, What: 'failed to set node "n1", index is stale' },
      ]);
      expect(await errorsOf([nodeOp('cas', node('n1', { ModifyIndex: index + 5, Address: '10.0.0.2' }))])).toEqual([
        { OpIndex: 0, What: 'failed to set node "n1", index is stale' },
      ]);
      const moved = await ok([nodeOp('cas', node('n1', { ModifyIndex: index, Address: '10.0.0.2' }))]);
      expect(moved.results).toMatchObject([
        { Node: { Address: '10.0.0.2', CreateIndex: index, ModifyIndex: moved.index } },
      ]);
      expect(await errorsOf([nodeOp('delete-cas', node('n1', { ModifyIndex: index }))])).toEqual([
        { OpIndex: 0, What: 'failed to delete node "n1", index is stale' },
      ]);
      expect(await errorsOf([nodeOp('delete-cas', node('gone', { ModifyIndex: 0 }))])).toEqual([
        { OpIndex: 0, What: 'failed to delete node "gone", index is stale' },
      ]);
      const deleted = await ok([nodeOp('delete-cas', node('n1', { ModifyIndex: moved.index }))]);
      expect(deleted.results).toEqual([]);
      expect(store.get(CATALOG_NODES, 'n1')).toBeUndefined();
    });

    it('a set that changes nothing writes nothing and shows the indexes it has', async () => {
      const first = await ok([nodeOp('set', node('n1'))]);
      const again = await ok([nodeOp('set', node('n1'))]);
      expect(again.results).toMatchObject([{ Node: { CreateIndex: first.index, ModifyIndex: first.index } }]);
      expect(store.index).toBe(first.index);
    });

    it('delete takes the node with its services and checks; a missing node is no error', async () => {
      await ok([
        nodeOp('set', node('n1')),
        serviceOp('set', 'n1', { Service: 'web', Port: 80 }),
        checkOp('set', { Node: 'n1', CheckID: 'web-alive', ServiceID: 'web', Status: 'passing' }),
      ]);
      await ok([nodeOp('delete', node('n1')), nodeOp('delete', node('never'))]);
      expect(store.list(CATALOG_SERVICES, '')).toEqual([]);
      expect(store.list(CATALOG_CHECKS, '')).toEqual([]);
      expect(store.list(CATALOG_BY_SERVICE, '')).toEqual([]);
    });

    it('refuses a node without a name, a bad ID, another datacenter, an unknown verb', async () => {
      expect(
        await errorsOf([
          nodeOp('set', node('')),
          nodeOp('set', node('n1', { ID: 'nope' })),
          nodeOp('set', node('n1', { ID: `${ID.slice(0, 35)}x` })),
          nodeOp('frob', node('n1')),
        ]),
      ).toEqual([
        { OpIndex: 0, What: 'Must provide node' },
        { OpIndex: 1, What: 'Bad node ID: uuid string is wrong length' },
        { OpIndex: 2, What: 'Bad node ID: uuid is improperly formatted' },
        { OpIndex: 3, What: 'unknown node operation: frob' },
      ]);
      expect(await errorsOf([nodeOp('set', node('n1', { Datacenter: 'dc9' }))])).toEqual([
        { OpIndex: 0, What: 'No path to datacenter' },
      ]);
      expect((await ok([nodeOp('set', node('n1', { Datacenter: 'dc1' }))])).results).toHaveLength(1);
    });

    it('without a datacenter given, takes the one the catalog nodes carry', async () => {
      await catalog.registerSelf('self', { ID: '', Address: '10.0.0.9', TaggedAddresses: {}, Meta: {} });
      const bare = new KvTxn(store, new FakeClock(0));
      const outcome = await bare.run([nodeOp('set', node('n1'))], 'consistent', everyone.authorizer);
      expect(outcome).toMatchObject({ results: [{ Node: { Datacenter: 'dc1' } }] });
    });
  });

  describe('Service verbs', () => {
    it('writes what /v1/catalog/register writes: the rows, the by-service rows, the index rows', async () => {
      const other = await openEmbeddedStore({ log: silentLogger });
      try {
        const reg = { Datacenter: '', ID: '', Node: 'n1', Address: '10.0.0.1', TaggedAddresses: {}, NodeMeta: {} };
        const service: ServiceInput = { ID: 'web-1', Service: 'web', Tags: ['v1'], Port: 8080, Meta: { a: 'b' } };
        await new Catalog(other, 'dc1').register(
          { ...reg, Service: service, Checks: [], SkipNodeUpdate: false },
          everyone,
        );
        await new Catalog(other, 'dc1').register(
          {
            ...reg,
            Checks: [{ CheckID: 'web-alive', ServiceID: 'web-1', Status: 'passing', Output: 'ok' }],
            SkipNodeUpdate: true,
          },
          everyone,
        );
        await ok([
          nodeOp('set', node('n1')),
          serviceOp('set', 'n1', service),
          checkOp('set', { Node: 'n1', CheckID: 'web-alive', ServiceID: 'web-1', Status: 'passing', Output: 'ok' }),
        ]);
        expect(rowsOf(store)).toEqual(rowsOf(other));
      } finally {
        await other.close();
      }
    });

    it('sets, reads and deletes a service; its ID defaults to its name; its checks go with it', async () => {
      const { results, index } = await ok([
        nodeOp('set', node('n1')),
        serviceOp('set', 'n1', { Service: 'web', Port: 80, Tags: ['a'] }),
        serviceOp('get', 'n1', { ID: 'web' }),
        checkOp('set', { Node: 'n1', CheckID: 'c', ServiceID: 'web' }),
      ]);
      const service = {
        ID: 'web',
        Service: 'web',
        Tags: ['a'],
        Address: '',
        Meta: {},
        Port: 80,
        Weights: { Passing: 1, Warning: 1 },
        EnableTagOverride: false,
        Proxy: { Mode: '', MeshGateway: {}, Expose: {} },
        Connect: {},
        PeerName: '',
        CreateIndex: index,
        ModifyIndex: index,
      };
      expect(results.slice(1, 3)).toEqual([{ Service: service }, { Service: service }]);
      await ok([serviceOp('delete', 'n1', { Service: 'web' })]);
      expect(store.list(CATALOG_SERVICES, '')).toEqual([]);
      expect(store.list(CATALOG_CHECKS, '')).toEqual([]);
    });

    it("the pre-check's refusals come alone, as Consul's Txn.preCheck: nothing is played", async () => {
      await ok([nodeOp('set', node('n1')), serviceOp('set', 'n1', { Service: 'web' })]);
      expect(
        await errorsOf([
          serviceOp('set', 'n2', { Service: 'web' }),
          serviceOp('set', 'n1', { ID: 'x' }),
          serviceOp('frob', 'n1', { Service: 'web' }),
        ]),
      ).toEqual([
        { OpIndex: 1, What: 'Must provide service name with ID "x"' },
        { OpIndex: 2, What: 'unknown service operation: frob' },
      ]);
    });

    it("lists every failing op of the play, in Consul's texts", async () => {
      await ok([nodeOp('set', node('n1')), serviceOp('set', 'n1', { Service: 'web' })]);
      const web = store.get(CATALOG_SERVICES, 'n1/web');
      expect(
        await errorsOf([
          serviceOp('set', 'n2', { Service: 'web' }),
          serviceOp('get', 'n1', { ID: 'db' }),
          serviceOp('cas', 'n1', { Service: 'web' }, 0),
          serviceOp('cas', 'n1', { Service: 'db' }, 7),
          serviceOp('delete-cas', 'n1', { Service: 'db' }, 0),
          serviceOp('delete-cas', 'n1', { Service: 'web' }, (web?.modifyIndex ?? 0) + 1),
          serviceOp('cas', 'n1', { Service: 'web' }, web?.modifyIndex ?? 0),
        ]),
      ).toEqual([
        { OpIndex: 0, What: 'Missing node registration' },
        { OpIndex: 1, What: 'service "db" on node "n1" doesn\'t exist' },
        { OpIndex: 2, What: 'failed to set service "web" on node "n1", index is stale' },
        { OpIndex: 3, What: 'failed to set service "db" on node "n1", index is stale' },
        { OpIndex: 4, What: 'failed to delete service "db" on node "n1", index is stale' },
        { OpIndex: 5, What: 'failed to delete service "web" on node "n1", index is stale' },
      ]);
    });

    it('a cas after a set in the same transaction is stale: the set has no index yet', async () => {
      await ok([nodeOp('set', node('n1')), serviceOp('set', 'n1', { Service: 'web' })]);
      const index = store.get(CATALOG_SERVICES, 'n1/web')?.modifyIndex ?? 0;
      expect(
        await errorsOf([
          serviceOp('cas', 'n1', { Service: 'web', Port: 1 }, index),
          serviceOp('cas', 'n1', { Service: 'web', Port: 2 }, index),
        ]),
      ).toEqual([{ OpIndex: 1, What: 'failed to set service "web" on node "n1", index is stale' }]);
    });
  });

  describe('Check verbs', () => {
    beforeEach(async () => {
      await ok([nodeOp('set', node('n1')), serviceOp('set', 'n1', { Service: 'web', Tags: ['t'] })]);
    });

    it("takes its service's name and tags, its ID from its name, critical by default", async () => {
      const { results, index } = await ok([
        checkOp('set', { Node: 'n1', Name: 'web-alive', ServiceID: 'web', ServiceName: 'ignored' }),
        checkOp('get', { Node: 'n1', CheckID: 'web-alive' }),
      ]);
      const check = {
        Node: 'n1',
        CheckID: 'web-alive',
        Name: 'web-alive',
        Status: 'critical',
        Notes: '',
        Output: '',
        ServiceID: 'web',
        ServiceName: 'web',
        ServiceTags: ['t'],
        Type: '',
        Interval: '',
        Timeout: '',
        ExposedPort: 0,
        Definition: {},
        CreateIndex: index,
        ModifyIndex: index,
      };
      expect(results).toEqual([{ Check: check }, { Check: check }]);
    });

    it("Consul's texts: a missing node, a missing service, a missing check, stale cas and delete-cas", async () => {
      await ok([checkOp('set', { Node: 'n1', CheckID: 'c1', Status: 'passing' })]);
      const c1 = store.get(CATALOG_CHECKS, 'n1/c1')?.modifyIndex ?? 0;
      expect(
        await errorsOf([
          checkOp('set', { Node: 'n9', CheckID: 'c' }),
          checkOp('set', { Node: 'n1', CheckID: 'c', ServiceID: 'db', ServiceName: 'db' }),
          checkOp('get', { Node: 'n1', CheckID: 'nope' }),
          checkOp('cas', { Node: 'n1', CheckID: 'c1' }, 0),
          checkOp('cas', { Node: 'n1', CheckID: 'c2' }, c1),
          checkOp('delete-cas', { Node: 'n1', CheckID: 'c2' }, 0),
          checkOp('delete-cas', { Node: 'n1', CheckID: 'c1' }, c1 + 1),
          checkOp('set', { Node: 'n1', CheckID: 'c3', Status: 'bad' as never }),
        ]),
      ).toEqual([
        { OpIndex: 0, What: 'Missing node registration' },
        { OpIndex: 1, What: 'Missing service registration' },
        { OpIndex: 2, What: 'check "nope" on node "n1" doesn\'t exist' },
        { OpIndex: 3, What: 'failed to set check "c1" on node "n1", index is stale' },
        { OpIndex: 4, What: 'failed to set check "c2" on node "n1", index is stale' },
        { OpIndex: 5, What: 'failed to delete check "c2" on node "n1", index is stale' },
        { OpIndex: 6, What: 'failed to delete check "c1" on node "n1", index is stale' },
        { OpIndex: 7, What: 'Invalid check status "bad"' },
      ]);
      const moved = await ok([checkOp('cas', { Node: 'n1', CheckID: 'c1', Status: 'warning' }, c1)]);
      expect(moved.results).toMatchObject([{ Check: { Status: 'warning', ModifyIndex: moved.index } }]);
      await ok([
        checkOp('delete-cas', { Node: 'n1', CheckID: 'c1' }, moved.index),
        checkOp('delete', { Node: 'n1', CheckID: 'x' }),
      ]);
      expect(store.get(CATALOG_CHECKS, 'n1/c1')).toBeUndefined();
    });
  });

  describe('one commit', () => {
    it('KV and catalog ops together: one commit, every result at its index', async () => {
      const before = store.index;
      const { results, index } = await ok([
        kvSet('app/config', 'v1'),
        nodeOp('set', node('n1')),
        serviceOp('set', 'n1', { Service: 'web' }),
      ]);
      expect(index).toBe(before + 1);
      expect(results).toMatchObject([
        { KV: { Key: 'app/config', ModifyIndex: index } },
        { Node: { ModifyIndex: index } },
        { Service: { ModifyIndex: index } },
      ]);
      expect(store.get(CATALOG_INDEX, 'n/n1')?.modifyIndex).toBe(index);
    });

    it('a failing op applies nothing, KV or catalog', async () => {
      const before = store.index;
      const errors = await errorsOf([
        kvSet('app/config', 'v1'),
        nodeOp('set', node('n1')),
        serviceOp('set', 'n1', { Service: 'web' }),
        checkOp('set', { Node: 'n1', CheckID: 'c', ServiceID: 'db', ServiceName: 'db' }),
      ]);
      expect(errors).toEqual([{ OpIndex: 3, What: 'Missing service registration' }]);
      expect(store.index).toBe(before);
      expect(store.list(CATALOG_NODES, '')).toEqual([]);
      expect((await store.read({ table: KV_TABLE, key: 'app/config' }, 'consistent')).rows).toEqual([]);
    });

    it('a read-only transaction commits nothing and answers at the current index', async () => {
      await ok([nodeOp('set', node('n1'))]);
      const index = store.index;
      const read = await ok([nodeOp('get', node('n1'))]);
      expect(read.index).toBe(index);
      expect(store.index).toBe(index);
    });

    it('of concurrent CAS transactions on one service, exactly one applies', async () => {
      await ok([nodeOp('set', node('n1')), serviceOp('set', 'n1', { Service: 'web', Port: 1 })]);
      const index = store.get(CATALOG_SERVICES, 'n1/web')?.modifyIndex ?? 0;
      const outcomes = await Promise.all(
        [10, 11, 12].map((port) => run([serviceOp('cas', 'n1', { Service: 'web', Port: port }, index)])),
      );
      expect(outcomes.filter((o) => 'results' in o)).toHaveLength(1);
      expect(outcomes.filter((o) => 'errors' in o)).toEqual(
        Array.from({ length: 2 }, () => ({
          errors: [{ OpIndex: 0, What: 'failed to set service "web" on node "n1", index is stale' }],
        })),
      );
    });

    it('plays again on what a concurrent write left when it met the guard', async () => {
      await ok([nodeOp('set', node('n1')), serviceOp('set', 'n1', { Service: 'web', Port: 1 })]);
      // The transaction's first commit: a registration of the same node lands just before it.
      const commit = store.commit.bind(store);
      let raced = false;
      store.commit = async (ops: readonly WriteOp[]) => {
        if (!raced) {
          raced = true;
          await catalog.register(
            {
              Datacenter: '',
              ID: '',
              Node: 'n1',
              Address: '10.0.0.1',
              TaggedAddresses: {},
              NodeMeta: {},
              Service: { Service: 'web', Port: 3 },
              Checks: [],
              SkipNodeUpdate: false,
            },
            everyone,
          );
        }
        return commit(ops);
      };
      const { results, index } = await ok([
        serviceOp('get', 'n1', { ID: 'web' }),
        serviceOp('set', 'n1', { Service: 'web', Port: 2 }),
      ]);
      expect(raced).toBe(true);
      expect(results).toMatchObject([{ Service: { Port: 3 } }, { Service: { Port: 2, ModifyIndex: index } }]);
      expect(store.get(CATALOG_SERVICES, 'n1/web')?.value).toMatchObject({ Port: 2 });
    });
  });

  describe('ACLs', () => {
    beforeEach(async () => {
      await ok([
        nodeOp('set', node('n1')),
        serviceOp('set', 'n1', { Service: 'web' }),
        serviceOp('set', 'n1', { Service: 'db' }),
        checkOp('set', { Node: 'n1', CheckID: 'node-check' }),
        checkOp('set', { Node: 'n1', CheckID: 'db-check', ServiceID: 'db' }),
      ]);
    });

    it('node:write for node ops, service:write for services, a check by its binding', async () => {
      const token = await identityWith('service "web" { policy = "write" } node "n1" { policy = "read" }');
      const before = store.index;
      expect(
        await errorsOf(
          [
            nodeOp('set', node('n1')),
            serviceOp('set', 'n1', { Service: 'web', Port: 1 }),
            serviceOp('set', 'n1', { Service: 'db', Port: 1 }),
            serviceOp('set', 'n1', { ID: 'db', Service: 'web' }),
            checkOp('set', { Node: 'n1', CheckID: 'node-check' }),
            // The stored check's binding counts, not the one the op claims.
            checkOp('set', { Node: 'n1', CheckID: 'db-check', ServiceID: 'web' }),
            checkOp('set', { Node: 'n1', CheckID: 'web-check', ServiceID: 'web' }),
            checkOp('set', { Node: 'n1', CheckID: 'new', ServiceID: 'cache' }),
            serviceOp('set', 'n1', {
              Kind: 'connect-proxy',
              Service: 'web',
              Port: 2,
              Proxy: { DestinationServiceName: 'db' },
            }),
          ],
          token.authorizer,
        ),
      ).toEqual([
        { OpIndex: 0, What: 'Permission denied' },
        { OpIndex: 2, What: 'Permission denied' },
        { OpIndex: 3, What: 'service name does not match existing service name for service ID "db" on node "n1"' },
        { OpIndex: 4, What: 'Permission denied' },
        { OpIndex: 5, What: 'Permission denied' },
        { OpIndex: 7, What: 'unknown service ID "cache" for check ID "new"' },
        { OpIndex: 8, What: 'Permission denied' },
      ]);
      expect(store.index).toBe(before);
      const allowed = await ok(
        [
          serviceOp('set', 'n1', { Service: 'web', Port: 1 }),
          checkOp('set', { Node: 'n1', CheckID: 'web-check', ServiceID: 'web' }),
        ],
        token.authorizer,
      );
      expect(allowed.results).toHaveLength(2);
    });

    it('leaves out results the token may not read, as Consul filters them', async () => {
      const token = await identityWith('service "web" { policy = "read" }');
      const outcome = await ok(
        [
          nodeOp('get', node('n1')),
          serviceOp('get', 'n1', { ID: 'web' }),
          serviceOp('get', 'n1', { ID: 'db' }),
          checkOp('get', { Node: 'n1', CheckID: 'node-check' }),
        ],
        token.authorizer,
      );
      expect(outcome.filtered).toBe(true);
      expect(outcome.results).toEqual([{ Service: expect.objectContaining({ ID: 'web' }) }]);
      const all = await ok([serviceOp('get', 'n1', { ID: 'web' })], token.authorizer);
      expect(all.filtered).toBe(false);
    });
  });
});
