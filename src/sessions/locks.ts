// KV locks as Consul's KVS lock and unlock apply them (agent/consul/state/kvs.go), each one commit
// of the store (one etcd transaction in a cluster): acquire takes the key's lock row by its
// ModifyIndex and holds only while its session's row is still there (a `check` op), so two holders
// of one key cannot exist whichever agents they talk to (docs/decisions.md#sessions). A guard that
// failed because the view was behind is tried again once the commit's index is in the view.
import type { Clock } from '../core/clock.js';
import { agentError } from '../core/errors.js';
import { KV_TABLE, type StoredKv } from '../kv/entries.js';
import type { Row, StateStore, WriteOp } from '../state/types.js';
import { KV_LOCKS_TABLE, lockDelayMs, SESSIONS_TABLE, type StoredLock, type StoredSession } from './model.js';

/** Tries of one lock operation whose guard failed on a row that moved under it. */
const TRIES = 8;

export class KvLocks {
  constructor(
    private readonly store: StateStore,
    private readonly clock: Clock,
  ) {}

  /** The lock row of a KV key, if the key was ever locked. */
  lockOf(key: string): StoredLock | undefined {
    return this.store.get<StoredLock>(KV_LOCKS_TABLE, key)?.value;
  }

  /**
   * Takes `key` for `sessionId` and sets its value: false when another session holds it or its
   * lock-delay runs. The holder taking it again updates the value and keeps LockIndex.
   */
  async acquire(key: string, sessionId: string, value: StoredKv): Promise<boolean> {
    for (let i = 0; i < TRIES; i++) {
      const session = this.store.get<StoredSession>(SESSIONS_TABLE, sessionId);
      if (session === undefined) throw agentError('KV_INVALID_SESSION', { session: sessionId });
      const row = this.store.get<StoredLock>(KV_LOCKS_TABLE, key);
      const lock = row?.value;
      const ops: WriteOp[] = [{ op: 'check', table: SESSIONS_TABLE, key: sessionId, ifIndex: session.modifyIndex }];
      if (lock?.Session === sessionId) {
        ops.push({ op: 'check', table: KV_LOCKS_TABLE, key, ifIndex: row?.modifyIndex ?? 0 });
      } else {
        if (lock?.Session !== undefined) return false;
        if (lock?.DelayUntil !== undefined && this.clock.now() < lock.DelayUntil) return false;
        const taken: StoredLock = {
          Session: sessionId,
          LockIndex: (lock?.LockIndex ?? 0) + 1,
          Behavior: session.value.Behavior,
          LockDelayMs: lockDelayMs(session.value),
        };
        ops.push({ op: 'set', table: KV_LOCKS_TABLE, key, value: taken, ifIndex: row?.modifyIndex ?? 0 });
      }
      ops.push({ op: 'set', table: KV_TABLE, key, value: { ...value, LockWrite: true } });
      if ((await this.store.commit(ops)).ok) return true;
    }
    return false;
  }

  /** Lets go of `key` held by `sessionId` and sets its value: false when that session does not hold it. */
  async release(key: string, sessionId: string, value: StoredKv): Promise<boolean> {
    for (let i = 0; i < TRIES; i++) {
      const row = this.store.get<StoredLock>(KV_LOCKS_TABLE, key);
      if (row === undefined || row.value.Session !== sessionId) return false;
      const free: StoredLock = { LockIndex: row.value.LockIndex };
      const ops: WriteOp[] = [
        { op: 'set', table: KV_LOCKS_TABLE, key, value: free, ifIndex: row.modifyIndex },
        { op: 'set', table: KV_TABLE, key, value: { ...value, LockWrite: true } },
      ];
      if ((await this.store.commit(ops)).ok) return true;
    }
    return false;
  }

  /** Keys locked by `sessionId`, as this agent's view has them. */
  heldBy(sessionId: string): Row<StoredLock>[] {
    return this.store.list<StoredLock>(KV_LOCKS_TABLE, '').filter((row) => row.value.Session === sessionId);
  }

  /**
   * What a session's end does to the keys it holds (Consul's deleteSessionTxn): each is released,
   * or deleted with Behavior `delete`, and no session may take it for the holder's lock-delay.
   * Safe to run from several agents at once: each key's change is guarded by its lock row's index.
   */
  async releaseHeldBy(sessionId: string): Promise<void> {
    for (let i = 0; i < TRIES; i++) {
      const held = this.heldBy(sessionId);
      if (held.length === 0) return;
      for (const row of held) await this.releaseEnded(row);
    }
  }

  /** Deletes lock rows that no longer mean anything: free, delay passed, for a key deleted. */
  async sweep(): Promise<void> {
    const now = this.clock.now();
    for (const row of this.store.list<StoredLock>(KV_LOCKS_TABLE, '')) {
      const lock = row.value;
      if (lock.Session !== undefined || lock.LockIndex !== 0 || (lock.DelayUntil ?? 0) > now) continue;
      await this.store.commit([{ op: 'delete', table: KV_LOCKS_TABLE, key: row.key, ifIndex: row.modifyIndex }]);
    }
  }

  /**
   * Deletes KV `key` (at ModifyIndex `cas` when given) and its lock with it, as Consul's delete
   * ends a key's lock. Where this view knows no lock, the delete holds only while there is none; a
   * guard that failed for a lock the view had not yet seen is tried again. False: `cas` failed.
   */
  async deleteKey(key: string, cas?: number): Promise<boolean> {
    for (let i = 0; i < TRIES; i++) {
      const row = this.store.get(KV_LOCKS_TABLE, key);
      const lockOp: WriteOp =
        row === undefined
          ? { op: 'check', table: KV_LOCKS_TABLE, key, ifIndex: 0 }
          : { op: 'delete', table: KV_LOCKS_TABLE, key, ifIndex: row.modifyIndex };
      const kvOp: WriteOp =
        cas === undefined
          ? { op: 'delete', table: KV_TABLE, key }
          : { op: 'delete', table: KV_TABLE, key, ifIndex: cas };
      if ((await this.store.commit([kvOp, lockOp])).ok) return true;
      // The lock row is as it was: the check-and-set failed on the entry.
      if (this.store.get(KV_LOCKS_TABLE, key)?.modifyIndex === row?.modifyIndex) return false;
    }
    return false;
  }

  /** Deletes every KV key under `prefix`, and the locks this view knows of among them. */
  async deletePrefix(prefix: string): Promise<void> {
    const locks: WriteOp[] =
      this.store.list(KV_LOCKS_TABLE, prefix).length === 0
        ? []
        : [{ op: 'delete-prefix', table: KV_LOCKS_TABLE, prefix }];
    await this.store.commit([{ op: 'delete-prefix', table: KV_TABLE, prefix }, ...locks]);
  }

  private async releaseEnded(row: Row<StoredLock>): Promise<void> {
    const lock = row.value;
    const delayMs = lock.LockDelayMs ?? 0;
    const until = delayMs > 0 ? { DelayUntil: Math.ceil(this.clock.now() + delayMs) } : {};
    if (lock.Behavior === 'delete') {
      // The key goes; the row stays as long as its lock-delay runs (then sweep deletes it).
      await this.store.commit([
        { op: 'set', table: KV_LOCKS_TABLE, key: row.key, value: { LockIndex: 0, ...until }, ifIndex: row.modifyIndex },
        { op: 'delete', table: KV_TABLE, key: row.key },
      ]);
      return;
    }
    // The entry is written again as it is, so that its ModifyIndex moves and its watchers wake.
    const entry = (await this.store.read<StoredKv>({ table: KV_TABLE, key: row.key }, 'consistent')).rows[0];
    await this.store.commit([
      {
        op: 'set',
        table: KV_LOCKS_TABLE,
        key: row.key,
        value: { LockIndex: lock.LockIndex, ...until },
        ifIndex: row.modifyIndex,
      },
      ...(entry === undefined
        ? []
        : [
            {
              op: 'set',
              table: KV_TABLE,
              key: row.key,
              value: { ...entry.value, LockWrite: true },
              ifIndex: entry.modifyIndex,
            } as const,
          ]),
    ]);
  }
}
