// Session ops of a transaction (src/txn/kv-play.ts through KvTxn) on an in-memory embedded store and
// a fake clock: a session's delete ends it as Sessions.end does, inside the transaction's one
// commit (its row gone, each key it holds released or deleted, then kept from a new holder for its
// lock-delay), later ops of the transaction see it gone, a missing one is Consul's error, and
// session:write on its node is needed. With the KV verbs the locks are taken through.
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/core/clock.js';
import { silentLogger } from '../../../src/core/log.js';
import { KV_TABLE, type StoredKv } from '../../../src/kv/entries.js';
import { KV_LOCKS_TABLE, newSession, SESSIONS_TABLE, type SessionInput } from '../../../src/sessions/model.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../../src/state/embedded/index.js';
import { KvTxn } from '../../../src/txn/kv-txn.js';
import type { KvTxnOp, TxnAuthorizer, TxnOp, TxnOutcome } from '../../../src/txn/ops.js';
import { everyone, identityWith } from '../../support/identities.js';

const b64 = (text: string): string => Buffer.from(text).toString('base64');
const kvOp = (verb: string, key: string, fields: Partial<KvTxnOp> = {}): TxnOp => ({
  type: 'KV',
  verb,
  key,
  value: { Flags: 0, Value: b64(`${verb} ${key}`) },
  index: 0,
  session: '',
  ...fields,
});
const destroy = (id: string, verb = 'delete'): TxnOp => ({ type: 'Session', verb, id });

describe('session ops of a transaction', () => {
  let store: EmbeddedStore;
  let clock: FakeClock;
  let txn: KvTxn;
  beforeEach(async () => {
    store = await openEmbeddedStore({ log: silentLogger });
    clock = new FakeClock(1_000_000);
    txn = new KvTxn(store, clock, { datacenter: 'dc1' });
  });
  afterEach(() => store.close());

  async function session(input: SessionInput = {}): Promise<string> {
    const s = newSession(input, randomUUID(), { node: 'n1', nodeCheck: 'serfHealth' });
    await store.commit([{ op: 'set', table: SESSIONS_TABLE, key: s.ID, value: s }]);
    return s.ID;
  }
  const run = (ops: TxnOp[], authorizer: TxnAuthorizer = everyone.authorizer): Promise<TxnOutcome> =>
    txn.run(ops, 'consistent', authorizer);
  const ok = async (ops: TxnOp[], authorizer?: TxnAuthorizer) => {
    const outcome = await run(ops, authorizer);
    if ('errors' in outcome) throw new Error(JSON.stringify(outcome.errors));
    return outcome;
  };
  const entry = (key: string) => store.read<StoredKv>({ table: KV_TABLE, key }, 'consistent').then((r) => r.rows[0]);

  it('ends the session in one commit: its row goes, its keys are released, their lock-delay runs', async () => {
    const s = await session({ LockDelayMs: 5_000 });
    await ok([kvOp('lock', 'svc/a', { session: s }), kvOp('lock', 'svc/b', { session: s })]);
    const before = (await entry('svc/a'))?.modifyIndex ?? 0;
    const index = store.index;
    const { results } = await ok([destroy(s), kvOp('get', 'svc/a')]);
    expect(store.index).toBe(index + 1);
    expect(store.get(SESSIONS_TABLE, s)).toBeUndefined();
    // The get after the delete sees the key free; the key was written again, at the commit's index.
    expect(results).toEqual([
      { KV: expect.objectContaining({ Key: 'svc/a', LockIndex: 1, ModifyIndex: index + 1, Value: b64('lock svc/a') }) },
    ]);
    expect(results[0]).not.toHaveProperty('KV.Session');
    expect((await entry('svc/a'))?.modifyIndex).toBeGreaterThan(before);
    for (const key of ['svc/a', 'svc/b']) {
      expect(store.get(KV_LOCKS_TABLE, key)?.value).toEqual({ LockIndex: 1, DelayUntil: 1_005_000 });
    }
    // Another session waits out the lock-delay.
    const other = await session();
    expect(await run([kvOp('lock', 'svc/a', { session: other })])).toEqual({
      errors: [{ OpIndex: 0, What: 'failed to lock key "svc/a", lock is already held' }],
    });
    clock.advance(5_000);
    expect(await run([kvOp('lock', 'svc/a', { session: other })])).toMatchObject({
      results: [{ KV: { LockIndex: 2 } }],
    });
  });

  it('deletes the keys of a session with behavior delete', async () => {
    const s = await session({ Behavior: 'delete', LockDelayMs: 0 });
    await ok([kvOp('lock', 'svc/a', { session: s }), kvOp('set', 'svc/other')]);
    await ok([destroy(s)]);
    expect(await entry('svc/a')).toBeUndefined();
    expect(await entry('svc/other')).toBeDefined();
    expect(store.get(KV_LOCKS_TABLE, 'svc/a')?.value).toEqual({ LockIndex: 0 });
  });

  it('later ops of the transaction see the session gone; a failing one keeps it', async () => {
    const s = await session();
    expect(await run([destroy(s), kvOp('lock', 'svc/a', { session: s })])).toEqual({
      errors: [{ OpIndex: 1, What: `Invalid session ${JSON.stringify(s)}` }],
    });
    expect(store.get(SESSIONS_TABLE, s)).toBeDefined();
    // A lock taken and the session ended in one transaction: the key is free at the end.
    await ok([kvOp('lock', 'svc/a', { session: s }), destroy(s)]);
    expect(store.get(KV_LOCKS_TABLE, 'svc/a')?.value).toMatchObject({ LockIndex: 1 });
    expect(store.get(KV_LOCKS_TABLE, 'svc/a')?.value).not.toHaveProperty('Session');
  });

  it("Consul's errors: a session that does not exist, an unknown verb", async () => {
    const s = await session();
    expect(await run([destroy(randomUUID())])).toEqual({
      errors: [{ OpIndex: 0, What: 'failed to delete session: failed deleting session: not found' }],
    });
    expect(await run([destroy(s, 'renew')])).toEqual({
      errors: [{ OpIndex: 0, What: 'unknown session operation: renew' }],
    });
    expect(await run([destroy(s), destroy(s)])).toEqual({
      errors: [{ OpIndex: 1, What: 'failed to delete session: failed deleting session: not found' }],
    });
  });

  it("needs session:write on the session's node", async () => {
    const s = await session();
    const reader = await identityWith('session "n1" { policy = "read" } key_prefix "" { policy = "write" }');
    expect(await run([kvOp('set', 'x'), destroy(s)], reader.authorizer)).toEqual({
      errors: [{ OpIndex: 1, What: 'Permission denied' }],
    });
    const writer = await identityWith('session "n1" { policy = "write" }');
    await ok([destroy(s)], writer.authorizer);
    expect(store.get(SESSIONS_TABLE, s)).toBeUndefined();
  });

  it('plays again when the session changed under it', async () => {
    const s = await session();
    await ok([kvOp('lock', 'svc/a', { session: s })]);
    const commit = store.commit.bind(store);
    let raced = false;
    store.commit = async (ops) => {
      if (!raced) {
        raced = true;
        // Another agent takes a second key for the session just before the transaction commits.
        await commit([
          { op: 'set', table: KV_LOCKS_TABLE, key: 'svc/b', value: { Session: s, LockIndex: 1, LockDelayMs: 15_000 } },
          { op: 'set', table: SESSIONS_TABLE, key: s, value: store.get(SESSIONS_TABLE, s)?.value },
        ]);
      }
      return commit(ops);
    };
    await ok([destroy(s)]);
    expect(raced).toBe(true);
    expect(store.get(KV_LOCKS_TABLE, 'svc/b')?.value).toEqual({ LockIndex: 1, DelayUntil: 1_015_000 });
  });
});
