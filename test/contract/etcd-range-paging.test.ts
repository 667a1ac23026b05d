// Reads of etcd bounded in bytes (src/state/etcd/etcd-client.ts, rangeKeys) on a real etcd: rows
// larger than gRPC's 4 MiB default message in total are read in pages at one revision, a page over
// the receive limit is read again smaller, a row larger than 4 MiB reads, keys-only reads carry no
// values, a byte budget stops a read early, a watch catches up over more than 4 MiB of events (and
// over more than the receive limit, in fragments), and a store opens over a view of large rows (ten
// 444 KB ACL policies once stopped start-up).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/core/log.js';
import {
  connectEtcd,
  EtcdRangeTooLarge,
  prefixEnd,
  type EtcdConnection,
  type EtcdWatchEvent,
} from '../../src/state/etcd/etcd-client.js';
import { openEtcdStore } from '../../src/state/etcd/index.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';

const KiB = 1024;
const MiB = 1024 * KiB;

let etcd: EtcdCluster;
let client: EtcdConnection;

beforeAll(async () => {
  // Rows up to 7 MiB: etcd takes requests up to 8 MiB here (1.5 MiB by default).
  etcd = await startEtcdCluster({ size: 1, args: ['--max-request-bytes=8388608'] });
  client = connectEtcd({ endpoints: etcd.endpoints });
}, 180_000);
afterAll(async () => {
  client?.close();
  await etcd?.stop();
});

/** The range requests the connection sends (etcd3's KV client, internal to the connection). */
interface RangeRequest {
  readonly limit: number;
  readonly revision?: number;
  readonly keys_only: boolean;
}
type RangeFn = (req: RangeRequest, options: unknown) => Promise<unknown>;

/** Records each range request of `connection`, and runs `after(n)` once the n-th page is in, before it is used. */
function recordPages(
  connection: EtcdConnection,
  after: (page: number) => Promise<void> = async () => {},
): { requests: RangeRequest[]; restore: () => void } {
  const kv = (connection as unknown as { client: { kv: { range: RangeFn } } }).client.kv;
  const original = kv.range;
  const requests: RangeRequest[] = [];
  kv.range = async (req, options) => {
    requests.push(req);
    const res = await original.call(kv, req, options);
    await after(requests.length);
    return res;
  };
  return { requests, restore: () => void (kv.range = original) };
}

/** A value of `size` bytes that says which key and version it is. */
function valueOf(key: string, version: number, size: number): Buffer {
  const value = Buffer.alloc(size, `${key}#${version};`);
  return value;
}

async function put(key: string, value: Buffer): Promise<number> {
  const op = { op: 'put' as const, key: Buffer.from(key), value };
  return (await client.txn({ compares: [], success: [op], failure: [] }, 10_000)).revision;
}

describe('rangeKeys pages by size', () => {
  const root = '/paging/rows/';
  const keys = Array.from({ length: 48 }, (_, i) => `${root}${String(i).padStart(3, '0')}`);
  const ROW = 256 * KiB;
  let written = 0;

  beforeAll(async () => {
    // 12 MiB in all: three times gRPC's default message, which the old 1,000-row page ran over.
    for (const key of keys) written = await put(key, valueOf(key, 1, ROW));
  }, 60_000);

  it('reads rows larger in total than a 4 MiB message, every value intact, in pages of about 2 MiB at one revision', async () => {
    const start = Buffer.from(root);
    const late = `${root}zzz`;
    // Between the first page and the next, a write changes a row still to come and adds one.
    const pages = recordPages(client, async (page) => {
      if (page !== 1) return;
      await put(keys[keys.length - 1] as string, valueOf('changed', 2, ROW));
      await put(late, valueOf(late, 1, 10));
    });
    let read;
    try {
      read = await client.rangeKeys(start, prefixEnd(start), 10_000);
    } finally {
      pages.restore();
    }
    expect(read.revision).toBe(written);
    expect(read.kvs.map((kv) => kv.key)).toEqual(keys);
    for (const kv of read.kvs) expect(kv.value.equals(valueOf(kv.key, 1, ROW)), kv.key).toBe(true);
    // 16 rows first (4 MiB), then 7 a page (2 MiB over rows of 256 KiB and their keys), every page
    // after the first at the first's revision.
    expect(pages.requests.map((r) => r.limit)).toEqual([16, 7, 7, 7, 7, 7]);
    expect(pages.requests.slice(1).every((r) => r.revision === written)).toBe(true);
  });

  it('reads keys only: one page, and etcd sends no values', async () => {
    const start = Buffer.from(root);
    const pages = recordPages(client);
    let read;
    try {
      read = await client.rangeKeys(start, prefixEnd(start), 10_000, { keysOnly: true });
    } finally {
      pages.restore();
    }
    expect(read.kvs.map((kv) => kv.key)).toEqual([...keys, `${root}zzz`]);
    expect(read.kvs.every((kv) => kv.value.length === 0 && kv.modRevision > 0)).toBe(true);
    expect(pages.requests).toMatchObject([{ keys_only: true, limit: 1000 }]);
  });

  it('stops a read once its rows hold more than its byte budget, after the page that crossed it', async () => {
    const start = Buffer.from(root);
    const pages = recordPages(client);
    let failure: unknown;
    try {
      await client.rangeKeys(start, prefixEnd(start), 10_000, { maxBytes: 5 * MiB, keyRootBytes: root.length });
    } catch (err) {
      failure = err;
    } finally {
      pages.restore();
    }
    expect(failure).toBeInstanceOf(EtcdRangeTooLarge);
    expect((failure as EtcdRangeTooLarge).maxBytes).toBe(5 * MiB);
    // 4 MiB, then 5.75 MiB: two of the six pages.
    expect(pages.requests.length).toBe(2);
  });

  it('catches a watch up over more than 4 MiB of events in one response', async () => {
    const start = Buffer.from(root);
    const events: EtcdWatchEvent[] = [];
    let failure: unknown;
    await new Promise<void>((done) => {
      const watch = client.watchRange(start, prefixEnd(start), 1, {
        connected: () => {},
        events: (evs) => {
          events.push(...evs);
          if (events.length >= keys.length + 2) {
            watch.cancel();
            done();
          }
        },
        disconnected: (err) => {
          failure = err;
          watch.cancel();
          done();
        },
        cancelled: (err) => {
          failure = err;
          done();
        },
      });
    });
    expect(failure).toBeUndefined();
    expect(events.length).toBe(keys.length + 2);
  });
});

describe('a page over the receive limit', () => {
  it('is read again in fewer rows, down to one: four rows of 7 MiB, each over gRPC’s 4 MiB default', async () => {
    const root = '/paging/huge/';
    const keys = ['a', 'b', 'c', 'd'].map((k) => `${root}${k}`);
    for (const key of keys) await put(key, valueOf(key, 1, 7 * MiB));
    const start = Buffer.from(root);
    const pages = recordPages(client);
    let read;
    try {
      read = await client.rangeKeys(start, prefixEnd(start), 30_000);
    } finally {
      pages.restore();
    }
    expect(read.kvs.map((kv) => kv.key)).toEqual(keys);
    for (const kv of read.kvs) expect(kv.value.equals(valueOf(kv.key, 1, 7 * MiB)), kv.key).toBe(true);
    // 16 rows came to 28 MiB, over the 24 MiB limit: read again one row a page.
    expect(pages.requests.map((r) => r.limit)).toEqual([16, 1, 1, 1, 1]);
  }, 60_000);

  it('a watch catching up over 40 MiB of events, more than the receive limit, gets them whole in fragments', async () => {
    // Every row written above: 48 of 256 KiB and their 2 later writes, and 4 of 7 MiB.
    const start = Buffer.from('/paging/');
    const end = Buffer.from('/paging/s');
    const calls: (readonly EtcdWatchEvent[])[] = [];
    let failure: unknown;
    await new Promise<void>((done) => {
      const watch = client.watchRange(start, end, 1, {
        connected: () => {},
        events: (evs) => {
          calls.push(evs);
          if (calls.flat().length >= 54) {
            watch.cancel();
            done();
          }
        },
        disconnected: (err) => {
          failure = err;
          watch.cancel();
          done();
        },
        cancelled: (err) => {
          failure = err;
          done();
        },
      });
    });
    expect(failure).toBeUndefined();
    // One response of etcd's, sent in fragments of at most 8 MiB (its --max-request-bytes here), told whole.
    expect(calls.map((evs) => evs.length)).toEqual([54]);
    const revisions = calls.flat().map((ev) => ev.kv.modRevision);
    expect(revisions).toEqual([...revisions].sort((a, b) => a - b));
  }, 60_000);
});

describe('the store', () => {
  it('opens over a view of ten 444 KB rows (4.4 MB), and reads them', async () => {
    const prefix = `/paging/store/${process.pid}/`;
    const writer = await openEtcdStore({ etcd: { endpoints: etcd.endpoints }, prefix, log: silentLogger });
    const rules = 'x'.repeat(444_000);
    try {
      for (let i = 0; i < 10; i++) await writer.commit([{ op: 'set', table: 'big', key: `p${i}`, value: { rules } }]);
    } finally {
      await writer.close();
    }
    const reader = await openEtcdStore({ etcd: { endpoints: etcd.endpoints }, prefix, log: silentLogger });
    try {
      const rows = reader.list<{ rules: string }>('big', '');
      expect(rows.length).toBe(10);
      expect(rows.every((r) => r.value.rules === rules)).toBe(true);
    } finally {
      await reader.close();
    }
  }, 60_000);
});
