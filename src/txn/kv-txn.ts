// Consul's KV transaction (agent/consul/state/txn.go: txnKVS) run as one commit of the store (one etcd
// transaction in a cluster): the keys, prefixes, lock rows and sessions the ops name are read first,
// the ops are played in order over that copy (each failing one gives Consul's error with its index,
// and then nothing is written), and what they write goes out in one commit guarded by the index of
// everything read. A guard that failed (a concurrent write) plays the transaction again on fresh
// reads, so its results are always those of the state it applied to. docs/decisions.md#txn.
import type { Clock } from '../core/clock.js';
import { agentError } from '../core/errors.js';
import { KV_TABLE, toEntryJson, type KvEntryJson, type StoredKv } from '../kv/entries.js';
import { KV_LOCKS_TABLE, lockDelayMs, SESSIONS_TABLE, type StoredLock, type StoredSession } from '../sessions/model.js';
import { compareKeys } from '../state/sorted-by-key.js';
import type { ReadConsistency, Row, StateStore, WriteOp } from '../state/types.js';

/** Verbs that write: a transaction of the others is read-only (Consul's Txn.Read, `?stale` allowed). */
const WRITES: ReadonlySet<string> = new Set(['set', 'cas', 'lock', 'unlock', 'delete', 'delete-tree', 'delete-cas']);
const TREES: ReadonlySet<string> = new Set(['get-tree', 'delete-tree']);

export interface KvTxnOp {
  /** One of KV_VERBS; another fails as Consul's does, `unknown KV verb`. */
  readonly verb: string;
  readonly key: string;
  readonly value: StoredKv;
  /** ModifyIndex for cas, check-index and delete-cas (0 for cas: only if absent). */
  readonly index: number;
  readonly session: string;
}

export interface TxnError {
  readonly OpIndex: number;
  readonly What: string;
}

export type TxnOutcome =
  { readonly results: { KV: KvEntryJson }[]; readonly index: number } | { readonly errors: TxnError[] };

/** Plays of one transaction whose guard failed before it is refused as conflicting. */
const TRIES = 8;

export function isReadOnly(ops: readonly KvTxnOp[]): boolean {
  return !ops.some((op) => WRITES.has(op.verb));
}

/** An index the commit takes, known once it is made: results carry this until then. */
const PENDING = -1;

interface Entry {
  readonly value: StoredKv;
  readonly createIndex: number;
  readonly modifyIndex: number;
}

export class KvTxn {
  constructor(
    private readonly store: StateStore,
    private readonly clock: Clock,
  ) {}

  async run(ops: readonly KvTxnOp[], consistency: ReadConsistency): Promise<TxnOutcome> {
    for (let i = 0; i < TRIES; i++) {
      const play = new Play(this.store, this.clock.now());
      await play.load(ops, isReadOnly(ops) ? consistency : 'consistent');
      const errors: TxnError[] = [];
      const results: { KV: KvEntryJson }[] = [];
      ops.forEach((op, at) => {
        const what = play.apply(op, results);
        if (what !== undefined) errors.push({ OpIndex: at, What: what });
      });
      if (errors.length > 0) return { errors };
      if (play.writes.length === 0) return { results, index: play.revision };
      const commit = await this.store.commit([...play.guards(), ...play.writes]);
      if (!commit.ok) continue;
      for (const { KV } of results) {
        if (KV.CreateIndex === PENDING) KV.CreateIndex = commit.index;
        if (KV.ModifyIndex === PENDING) KV.ModifyIndex = commit.index;
      }
      return { results, index: commit.index };
    }
    throw agentError('TXN_CONFLICT', { tries: TRIES });
  }
}

/** One play of the ops over what was read: the state they see, what they write, what guards it. */
class Play {
  private readonly kv = new Map<string, Entry | undefined>();
  /** As read: guarded at these indexes (0: absent). */
  private readonly readKv = new Map<string, number>();
  private readonly locks = new Map<string, StoredLock | undefined>();
  private readonly readLocks = new Map<string, number>();
  private readonly readSessions = new Map<string, number>();
  readonly writes: WriteOp[] = [];
  revision = 0;

  constructor(
    private readonly store: StateStore,
    private readonly now: number,
  ) {}

  async load(ops: readonly KvTxnOp[], consistency: ReadConsistency): Promise<void> {
    const keys = new Set(ops.filter((op) => !TREES.has(op.verb)).map((op) => op.key));
    const prefixes = new Set(ops.filter((op) => TREES.has(op.verb)).map((op) => op.key));
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

  /** Plays one op: its result pushed, or what failed. */
  apply(op: KvTxnOp, results: { KV: KvEntryJson }[]): string | undefined {
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

  private lock(
    op: KvTxnOp,
    results: { KV: KvEntryJson }[],
    written: (value: StoredKv) => KvEntryJson,
  ): string | undefined {
    const key = op.key;
    if (op.session === '') return 'Missing session';
    const session = this.store.get<StoredSession>(SESSIONS_TABLE, op.session);
    if (session === undefined) return `Invalid session ${JSON.stringify(op.session)}`;
    this.readSessions.set(op.session, session.modifyIndex);
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
