// KV locks (src/sessions/locks.ts) on an in-memory embedded store and a fake clock: acquire and
// release as Consul's KVS lock and unlock apply them (LockIndex, Session), what a session's end
// does to its keys (release or delete, then the lock-delay), a key's delete taking its lock, and
// the sweep of lock rows that no longer mean anything.
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeClock } from '../../../src/core/clock.js';
import { silentLogger } from '../../../src/core/log.js';
import { KV_TABLE, type StoredKv } from '../../../src/kv/entries.js';
import { KvLocks } from '../../../src/sessions/locks.js';
import {
  KV_LOCKS_TABLE,
  newSession,
  SESSIONS_TABLE,
  type SessionInput,
  type StoredLock,
} from '../../../src/sessions/model.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../../src/state/embedded/index.js';
import { agentRejectionOf } from '../../support/errors.js';

const kv = (text: string): StoredKv => ({ Flags: 0, Value: Buffer.from(text).toString('base64') });

describe('KvLocks', () => {
  let store: EmbeddedStore;
  let clock: FakeClock;
  let locks: KvLocks;
  beforeEach(async () => {
    store = await openEmbeddedStore({ log: silentLogger });
    clock = new FakeClock(1_000_000);
    locks = new KvLocks(store, clock);
  });
  afterEach(() => store.close());

  /** A session's row, as Sessions.create writes it. */
  async function session(input: SessionInput = {}): Promise<string> {
    const s = newSession(input, randomUUID(), { node: 'n1', nodeCheck: 'serfHealth' });
    await store.commit([{ op: 'set', table: SESSIONS_TABLE, key: s.ID, value: s }]);
    return s.ID;
  }

  /** Ends a session as Sessions.end does: its row goes, then its keys are let go. */
  async function end(id: string): Promise<void> {
    await store.commit([{ op: 'delete', table: SESSIONS_TABLE, key: id }]);
    await locks.releaseHeldBy(id);
  }

  const valueOf = (key: string): string | null | undefined => store.get<StoredKv>(KV_TABLE, key)?.value.Value;
  const text = (s: string): string => Buffer.from(s).toString('base64');

  describe('acquire and release', () => {
    it('takes a free key for a session, sets its value, and counts the take in LockIndex', async () => {
      const s = await session({ LockDelayMs: 5_000 });
      expect(await locks.acquire('k', s, kv('v1'))).toBe(true);
      expect(locks.lockOf('k')).toEqual({ Session: s, LockIndex: 1, Behavior: 'release', LockDelayMs: 5_000 });
      expect(valueOf('k')).toBe(text('v1'));
      expect(locks.heldBy(s).map((row) => row.key)).toEqual(['k']);
    });

    it('lets the holder take it again: the value changes, LockIndex does not', async () => {
      const s = await session();
      await locks.acquire('k', s, kv('v1'));
      const lockRow = store.get(KV_LOCKS_TABLE, 'k');
      expect(await locks.acquire('k', s, kv('v2'))).toBe(true);
      expect(locks.lockOf('k')?.LockIndex).toBe(1);
      expect(store.get(KV_LOCKS_TABLE, 'k')?.modifyIndex).toBe(lockRow?.modifyIndex);
      expect(valueOf('k')).toBe(text('v2'));
    });

    it('refuses another session while the key is held, and writes nothing', async () => {
      const a = await session();
      const b = await session();
      await locks.acquire('k', a, kv('a'));
      const index = store.index;
      expect(await locks.acquire('k', b, kv('b'))).toBe(false);
      expect(store.index).toBe(index);
      expect(locks.lockOf('k')?.Session).toBe(a);
      expect(valueOf('k')).toBe(text('a'));
    });

    it('refuses a session that does not exist with KV_INVALID_SESSION', async () => {
      const missing = randomUUID();
      expect(await agentRejectionOf(locks.acquire('k', missing, kv('v')))).toEqual([
        'KV_INVALID_SESSION',
        `Invalid session "${missing}"`,
      ]);
      expect(store.get(KV_TABLE, 'k')).toBeUndefined();
    });

    it('releases for the holder only: the value is set, the Session cleared, LockIndex kept', async () => {
      const a = await session();
      const b = await session();
      await locks.acquire('k', a, kv('a'));
      expect(await locks.release('k', b, kv('b'))).toBe(false);
      expect(await locks.release('never-locked', a, kv('x'))).toBe(false);
      expect(valueOf('k')).toBe(text('a'));
      expect(await locks.release('k', a, kv('free'))).toBe(true);
      expect(locks.lockOf('k')).toEqual({ LockIndex: 1 });
      expect(valueOf('k')).toBe(text('free'));
      expect(locks.heldBy(a)).toEqual([]);
      // A release is no end of the session: no lock-delay, and the next take counts on.
      expect(await locks.acquire('k', b, kv('b'))).toBe(true);
      expect(locks.lockOf('k')).toMatchObject({ Session: b, LockIndex: 2 });
    });

    it('takes nothing when the session ends between its read and its commit', async () => {
      const s = await session();
      const commit = store.commit.bind(store);
      // The session's row is deleted just before the acquire's commit reaches the store.
      vi.spyOn(store, 'commit').mockImplementationOnce(async (ops) => {
        await commit([{ op: 'delete', table: SESSIONS_TABLE, key: s }]);
        return commit(ops);
      });
      expect((await agentRejectionOf(locks.acquire('k', s, kv('v'))))[0]).toBe('KV_INVALID_SESSION');
      expect(store.get(KV_LOCKS_TABLE, 'k')).toBeUndefined();
      expect(store.get(KV_TABLE, 'k')).toBeUndefined();
    });
  });

  describe("a session's end", () => {
    it('releases its keys, keeps their values, and holds them for its lock-delay', async () => {
      const a = await session({ LockDelayMs: 15_000 });
      const b = await session();
      await locks.acquire('k', a, kv('a'));
      const entry = store.get(KV_TABLE, 'k');
      await end(a);
      expect(locks.lockOf('k')).toEqual({ LockIndex: 1, DelayUntil: clock.now() + 15_000 });
      // The entry is written again so that its watchers wake; its value stays.
      expect(store.get(KV_TABLE, 'k')?.modifyIndex).toBeGreaterThan(entry?.modifyIndex ?? 0);
      expect(valueOf('k')).toBe(text('a'));
      clock.advance(14_999);
      expect(await locks.acquire('k', b, kv('b'))).toBe(false);
      clock.advance(1);
      expect(await locks.acquire('k', b, kv('b'))).toBe(true);
      expect(locks.lockOf('k')).toMatchObject({ Session: b, LockIndex: 2 });
    });

    it('lets another session take the key at once when the lock-delay is 0', async () => {
      const a = await session({ LockDelayMs: 0 });
      const b = await session();
      await locks.acquire('k', a, kv('a'));
      await end(a);
      expect(locks.lockOf('k')).toEqual({ LockIndex: 1 });
      expect(await locks.acquire('k', b, kv('b'))).toBe(true);
    });

    it('deletes the keys of a session with Behavior delete, and holds them for its lock-delay', async () => {
      const a = await session({ Behavior: 'delete', LockDelayMs: 1_000 });
      const b = await session();
      await locks.acquire('k', a, kv('a'));
      await locks.acquire('other', a, kv('a'));
      await end(a);
      expect(store.get(KV_TABLE, 'k')).toBeUndefined();
      expect(store.get(KV_TABLE, 'other')).toBeUndefined();
      expect(locks.lockOf('k')).toEqual({ LockIndex: 0, DelayUntil: clock.now() + 1_000 });
      expect(await locks.acquire('k', b, kv('b'))).toBe(false);
      clock.advance(1_000);
      expect(await locks.acquire('k', b, kv('b'))).toBe(true);
      expect(locks.lockOf('k')).toMatchObject({ Session: b, LockIndex: 1 });
    });

    it('leaves the keys other sessions hold, and is done at once for a session holding none', async () => {
      const a = await session();
      const b = await session();
      await locks.acquire('a', a, kv('a'));
      await locks.acquire('b', b, kv('b'));
      await end(a);
      expect(locks.lockOf('b')).toMatchObject({ Session: b, LockIndex: 1 });
      const index = store.index;
      await locks.releaseHeldBy(a);
      await locks.releaseHeldBy(randomUUID());
      expect(store.index).toBe(index);
    });
  });

  describe('deleteKey', () => {
    it('deletes the entry and its lock row, held or not', async () => {
      const s = await session();
      await locks.acquire('held', s, kv('v'));
      await store.commit([{ op: 'set', table: KV_TABLE, key: 'plain', value: kv('p') }]);
      expect(await locks.deleteKey('held')).toBe(true);
      expect(await locks.deleteKey('plain')).toBe(true);
      expect(store.get(KV_TABLE, 'held')).toBeUndefined();
      expect(store.get(KV_LOCKS_TABLE, 'held')).toBeUndefined();
      expect(store.get(KV_TABLE, 'plain')).toBeUndefined();
      // Taken again, the key's LockIndex starts over.
      expect(await locks.acquire('held', s, kv('v'))).toBe(true);
      expect(locks.lockOf('held')?.LockIndex).toBe(1);
    });

    it('deletes at the ModifyIndex given (cas) only, lock row included', async () => {
      const s = await session();
      await locks.acquire('k', s, kv('v'));
      const entry = store.get(KV_TABLE, 'k');
      expect(await locks.deleteKey('k', (entry?.modifyIndex ?? 0) + 1)).toBe(false);
      expect(store.get(KV_TABLE, 'k')).toEqual(entry);
      expect(locks.lockOf('k')?.Session).toBe(s);
      expect(await locks.deleteKey('k', entry?.modifyIndex)).toBe(true);
      expect(store.get(KV_TABLE, 'k')).toBeUndefined();
      expect(store.get(KV_LOCKS_TABLE, 'k')).toBeUndefined();
      expect(await locks.deleteKey('missing', 5)).toBe(false);
    });

    it('deletes the entries and locks under a prefix, and only there', async () => {
      const s = await session();
      await locks.acquire('app/a', s, kv('a'));
      await locks.acquire('apple', s, kv('b'));
      await store.commit([{ op: 'set', table: KV_TABLE, key: 'app/b', value: kv('c') }]);
      await locks.deletePrefix('app/');
      expect(store.list(KV_TABLE, '').map((row) => row.key)).toEqual(['apple']);
      expect(store.list(KV_LOCKS_TABLE, '').map((row) => row.key)).toEqual(['apple']);
    });
  });

  describe('sweep', () => {
    it('deletes free lock rows of deleted keys once their lock-delay passed, and no others', async () => {
      const ends = await session({ Behavior: 'delete', LockDelayMs: 1_000 });
      const endsAtOnce = await session({ Behavior: 'delete', LockDelayMs: 0 });
      const releases = await session();
      const holds = await session();
      await locks.acquire('delayed', ends, kv('v'));
      await locks.acquire('deleted', endsAtOnce, kv('v'));
      await locks.acquire('released', releases, kv('v'));
      await locks.acquire('held', holds, kv('v'));
      await end(ends);
      await end(endsAtOnce);
      await locks.release('released', releases, kv('v'));
      await locks.sweep();
      expect(store.list<StoredLock>(KV_LOCKS_TABLE, '').map((row) => row.key)).toEqual(['delayed', 'held', 'released']);
      clock.advance(1_000);
      await locks.sweep();
      expect(store.list<StoredLock>(KV_LOCKS_TABLE, '').map((row) => row.key)).toEqual(['held', 'released']);
    });
  });
});
