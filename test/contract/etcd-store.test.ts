// Runs the StateStore and read path contracts against the etcd store on a real etcd (one member, a fresh prefix
// per store), then what the contract cannot see: two agents sharing a prefix, an etcd restart, a
// compaction while one agent was cut off, a hung (SIGSTOP) etcd, etcd's transaction size limit, a
// row put under a lease (a session's: docs/decisions.md#sessions), and read-through tables (KV,
// docs/decisions.md D15).
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { isAgentError } from '../../src/core/errors.js';
import { silentLogger } from '../../src/core/log.js';
import { connectEtcd, type EtcdStore, type EtcdStoreOptions, openEtcdStore } from '../../src/state/etcd/index.js';
import type { RangeTarget, StateStore, WatchTarget, WriteOp } from '../../src/state/types.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { describeReadPathContract } from './read-path.contract.js';
import { describeStateStoreContract } from './state-store.contract.js';
import { describeStoreSnapshotsContract } from './store-snapshots.contract.js';

let cluster: EtcdCluster;
let prefixes = 0;
const open: EtcdStore[] = [];

beforeAll(async () => {
  cluster = await startEtcdCluster({ size: 1 });
  // On a fresh machine this includes installing etcd (scripts/ensure-etcd.sh).
}, 180_000);
afterAll(async () => {
  await cluster?.stop();
});

/** A fresh prefix per test keeps stores on the shared etcd from seeing each other's rows. */
const freshPrefix = (): string => `/svc-test/${process.pid}/${prefixes++}/`;

async function openStore(prefix: string, options: Partial<EtcdStoreOptions> = {}): Promise<EtcdStore> {
  const store = await openEtcdStore({ etcd: { endpoints: cluster.endpoints }, prefix, log: silentLogger, ...options });
  open.push(store);
  return store;
}

describeStateStoreContract(
  'etcd, one member',
  async () => {
    const store = await openStore(freshPrefix());
    return { store, cleanup: () => store.close() };
  },
  { disjointCommitsInCallOrder: false },
);

describeReadPathContract(
  'etcd, a table in the view',
  async () => {
    const store = await openStore(freshPrefix());
    return { store, cleanup: () => store.close() };
  },
  'kv',
);

describeReadPathContract(
  'etcd, a table read through',
  async () => {
    const store = await openStore(freshPrefix(), { readThroughTables: ['kv'] });
    return { store, cleanup: () => store.close() };
  },
  'kv',
);

const set = (key: string, value: unknown, table = 'kv'): WriteOp => ({ op: 'set', table, key, value });
const del = (key: string, table = 'kv'): WriteOp => ({ op: 'delete', table, key });

function watched(store: EtcdStore, target: WatchTarget): { fired: () => boolean; next: Promise<void> } {
  let fired = false;
  const next = new Promise<void>((resolve) =>
    store.watchOnce(target, () => {
      fired = true;
      resolve();
    }),
  );
  return { fired: () => fired, next };
}

/** Every wake-up due for the commits so far has been delivered on `store` (deliveries follow commit order). */
async function settle(store: EtcdStore, via: EtcdStore = store): Promise<void> {
  const sentinel = watched(store, { table: 'sentinel' });
  await via.commit([set('tick', Date.now(), 'sentinel')]);
  await sentinel.next;
}

/**
 * Retries a commit that fails for etcd being away (refused, or sent and unanswered) until etcd
 * takes it, after a restart: the recovery the test then checks, not the fault it counts.
 */
async function commitOnceBack(store: EtcdStore, ops: WriteOp[]): Promise<number> {
  for (;;) {
    try {
      return (await store.commit(ops)).index;
    } catch (err) {
      if (!(isAgentError(err) && ['STATE_NO_LEADER', 'STATE_WRITE_OUTCOME_UNKNOWN'].includes(err.code))) throw err;
    }
  }
}

/** The code, kind and message of the AgentError `p` rejects with (a readable diff when it is not one). */
async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => 'resolved',
    (err: unknown) => (isAgentError(err) ? { code: err.code, kind: err.kind, message: err.message } : err),
  );
}

const NO_LEADER = { code: 'STATE_NO_LEADER', kind: 'unavailable', message: 'No cluster leader' };
/** A commit sent to etcd whose answer never came: it may have been applied (docs/decisions.md#write-outcome-unknown). */
const OUTCOME_UNKNOWN = {
  code: 'STATE_WRITE_OUTCOME_UNKNOWN',
  kind: 'unavailable',
  message:
    'The write may have been applied: it reached etcd (or a server agent), whose answer did not come back in time. Read it back, or compare its ModifyIndex, before writing it again',
};

describe('etcd store beyond the contract', () => {
  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
  });

  it("two stores on one prefix see each other's writes and wake each other's watchers", async () => {
    const prefix = freshPrefix();
    const a = await openStore(prefix);
    const b = await openStore(prefix);
    const onB = watched(b, { table: 'kv', key: 'x' });
    const onA = watched(a, { table: 'kv', prefix: 'y/' });
    const written = await a.commit([set('x', { from: 'a' })]);
    await onB.next;
    expect(b.get('kv', 'x')).toEqual({
      key: 'x',
      value: { from: 'a' },
      createIndex: written.index,
      modifyIndex: written.index,
    });
    expect(b.index).toBe(written.index);
    const deleted = await b.commit([del('x'), set('y/1', 1)]);
    await onA.next;
    expect(a.get('kv', 'x')).toBeUndefined();
    expect(a.keyIndex('kv', 'x')).toBe(deleted.index);
    expect(a.get('kv', 'y/1')?.modifyIndex).toBe(deleted.index);
    // A guard written against one agent's view holds on the other's.
    expect((await a.commit([{ op: 'set', table: 'kv', key: 'y/1', value: 2, ifIndex: deleted.index }])).ok).toBe(true);
    expect((await b.commit([{ op: 'set', table: 'kv', key: 'y/1', value: 3, ifIndex: deleted.index }])).ok).toBe(false);
  });

  it('a store opened later starts from etcd, with table floors for deletes it never saw', async () => {
    const prefix = freshPrefix();
    const a = await openStore(prefix);
    await a.commit([set('gone', 1), set('kept', 1)]);
    const deleted = await a.commit([del('gone')]);
    const b = await openStore(prefix);
    expect(b.index).toBe(a.index);
    expect(b.get('kv', 'kept')).toEqual(a.get('kv', 'kept'));
    expect(b.keyIndex('kv', 'gone')).toBeGreaterThanOrEqual(deleted.index);
    expect(b.tableIndex('kv')).toBe(a.tableIndex('kv'));
  });

  it('deletes a prefix and puts under it in one commit (etcd refuses a put inside a deleted range)', async () => {
    const store = await openStore(freshPrefix());
    await store.commit([set('app/a', 1), set('app/b', 1), set('app/c', 1), set('apple', 1)]);
    const r = await store.commit([
      set('app/new', 0),
      { op: 'delete-prefix', table: 'kv', prefix: 'app/' },
      set('app/b', 2),
      set('app/z', 3),
    ]);
    expect(r.ok).toBe(true);
    expect(store.list('kv', '').map((row) => [row.key, row.value, row.modifyIndex === r.index])).toEqual([
      ['app/b', 2, true],
      ['app/z', 3, true],
      ['apple', 1, false],
    ]);
    expect(store.keyIndex('kv', 'app/a')).toBe(r.index);
  });

  it("deletes a row put under a lease when the lease is revoked, at one revision in every agent's view", async () => {
    const prefix = freshPrefix();
    const a = await openStore(prefix);
    const b = await openStore(prefix);
    const raw = connectEtcd({ endpoints: cluster.endpoints });
    try {
      const lease = await raw.grantRequestLease(60, 5_000);
      const put = await a.commit([
        { op: 'set', table: 'sessions', key: 's', value: { n: 1 }, lease },
        set('plain', 1, 'sessions'),
      ]);
      await b.reached(put.index);
      expect(b.get('sessions', 's')).toEqual(a.get('sessions', 's'));
      const onA = watched(a, { table: 'sessions', key: 's' });
      const onB = watched(b, { table: 'sessions' });
      await raw.revokeRequestLease(lease, 5_000);
      await Promise.all([onA.next, onB.next]);
      for (const store of [a, b]) {
        expect(store.get('sessions', 's')).toBeUndefined();
        expect(store.get('sessions', 'plain')?.value).toBe(1);
        expect(store.keyIndex('sessions', 's')).toBeGreaterThan(put.index);
      }
      expect(b.keyIndex('sessions', 's')).toBe(a.keyIndex('sessions', 's'));
      // A set without the lease takes the row off it: the next revoke leaves it.
      const again = await raw.grantRequestLease(60, 5_000);
      await a.commit([{ op: 'set', table: 'sessions', key: 't', value: 1, lease: again }]);
      await a.commit([set('t', 2, 'sessions')]);
      await raw.revokeRequestLease(again, 5_000);
      await settle(a);
      expect(a.get('sessions', 't')?.value).toBe(2);
    } finally {
      raw.close();
    }
  });

  it('refuses a commit larger than one etcd transaction holds, before sending it', async () => {
    const store = await openStore(freshPrefix());
    const ops = Array.from({ length: 200 }, (_, i) => set(`k${i}`, i));
    expect(await rejection(store.commit(ops))).toMatchObject({ code: 'STATE_COMMIT_TOO_LARGE', kind: 'too-large' });
    expect((await store.commit(ops.slice(0, 100))).ok).toBe(true);
  });

  it('fails commits while etcd is hung (SIGSTOP), keeps answering reads, and commits again after SIGCONT', async () => {
    const store = await openStore(freshPrefix());
    const before = await store.commit([set('a', 1)]);
    const member = cluster.members[0]!;
    await member.pause();
    try {
      // Sent to the hung member, which never answers: the outcome is unknown, not a refusal.
      expect(await rejection(store.commit([set('a', 2)]))).toEqual(OUTCOME_UNKNOWN);
      expect(store.get('kv', 'a')?.value).toBe(1);
      expect(store.health.connected).toBe(false);
    } finally {
      member.resume();
    }
    const after = await commitOnceBack(store, [set('a', 3)]);
    expect(after).toBeGreaterThan(before.index);
    expect(store.get('kv', 'a')?.value).toBe(3);
  });

  it('never moves the index back across an etcd restart, and wakes parked watchers after it', async () => {
    const store = await openStore(freshPrefix(), { backoff: { initialMs: 20, maxMs: 200 } });
    const first = await store.commit([set('a', 1)]);
    const parked = watched(store, { table: 'kv', key: 'a' });
    const member = cluster.members[0]!;
    await member.kill();
    // Refused, or sent on the connection the kill reset: then it may have been applied.
    expect([NO_LEADER, OUTCOME_UNKNOWN]).toContainEqual(await rejection(store.commit([set('a', 2)])));
    expect(store.index).toBe(first.index);
    expect(parked.fired()).toBe(false);
    await member.start();
    const second = await commitOnceBack(store, [set('a', 3)]);
    await parked.next;
    expect(second).toBeGreaterThan(first.index);
    expect(store.index).toBe(second);
    expect(store.get('kv', 'a')).toEqual({ key: 'a', value: 3, createIndex: first.index, modifyIndex: second });
  });

  describe('cut off from etcd while it is written and compacted', () => {
    let proxy: TcpProxy | undefined;
    afterEach(async () => {
      await proxy?.close();
      proxy = undefined;
    });

    it('re-reads everything and wakes exactly the watchers whose rows changed', async () => {
      proxy = await startTcpProxy(cluster.endpoints[0]!);
      const prefix = freshPrefix();
      const cutOff = await openEtcdStore({
        etcd: { endpoints: [proxy.url] },
        prefix,
        log: silentLogger,
        backoff: { initialMs: 20, maxMs: 200 },
      });
      open.push(cutOff);
      const writer = await openStore(prefix);
      await writer.commit([set('changed', 1), set('same', 1), set('deleted', 1), set('other', 1, 'other')]);
      await settle(cutOff, writer);
      const indexBefore = cutOff.index;

      const changed = watched(cutOff, { table: 'kv', key: 'changed' });
      const same = watched(cutOff, { table: 'kv', key: 'same' });
      const deleted = watched(cutOff, { table: 'kv', key: 'deleted' });
      const created = watched(cutOff, { table: 'kv', prefix: 'new/' });
      const otherTable = watched(cutOff, { table: 'other' });
      const neverWritten = watched(cutOff, { table: 'kv', key: 'never' });

      proxy.cut();
      await writer.commit([set('changed', 2)]);
      await writer.commit([del('deleted'), set('new/1', 1)]);
      await writer.commit([set('new/2', 2), set('transient', 1)]);
      const last = await writer.commit([del('transient')]);
      const raw = connectEtcd({ endpoints: cluster.endpoints });
      try {
        await raw.compact(last.index, 5_000);
      } finally {
        raw.close();
      }
      expect(cutOff.get('kv', 'changed')?.value).toBe(1);
      proxy.restore();

      await Promise.all([changed.next, deleted.next, created.next]);
      await settle(cutOff, writer);
      expect(same.fired() || otherTable.fired() || neverWritten.fired()).toBe(false);
      expect(cutOff.stats.resyncs).toBe(1);
      expect(cutOff.index).toBeGreaterThanOrEqual(indexBefore);
      expect(cutOff.index).toBe(writer.index);
      for (const key of ['changed', 'same', 'deleted', 'new/1', 'new/2', 'transient']) {
        expect(cutOff.get('kv', key)).toEqual(writer.get('kv', key));
      }
      expect(cutOff.list('kv', '')).toEqual(writer.list('kv', ''));
      expect(cutOff.keyIndex('kv', 'deleted')).toBeGreaterThanOrEqual(writer.keyIndex('kv', 'deleted'));
      expect(cutOff.tableIndex('kv')).toBeGreaterThanOrEqual(last.index);
    });
  });
});

describe('etcd store on a three-member cluster', () => {
  let three: EtcdCluster;
  beforeAll(async () => {
    three = await startEtcdCluster({ size: 3 });
  }, 60_000);
  afterAll(async () => {
    await three?.stop();
  });

  it('keeps committing with one member killed, and fails fast with two', async () => {
    const store = await openEtcdStore({
      etcd: { endpoints: three.endpoints },
      prefix: freshPrefix(),
      log: silentLogger,
    });
    try {
      await store.commit([set('a', 1)]);
      await three.members[0]!.kill();
      const index = await commitOnceBack(store, [set('a', 2)]);
      expect(store.get('kv', 'a')).toMatchObject({ value: 2, modifyIndex: index });
      await three.members[1]!.kill();
      // The last member has no leader: it refuses the commit, or takes it and never answers.
      expect([NO_LEADER, OUTCOME_UNKNOWN]).toContainEqual(await rejection(store.commit([set('a', 3)])));
      expect(store.get('kv', 'a')?.value).toBe(2);
    } finally {
      await store.close();
    }
  });
});

/** The store's one read path, which a read-through table is served by. */
type ReadPath = Pick<StateStore, 'read' | 'changedAfter'>;

describe("read-through tables (the cluster's KV)", () => {
  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
  });

  const openReadThrough = async (prefix = freshPrefix()): Promise<{ store: EtcdStore; kv: ReadPath }> => {
    const store = await openStore(prefix, { readThroughTables: ['kv'], backoff: { initialMs: 20, maxMs: 200 } });
    return { store, kv: store };
  };

  /** Resolves once `target` changed after `revision`, as changedAfter reports it. */
  const changed = (
    kv: ReadPath,
    target: RangeTarget,
    revision: number,
  ): { fired: () => boolean; next: Promise<void> } => {
    let fired = false;
    const next = new Promise<void>((resolve) =>
      kv.changedAfter(target, revision, () => {
        fired = true;
        resolve();
      }),
    );
    return { fired: () => fired, next };
  };

  it("keeps the table out of the view, and reads it from etcd with Consul's indexes", async () => {
    const prefix = freshPrefix();
    const { store, kv } = await openReadThrough(prefix);
    const other = await openStore(prefix, { readThroughTables: ['kv'] });
    const written = await store.commit([set('dir/a', 1), set('dir/b', 2), set('x', 1, 'intentions')]);
    expect(store.get('kv', 'dir/a')).toBeUndefined();
    const key = await other.read({ table: 'kv', key: 'dir/a' }, 'default');
    expect(key).toEqual({
      rows: [{ key: 'dir/a', value: 1, createIndex: written.index, modifyIndex: written.index }],
      index: written.index,
      revision: written.index,
    });
    const later = await store.commit([set('y', 1, 'intentions')]);
    const listed = await kv.read({ table: 'kv', prefix: 'dir/' }, 'stale');
    expect(listed.rows.map((r) => r.key)).toEqual(['dir/a', 'dir/b']);
    // A listing (and an absent key) reports the revision it read at: it never goes back.
    expect(listed.index).toBe(later.index);
    expect(await kv.read({ table: 'kv', key: 'dir/none' }, 'consistent')).toMatchObject({
      rows: [],
      index: later.index,
    });
  });

  it('reports a change of its own target only, including one made before the watch began', async () => {
    const { store, kv } = await openReadThrough();
    const start = await store.commit([set('k', 1)]);
    const onKey = changed(kv, { table: 'kv', key: 'k' }, start.index);
    const onPrefix = changed(kv, { table: 'kv', prefix: 'p/' }, start.index);
    await store.commit([set('kk', 1), set('other', 1), set('x', 1, 'intentions')]);
    await store.commit([set('p/1', 1)]);
    await onPrefix.next;
    expect(onKey.fired()).toBe(false);
    await store.commit([{ op: 'delete', table: 'kv', key: 'k' }]);
    await onKey.next;
    // Asked after the fact, from a revision before the change: at once.
    await changed(kv, { table: 'kv', key: 'k' }, start.index).next;
  });

  it('fails a read with No cluster leader while etcd is down, and keeps a wait across the restart', async () => {
    const { store, kv } = await openReadThrough();
    const first = await store.commit([set('a', 1)]);
    const waiting = changed(kv, { table: 'kv', key: 'a' }, first.index);
    const member = cluster.members[0]!;
    await member.kill();
    try {
      expect(await rejection(kv.read({ table: 'kv', key: 'a' }, 'default'))).toEqual(NO_LEADER);
      expect(waiting.fired()).toBe(false);
    } finally {
      await member.start();
    }
    await commitOnceBack(store, [set('a', 2)]);
    await waiting.next;
    expect((await kv.read<number>({ table: 'kv', key: 'a' }, 'default')).rows[0]?.value).toBe(2);
  });

  it('reports a change when the revision waited from was compacted away', async () => {
    const { store, kv } = await openReadThrough();
    const first = await store.commit([set('c', 1)]);
    await store.commit([set('unrelated', 1)]);
    // etcd keeps the revision it compacts at: the one after `first` goes, and no change of 'c' follows.
    const last = await store.commit([set('unrelated', 2)]);
    const raw = connectEtcd({ endpoints: cluster.endpoints });
    try {
      await raw.compact(last.index, 5_000);
    } finally {
      raw.close();
    }
    await changed(kv, { table: 'kv', key: 'c' }, first.index).next;
  });
});

describe('etcd store snapshots: KV read through, an archive larger than one transaction restored in steps', () => {
  let store: EtcdStore;
  beforeEach(async () => {
    // 8 operations a transaction: 40 rows take several steps (docs/decisions.md#snapshots).
    store = await openStore(freshPrefix(), { readThroughTables: ['kv'], maxTxnOps: 8 });
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
  });
  describeStoreSnapshotsContract(() => store, ['kv', 'other'], 40);

  it('exports and restores the private range (CA keys, token secrets) with the tables', async () => {
    const raw = connectEtcd({ endpoints: cluster.endpoints, log: silentLogger });
    const prefix = freshPrefix();
    const s = await openStore(prefix, { readThroughTables: ['kv'], maxTxnOps: 8 });
    const put = (key: string, value: unknown) =>
      raw.txn(
        {
          compares: [],
          success: [
            { op: 'put', key: Buffer.from(`${prefix}private/${key}`), value: Buffer.from(JSON.stringify(value)) },
          ],
          failure: [],
        },
        5_000,
      );
    try {
      await put('ca/keys/r1', { PrivateKey: 'k1' });
      await put('acl/secrets/a1', { SecretID: 's1' });
      await s.commit([set('a', 1)]);
      const image = await s.exportImage();
      expect(image.privateEntries).toEqual([
        { path: 'acl/secrets/a1', value: { SecretID: 's1' } },
        { path: 'ca/keys/r1', value: { PrivateKey: 'k1' } },
      ]);
      await put('acl/secrets/a2', { SecretID: 's2' });
      await put('ca/keys/r1', { PrivateKey: 'changed' });
      await s.replaceWith(image);
      const after = await s.exportImage();
      expect(after.privateEntries).toEqual(image.privateEntries);
      expect(after.rows).toEqual(image.rows);
    } finally {
      raw.close();
    }
  });
});
