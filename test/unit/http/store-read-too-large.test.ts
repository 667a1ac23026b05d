// A listing over its byte limit through the store's read path (src/http/store-read.ts): answered
// 413 with the limit named, at once, whether the read blocks or not, and when a parked listing
// grows past the limit, at that change rather than at the end of its wait.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/core/clock.js';
import { silentLogger } from '../../../src/core/log.js';
import { BlockingQueries, Parked, type BlockingParams } from '../../../src/http/blocking.js';
import { errorReply } from '../../../src/http/dispatch.js';
import type { Reply } from '../../../src/http/reply.js';
import { answerStoreRead, type StoreReadSpec } from '../../../src/http/store-read.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../../src/state/embedded/index.js';
import { request } from './support.js';

let clock: FakeClock;
let store: EmbeddedStore;
let blocking: BlockingQueries;

beforeEach(async () => {
  clock = new FakeClock(0);
  store = await openEmbeddedStore({ log: silentLogger, clock });
  blocking = new BlockingQueries(store, clock, (err, path) => errorReply(err, silentLogger, path));
});
afterEach(async () => {
  await store.close();
});

/** A listing of `dir/` of at most 100 bytes (keys and values as stored); its keys as the reply. */
const spec: StoreReadSpec<unknown> = {
  target: { table: 'kv', prefix: 'dir/', maxBytes: 100 },
  consistency: 'default',
  shareKey: 'dir/',
  render: ({ rows }) => ({ status: 200, body: JSON.stringify(rows.map((r) => r.key)) }),
};

/** Parks with a wait of a minute on the fake clock, which never moves here. */
const answer = (minIndex: number): Promise<Reply> | Parked =>
  answerStoreRead(blocking, store, request(), { minIndex, timeoutMs: 60_000 } satisfies BlockingParams, spec);

const big = (key: string) => ({ op: 'set' as const, table: 'kv', key, value: 'x'.repeat(80) });

/** The reply's status and its error text. */
const said = (reply: Reply): { status: number; text: string } => ({ status: reply.status, text: String(reply.body) });

describe('a listing over its byte limit', () => {
  it('is answered 413 naming the limit, without blocking', async () => {
    await store.commit([big('dir/a'), big('dir/b')]);
    await expect(answer(0)).rejects.toMatchObject({ code: 'STATE_LISTING_TOO_LARGE', kind: 'too-large' });
  });

  it('answers a blocking read at once, before any change or the end of its wait', async () => {
    const written = await store.commit([big('dir/a'), big('dir/b')]);
    const parked = answer(written.index) as Parked;
    expect(parked).toBeInstanceOf(Parked);
    const reply = said(await parked.wait());
    expect(reply.status).toBe(413);
    expect(reply.text).toContain('more than 100 bytes');
    expect(blocking.parked).toBe(0);
    expect(store.watchCount).toBe(0);
  });

  it('answers a parked listing that grows past the limit at that change', async () => {
    const written = await store.commit([big('dir/a')]);
    const parked = answer(written.index) as Parked;
    const waiting = parked.wait();
    await store.commit([big('dir/b')]);
    const reply = said(await waiting);
    expect(reply.status).toBe(413);
    expect(reply.text).toContain('more than 100 bytes');
    expect(blocking.parked).toBe(0);
    expect(store.watchCount).toBe(0);
  });
});
