// One play of a transaction's KV and session ops (Consul's txnKVS and txnSession) over what they
// read: the keys and prefixes they name (the cluster's KV from etcd), the lock rows beside them and
// the sessions they use, from this agent's view. Each op sees the ones before it; what they write is
// collected for the transaction's one commit, and every row read is guarded there. A session's delete
// ends it as Sessions.end does, in the same commit: its row goes, and each key it holds is released
// (or deleted, with behavior `delete`) and kept from a new holder for its lock-delay.
import { KV_TABLE, toEntryJson, type KvEntryJson, type StoredKv } from '../kv/entries.js';
import { KV_LOCKS_TABLE, lockDelayMs, SESSIONS_TABLE, type StoredLock, type StoredSession } from '../sessions/model.js';
import { compareKeys } from '../state/sorted-by-key.js';
import type { ReadConsistency, Row, StateStore, WriteOp } from '../state/types.js';
import { PENDING, type KvTxnOp, type SessionTxnOp, type TxnAuthorizer, type TxnResult } from './ops.js';

const TREES: ReadonlySet<string> = new Set(['get-tree', 'delete-tree']);

interface Entry {
  readonly value: StoredKv;
  readonly createIndex: number;
  readonly modifyIndex: number;
}

export class KvPlay {
  private readonly kv = new Map<string, Entry | undefined>();
  /** As read: guarded at these indexes (0: absent). */
  private readonly readKv = new Map<string, number>();
  private readonly locks = new Map<string, StoredLock | undefined>();
  private readonly readLocks = new Map<string, number>();
  /** Sessions as the play has them (undefined: absent or deleted by an op before). */
  private readonly sessions = new Map<string, Row<StoredSession> | undefined>();
  private readonly readSessions = new Map<string, number>();
  readonly writes: WriteOp[] = [];
  revision = 0;

  constructor(
    private readonly store: StateStore,
    private readonly now: number,
  ) {}

  async load(ops: readonly (KvTxnOp | SessionTxnOp)[], consistency: ReadConsistency): Promise<void> {
    const kvOps = ops.filter((op): op is KvTxnOp => op.type === 'KV');
    const keys = new Set(kvOps.filter((op) => !TREES.has(op.verb)).map((op) => op.key));
    const prefixes = new Set(kvOps.filter((op) => TREES.has(op.verb)).map((op) => op.key));
    // A session's delete changes the keys it holds: those are read (and guarded) as the ops' own.
    for (const op of ops) {
      if (op.type !== 'Session') continue;
      this.session(op.id);
      for (const row of this.store.list<StoredLock>(KV_LOCKS_TABLE, ''))
        if (row.value.Session === op.id) keys.add(row.key);
    }
    const reads = [
      ...[...keys].map((key) => this.store.read<StoredKv>({ table: KV_TABLE, key }, consistency)),
      ...[...prefixes].map((prefix) => this.store.read<StoredKv>({ table: KV_TABLE, prefix }, consistency)),
    ];
    for (const read of await Promise.all(reads)) {
      this.revision = Math.max(this.revision, read.revision);
      for (const row of read.rows) this.keep(row);
    }
    for (const key of keys) if (!this.readKv.has(key)) this.readKv.set(key, 0);
    for (const key of keys) if (!this.kv.has(key)) this.kv.set(key, undefined);
    // The lock half: this agent's view, as KV reads show it (its guards catch a view behind).
    for (const key of keys) this.keepLock(key);
    for (const prefix of prefixes)
      for (const row of this.store.list<StoredLock>(KV_LOCKS_TABLE, prefix)) this.keepLock(row.key);
  }

  /** Guards of everything read: the commit applies only to the state the play saw. */
  guards(): WriteOp[] {
    const check = (table: string, reads: Map<string, number>): WriteOp[] =>
      [...reads].map(([key, ifIndex]) => ({ op: 'check', table, key, ifIndex }));
    return [
      ...check(KV_TABLE, this.readKv),
      ...check(KV_LOCKS_TABLE, this.readLocks),
      ...check(SESSIONS_TABLE, this.readSessions),
    ];
  }

  /**
   * Consul's pre-check of a KV op (kvsPreApply): reads need key:read, writes key:write, a tree
   * delete write on the prefix and on every rule beneath it. Gets are refused, not filtered.
   */
  vetKv(op: KvTxnOp, authorizer: TxnAuthorizer): string | undefined {
    let allowed: boolean;
    switch (op.verb) {
      case 'get':
      case 'get-tree':
      case 'check-index':
      case 'check-session':
      case 'check-not-exists':
        allowed = authorizer.allowed('key', 'read', op.key);
        break;
      case 'delete-tree':
        allowed = authorizer.keyWritePrefix(op.key);
        break;
      default:
        allowed = authorizer.allowed('key', 'write', op.key);
    }
    return allowed ? undefined : 'Permission denied';
  }

  /** Consul's vetSessionTxnOp: session:write on the node of the session deleted; an unknown one is the op's to refuse. */
  vetSession(op: SessionTxnOp, authorizer: TxnAuthorizer): string | undefined {
    if (op.verb !== 'delete') return `unknown session operation: ${op.verb}`;
    const session = this.session(op.id);
    if (session === undefined || authorizer.allowed('session', 'write', session.value.Node)) return undefined;
    return 'Permission denied';
  }

  /** Plays a session op (a delete): what failed, if it did. */
  applySession(op: SessionTxnOp): string | undefined {
    if (op.verb !== 'delete') return `unknown Session verb ${JSON.stringify(op.verb)}`;
    const session = this.session(op.id);
    // Consul's error for a row that is not there (memdb's ErrNotFound), behind txnSession's prefix.
    if (session === undefined) return 'failed to delete session: failed deleting session: not found';
    this.sessions.set(op.id, undefined);
    this.writes.push({ op: 'delete', table: SESSIONS_TABLE, key: op.id });
    for (const [key, lock] of this.locks) if (lock?.Session === op.id) this.releaseEnded(key, lock);
    return undefined;
  }

  /** Plays one KV op: its results pushed, or what failed. */
  applyKv(op: KvTxnOp, results: TxnResult[]): string | undefined {
    const key = op.key;
    const entry = this.kv.get(key);
    const lock = this.locks.get(key);
    const written = (value: StoredKv): KvEntryJson => {
      this.kv.set(key, { value, createIndex: entry?.createIndex ?? PENDING, modifyIndex: PENDING });
      return this.json(key, false);
    };
    switch (op.verb) {
      case 'get':
        if (entry === undefined) return `key ${JSON.stringify(key)} doesn't exist`;
        results.push({ KV: this.json(key, true) });
        return undefined;
      case 'get-tree':
        for (const k of this.keysUnder(key)) results.push({ KV: this.json(k, true) });
        return undefined;
      case 'check-index':
        if (entry === undefined) return `key ${JSON.stringify(key)} doesn't exist`;
        if (entry.modifyIndex !== op.index) return `current modify index ${entry.modifyIndex} != ${op.index}`;
        results.push({ KV: this.json(key, false) });
        return undefined;
      case 'check-not-exists':
        return entry === undefined ? undefined : `key ${JSON.stringify(key)} exists`;
      case 'check-session':
        if (entry === undefined) return `failed to check session, key ${JSON.stringify(key)} doesn't exist`;
        if ((lock?.Session ?? '') !== op.session) {
          return `failed session check for key ${JSON.stringify(key)}, current session ${JSON.stringify(lock?.Session ?? '')} != ${JSON.stringify(op.session)}`;
        }
        results.push({ KV: this.json(key, false) });
        return undefined;
      case 'set':
        this.writes.push({ op: 'set', table: KV_TABLE, key, value: op.value });
        results.push({ KV: written(op.value) });
        return undefined;
      case 'cas':
        if ((entry?.modifyIndex ?? 0) !== op.index) return `failed to set key ${JSON.stringify(key)}, index is stale`;
        this.writes.push({ op: 'set', table: KV_TABLE, key, value: op.value });
        results.push({ KV: written(op.value) });
        return undefined;
      case 'lock':
        return this.lock(op, results, written);
      case 'unlock':
        if (lock?.Session === undefined || lock.Session !== op.session) {
          return `failed to unlock key ${JSON.stringify(key)}, lock isn't held, or is held by another session`;
        }
        this.setLock(key, { LockIndex: lock.LockIndex });
        this.writes.push({ op: 'set', table: KV_TABLE, key, value: { ...op.value, LockWrite: true } });
        results.push({ KV: written(op.value) });
        return undefined;
      case 'delete':
        this.delete(key);
        return undefined;
      case 'delete-cas':
        if (entry === undefined || entry.modifyIndex !== op.index) {
          // Consul: a delete-cas of a key already gone holds (its index 0 matches nothing to delete).
          if (entry === undefined && op.index === 0) return undefined;
          return `failed to delete key ${JSON.stringify(key)}, index is stale`;
        }
        this.delete(key);
        return undefined;
      case 'delete-tree': {
        for (const k of this.keysUnder(key)) this.kv.set(k, undefined);
        for (const [k, l] of this.locks) if (k.startsWith(key) && l !== undefined) this.locks.set(k, undefined);
        this.writes.push({ op: 'delete-prefix', table: KV_TABLE, prefix: key });
        if (this.store.list(KV_LOCKS_TABLE, key).length > 0) {
          this.writes.push({ op: 'delete-prefix', table: KV_LOCKS_TABLE, prefix: key });
        }
        return undefined;
      }
      default:
        return `unknown KV verb ${JSON.stringify(op.verb)}`;
    }
  }

  private lock(op: KvTxnOp, results: TxnResult[], written: (value: StoredKv) => KvEntryJson): string | undefined {
    const key = op.key;
    if (op.session === '') return 'Missing session';
    const session = this.session(op.session);
    if (session === undefined) return `Invalid session ${JSON.stringify(op.session)}`;
    const lock = this.locks.get(key);
    const held = lock?.Session === op.session;
    if (!held) {
      const delayed = lock?.DelayUntil !== undefined && this.now < lock.DelayUntil;
      if (lock?.Session !== undefined || delayed)
        return `failed to lock key ${JSON.stringify(key)}, lock is already held`;
      this.setLock(key, {
        Session: op.session,
        LockIndex: (lock?.LockIndex ?? 0) + 1,
        Behavior: session.value.Behavior,
        LockDelayMs: lockDelayMs(session.value),
      });
    }
    this.writes.push({ op: 'set', table: KV_TABLE, key, value: { ...op.value, LockWrite: true } });
    results.push({ KV: written(op.value) });
    return undefined;
  }

  /**
   * What a session's end does to a key it holds (KvLocks.releaseHeldBy): with behavior `delete`
   * the key goes, else it is written again as it is (its ModifyIndex moves, its watchers wake); the
   * lock is free, and no session may take it before the holder's lock-delay has passed.
   */
  private releaseEnded(key: string, lock: StoredLock): void {
    const delayMs = lock.LockDelayMs ?? 0;
    const until = delayMs > 0 ? { DelayUntil: Math.ceil(this.now + delayMs) } : {};
    const entry = this.kv.get(key);
    if (lock.Behavior === 'delete') {
      this.setLock(key, { LockIndex: 0, ...until });
      this.kv.set(key, undefined);
      this.writes.push({ op: 'delete', table: KV_TABLE, key });
      return;
    }
    this.setLock(key, { LockIndex: lock.LockIndex, ...until });
    if (entry === undefined) return;
    this.kv.set(key, { ...entry, modifyIndex: PENDING });
    this.writes.push({ op: 'set', table: KV_TABLE, key, value: { ...entry.value, LockWrite: true } });
  }

  /** A session as the play has it, read from the view (and guarded) the first time. */
  private session(id: string): Row<StoredSession> | undefined {
    if (this.sessions.has(id)) return this.sessions.get(id);
    const row = this.store.get<StoredSession>(SESSIONS_TABLE, id);
    this.sessions.set(id, row);
    // An absent session is guarded too: one made meanwhile would change what the ops answered.
    this.readSessions.set(id, row?.modifyIndex ?? 0);
    return row;
  }

  private delete(key: string): void {
    this.kv.set(key, undefined);
    this.writes.push({ op: 'delete', table: KV_TABLE, key });
    if (this.locks.get(key) !== undefined || this.readLocks.get(key) !== 0) {
      this.locks.set(key, undefined);
      this.writes.push({ op: 'delete', table: KV_LOCKS_TABLE, key });
    }
  }

  private setLock(key: string, lock: StoredLock): void {
    this.locks.set(key, lock);
    this.writes.push({ op: 'set', table: KV_LOCKS_TABLE, key, value: lock });
  }

  private keep(row: Row<StoredKv>): void {
    this.kv.set(row.key, { value: row.value, createIndex: row.createIndex, modifyIndex: row.modifyIndex });
    this.readKv.set(row.key, row.modifyIndex);
  }

  private keepLock(key: string): void {
    if (this.readLocks.has(key)) return;
    const row = this.store.get<StoredLock>(KV_LOCKS_TABLE, key);
    this.locks.set(key, row?.value);
    this.readLocks.set(key, row?.modifyIndex ?? 0);
  }

  /** Keys present under `prefix` now, sorted. */
  private keysUnder(prefix: string): string[] {
    return [...this.kv]
      .filter(([k, e]) => e !== undefined && k.startsWith(prefix))
      .map(([k]) => k)
      .sort(compareKeys);
  }

  private json(key: string, withValue: boolean): KvEntryJson {
    const entry = this.kv.get(key) as Entry;
    const { LockWrite: _, ...value } = entry.value;
    const json = toEntryJson(
      { key, value, createIndex: entry.createIndex, modifyIndex: entry.modifyIndex },
      this.locks.get(key),
    );
    return withValue ? json : { ...json, Value: null };
  }
}
