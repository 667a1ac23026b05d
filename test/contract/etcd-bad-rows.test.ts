// The etcd store on a real etcd, against values written into etcd directly (as any agent's etcd
// credentials can): a row that fails its table's schema is left out of the view, of a view kept on
// disk and of a read-through listing, counted once per bad revision, and never stops the store
// opening; a key whose value turns bad keeps its last good value; writes are checked the same way.
// And KV writes reach no other agent's view: 1,000 of them through one store are 0 watch events at
// another (docs/decisions.md D15). The signing mailbox fails one request on a bad answer, not the
// channel, and ends its waits on close.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isAgentError } from '../../src/core/errors.js';
import { silentLogger } from '../../src/core/log.js';
import { INTENTIONS_TABLE, storedIntentionSchema } from '../../src/connect/intentions/model.js';
import { normalizeIntention, storedIntention } from '../../src/connect/intentions/validate.js';
import { KV_TABLE, storedKv, storedKvSchema } from '../../src/kv/entries.js';
import {
  connectEtcd,
  openEtcdMailbox,
  openEtcdStore,
  type EtcdConnection,
  type EtcdStore,
  type EtcdStoreOptions,
} from '../../src/state/etcd/index.js';
import type { TableSchema, TableSchemas, WriteOp } from '../../src/state/types.js';

type SetOp = Extract<WriteOp, { op: 'set' }>;
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { tempDir } from '../integration/support/agent-process.js';

let cluster: EtcdCluster;
let raw: EtcdConnection;
let prefixes = 0;
const open: EtcdStore[] = [];

beforeAll(async () => {
  cluster = await startEtcdCluster({ size: 1 });
  raw = connectEtcd({ endpoints: cluster.endpoints });
}, 180_000);
afterAll(async () => {
  raw?.close();
  await cluster?.stop();
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
});

const SCHEMAS: TableSchemas = new Map<string, TableSchema>([
  [INTENTIONS_TABLE, storedIntentionSchema],
  [KV_TABLE, storedKvSchema],
]);
const freshPrefix = (): string => `/svc-bad-${process.pid}/${prefixes++}/`;

async function openStore(prefix: string, options: Partial<EtcdStoreOptions> = {}): Promise<EtcdStore> {
  const store = await openEtcdStore({
    etcd: { endpoints: cluster.endpoints },
    prefix,
    log: silentLogger,
    tableSchemas: SCHEMAS,
    ...options,
  });
  open.push(store);
  return store;
}

const intention = (source: string, action: 'allow' | 'deny'): unknown =>
  storedIntention(normalizeIntention({ SourceName: source, DestinationName: 'db', Action: action }, 'default'));
const setIntention = (key: string, value: unknown): SetOp => ({ op: 'set', table: INTENTIONS_TABLE, key, value });

/** Puts raw bytes at `<prefix><key>`; resolves with the revision. */
async function put(prefix: string, key: string, value: string): Promise<number> {
  const res = await raw.txn(
    {
      compares: [],
      success: [{ op: 'put', key: Buffer.from(`${prefix}${key}`), value: Buffer.from(value) }],
      failure: [],
    },
    5_000,
  );
  return res.revision;
}

/** Resolves once `store`'s view has applied `revision` (a commit through it after a raw put). */
async function seen(store: EtcdStore, revision: number): Promise<void> {
  while (store.index < revision)
    await new Promise<void>((resolve) => store.watchOnce({ table: INTENTIONS_TABLE }, resolve));
}

const BAD_INTENTIONS = ['null', '{}', 'not json', '{"SourceName":5}', '[]'];

describe('bad rows in etcd', () => {
  it('are left out of the view, counted once per revision, and never stop a store opening', async () => {
    const prefix = freshPrefix();
    const writer = await openStore(prefix);
    await writer.commit([setIntention('good', intention('web', 'deny'))]);
    let last = 0;
    for (const [i, value] of BAD_INTENTIONS.entries()) last = await put(prefix, `data/intentions/bad-${i}`, value);
    // A sentinel after them: once the view has it, it has seen every bad row.
    const sentinel = await writer.commit([setIntention('sentinel', intention('api', 'allow'))]);
    expect(sentinel.index).toBeGreaterThan(last);
    await seen(writer, sentinel.index);
    expect(writer.list(INTENTIONS_TABLE, '').map((r) => r.key)).toEqual(['good', 'sentinel']);
    expect(writer.stats.badRows).toBe(BAD_INTENTIONS.length);

    // Opened over them: it starts, with the good rows only, and counts each bad one once.
    const later = await openStore(prefix);
    expect(later.list(INTENTIONS_TABLE, '').map((r) => r.key)).toEqual(['good', 'sentinel']);
    expect(later.stats.badRows).toBe(BAD_INTENTIONS.length);
  });

  it('a key whose value turns bad keeps its last good value, with indexes a guarded write can replace', async () => {
    const prefix = freshPrefix();
    const store = await openStore(prefix);
    const first = await store.commit([setIntention('k', intention('web', 'deny'))]);
    const bad = await put(prefix, 'data/intentions/k', 'null');
    await seen(store, bad);
    expect(store.get(INTENTIONS_TABLE, 'k')).toEqual({
      key: 'k',
      value: intention('web', 'deny'),
      createIndex: first.index,
      modifyIndex: bad,
    });
    expect(store.stats.badRows).toBe(1);
    const mended = await store.commit([{ ...setIntention('k', intention('web', 'allow')), ifIndex: bad }]);
    expect(mended.ok).toBe(true);
    expect(store.get(INTENTIONS_TABLE, 'k')?.value).toEqual(intention('web', 'allow'));
  });

  it('refuses to write a row that fails its schema, and writes nothing', async () => {
    const store = await openStore(freshPrefix());
    const before = store.index;
    for (const value of [null, {}, { ...(intention('web', 'deny') as object), Precedence: 'high' }]) {
      const err = await store.commit([setIntention('x', value)]).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isAgentError(err) && err.code).toBe('STATE_INVALID_OP');
    }
    const kv = await store
      .commit([{ op: 'set', table: KV_TABLE, key: 'k', value: { Flags: 1 } }])
      .catch((e: unknown) => e);
    expect(isAgentError(kv) && kv.code).toBe('STATE_INVALID_OP');
    expect(store.index).toBe(before);
  });

  it('leaves bad rows of a view kept on disk out when it starts from it with etcd unreachable', async () => {
    const prefix = freshPrefix();
    const dir = await tempDir();
    try {
      // A store that checks nothing (an older agent) keeps the bad row in its view and on disk.
      const unchecked = await openEtcdStore({
        etcd: { endpoints: cluster.endpoints },
        prefix,
        log: silentLogger,
        dataDir: dir.path,
      });
      await unchecked.commit([setIntention('good', intention('web', 'deny')), setIntention('bad', null)]);
      expect(unchecked.get(INTENTIONS_TABLE, 'bad')).toBeDefined();
      await unchecked.close();
      const offline = await openStore(prefix, {
        etcd: { endpoints: ['http://127.0.0.1:1'] },
        dataDir: dir.path,
        readTimeoutMs: 300,
      });
      expect(offline.health.connected).toBe(false);
      expect(offline.list(INTENTIONS_TABLE, '').map((r) => r.key)).toEqual(['good']);
      expect(offline.stats.badRows).toBe(1);
    } finally {
      await dir.remove();
    }
  });

  it('a bad KV value is named unreadable, never fails a listing', async () => {
    const prefix = freshPrefix();
    const store = await openStore(prefix, { readThroughTables: [KV_TABLE] });
    await store.commit([{ op: 'set', table: KV_TABLE, key: 'app/good', value: storedKv(7n, Buffer.from('fine')) }]);
    for (const [key, value] of [
      ['app/not-json', 'not json'],
      ['app/null', 'null'],
      ['app/empty', '{}'],
      ['app/flags', '{"Flags":-1,"Value":null}'],
    ]) {
      await put(prefix, `bulk/kv/${key}`, value as string);
    }
    const listed = await store.read({ table: KV_TABLE, prefix: 'app/' }, 'default');
    expect(listed.rows.map((r) => r.key)).toEqual(['app/good']);
    expect(listed.unreadable).toEqual(['app/empty', 'app/flags', 'app/not-json', 'app/null']);
    const one = await store.read({ table: KV_TABLE, key: 'app/null' }, 'default');
    expect(one).toMatchObject({ rows: [], unreadable: ['app/null'] });
    // Read again at the same revisions: counted once each.
    await store.read({ table: KV_TABLE, prefix: 'app/' }, 'stale');
    expect(store.stats.badRows).toBe(4);
  });
});

describe('KV writes and the views of other agents', () => {
  it("1,000 KV writes through one store are 0 watch events at another store's view, and KV reads still see them", async () => {
    const prefix = freshPrefix();
    const a = await openStore(prefix, { readThroughTables: [KV_TABLE] });
    const b = await openStore(prefix, { readThroughTables: [KV_TABLE] });
    const kv = (i: number): SetOp => ({
      op: 'set',
      table: KV_TABLE,
      key: `k/${i % 50}`,
      value: storedKv(BigInt(i), Buffer.from(String(i))),
    });
    /** Events b's view receives for one mesh commit through a (its rows and markers). */
    const sentinelEvents = async (): Promise<number> => {
      const before = b.stats.viewEvents;
      const done = await a.commit([setIntention('sentinel', intention('web', 'deny'))]);
      await seen(b, done.index);
      return b.stats.viewEvents - before;
    };
    const perSentinel = await sentinelEvents();
    expect(perSentinel).toBeGreaterThan(0);

    const before = b.stats.viewEvents;
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 1_000; i++) {
      // Every shape of KV commit: sets, deletes, a failed guard, a prefix delete.
      if (i % 100 === 99) writes.push(a.commit([{ op: 'delete-prefix', table: KV_TABLE, prefix: 'k/1' }]));
      else if (i % 10 === 9) writes.push(a.commit([{ op: 'delete', table: KV_TABLE, key: `k/${i % 50}` }]));
      else if (i % 10 === 5) writes.push(a.commit([{ ...kv(i), ifIndex: 1 }]));
      else writes.push(a.commit([kv(i)]));
    }
    await Promise.all(writes);
    // Events are delivered in revision order: once b has the sentinel, it has every event before it.
    const after = await sentinelEvents();
    expect(b.stats.viewEvents - before - after).toBe(0);
    // Through b, the KV writes are all there (read through from etcd).
    const read = await b.read<{ Value: string }>({ table: KV_TABLE, key: 'k/8' }, 'default');
    expect(Buffer.from(read.rows[0]?.value.Value ?? '', 'base64').toString()).toBe('958');
  });
});

describe('the signing mailbox', () => {
  it('fails one request on an answer that is not JSON, and keeps serving the next', async () => {
    const prefix = freshPrefix();
    const client = openEtcdMailbox({ etcd: { endpoints: cluster.endpoints }, prefix, log: silentLogger });
    const requests = Buffer.from(`${prefix}sign/requests/`);
    // A rogue writer answers the first request with junk; a real server answers the rest.
    let answered = 0;
    const rogue = raw.watchRange(requests, Buffer.from(`${prefix}sign/requests0`), 1, {
      connected: () => {},
      events: (events) => {
        for (const ev of events) {
          if (ev.type !== 'put' || answered++ > 0) continue;
          const id = ev.kv.key.slice(requests.length);
          void raw.txn(
            {
              compares: [],
              success: [
                { op: 'put', key: Buffer.from(`${prefix}sign/responses/${id}`), value: Buffer.from('not json') },
              ],
              failure: [],
            },
            5_000,
          );
        }
      },
      disconnected: () => {},
      cancelled: () => {},
    });
    const server = openEtcdMailbox({ etcd: { endpoints: cluster.endpoints }, prefix, log: silentLogger });
    try {
      const first = await client.request({ n: 1 }, 10_000).then(
        () => 'answered',
        (e: unknown) => (isAgentError(e) ? e.code : e),
      );
      expect(first).toBe('CA_SIGN_FAILED');
      server.serve((body) => Promise.resolve({ echo: body }));
      expect(await client.request({ n: 2 }, 10_000)).toEqual({ echo: { n: 2 } });
    } finally {
      rogue.cancel();
      server.close();
      client.close();
    }
  });

  it('ends a waiting request at close, not at its deadline', async () => {
    const prefix = freshPrefix();
    const requests = Buffer.from(`${prefix}sign/requests/`);
    let watch: { cancel(): void } | undefined;
    // Closed once the request is written (no server runs on this prefix, so it waits).
    const written = new Promise<void>((resolve) => {
      watch = raw.watchRange(requests, Buffer.from(`${prefix}sign/requests0`), 1, {
        connected: () => {},
        events: () => resolve(),
        disconnected: () => {},
        cancelled: () => {},
      });
    });
    const client = openEtcdMailbox({ etcd: { endpoints: cluster.endpoints }, prefix, log: silentLogger });
    const waiting = client.request({ n: 1 }, 600_000);
    await written;
    watch?.cancel();
    client.close();
    expect(await waiting).toBeUndefined();
  });
});
