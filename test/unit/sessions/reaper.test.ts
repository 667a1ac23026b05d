// The SessionReaper (src/sessions/reaper.ts) on an in-memory embedded store and a fake clock: it
// ends sessions whose node or checks failed, frees the keys of sessions whose row went without
// them (an etcd lease that lapsed deletes the row alone), sweeps spent lock rows on its timer, and
// two reapers on one store (two cluster servers) apply each change once.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Catalog } from '../../../src/catalog/catalog.js';
import { FakeClock } from '../../../src/core/clock.js';
import type { StoredKv } from '../../../src/kv/entries.js';
import { LocalLeases } from '../../../src/sessions/leases.js';
import { KvLocks } from '../../../src/sessions/locks.js';
import { KV_LOCKS_TABLE, SESSIONS_TABLE } from '../../../src/sessions/model.js';
import { SessionReaper } from '../../../src/sessions/reaper.js';
import { Sessions } from '../../../src/sessions/sessions.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../../src/state/embedded/index.js';
import type { CommitResult, WriteOp } from '../../../src/state/types.js';
import { recordingLogger, type LogEntry } from '../../support/recording-logger.js';

const NODE = { ID: '', Address: '10.0.0.1', TaggedAddresses: {}, Meta: {} };
const value: StoredKv = { Flags: 0, Value: 'dg==' };

/** One agent's session parts on a shared store: what a lone agent, or each cluster server, runs. */
interface Agent {
  readonly sessions: Sessions;
  readonly locks: KvLocks;
  readonly reaper: SessionReaper;
  readonly leases: LocalLeases;
}

describe('SessionReaper', () => {
  let store: EmbeddedStore;
  let clock: FakeClock;
  let catalog: Catalog;
  let log: LogEntry[];
  let agents: Agent[];

  function agent(): Agent {
    const locks = new KvLocks(store, clock);
    let sessions: Sessions | undefined;
    const leases = new LocalLeases(clock, (lease) => sessions?.leaseExpired(lease));
    sessions = new Sessions({ store, leases, locks, log: recordingLogger(log), nodeName: 'n1' });
    const reaper = new SessionReaper(store, sessions, locks, clock, recordingLogger(log));
    const made = { sessions, locks, reaper, leases };
    agents.push(made);
    return made;
  }

  beforeEach(async () => {
    store = await openEmbeddedStore({ log: recordingLogger() });
    clock = new FakeClock(1_700_000_000_000);
    catalog = new Catalog(store, 'dc1');
    log = [];
    agents = [];
    await catalog.registerSelf('n1', NODE);
  });
  afterEach(async () => {
    for (const a of agents) {
      a.reaper.close();
      a.leases.close();
    }
    await store.close();
  });

  /** Resolves on the next change of a row (registered before the change is made). */
  const changeOf = (table: string, key: string): Promise<void> =>
    new Promise((resolve) => store.watchOnce({ table, key }, resolve));

  const invalidated = (): LogEntry[] => log.filter((e) => e.msg === 'session invalidated');

  it('ends a session once its check goes critical, and frees its lock', async () => {
    const { sessions, locks, reaper } = agent();
    reaper.start();
    const id = await sessions.create({ LockDelayMs: 0 });
    await locks.acquire('k', id, value);
    const ended = changeOf(SESSIONS_TABLE, id);
    const released = changeOf(KV_LOCKS_TABLE, 'k');
    await catalog.setLiveness('n1', 'critical', 'Agent not live or unreachable');
    await Promise.all([ended, released]);
    expect(sessions.get(id)).toBeUndefined();
    expect(locks.lockOf('k')).toEqual({ LockIndex: 1 });
    expect(invalidated().map((e) => e.obj)).toEqual([{ session: id, node: 'n1', why: 'check critical' }]);
  });

  it('ends the sessions of a node removed from the catalog, and leaves the others', async () => {
    const { sessions, reaper } = agent();
    await catalog.registerSelf('n2', NODE);
    const gone = await sessions.create({ Node: 'n2' });
    const kept = await sessions.create({});
    await catalog.removeNode('n2');
    await reaper.pass();
    expect(sessions.list().map((row) => row.key)).toEqual([kept]);
    expect(invalidated().map((e) => e.obj)).toEqual([{ session: gone, node: 'n2', why: 'node gone' }]);
  });

  it('frees a lock whose session row went without it, holding it for the lock-delay', async () => {
    const { sessions, locks, reaper } = agent();
    const id = await sessions.create({ LockDelayMs: 5_000 });
    await locks.acquire('k', id, value);
    // As etcd deletes a lapsed lease's row: the lock row is left as it was.
    await store.commit([{ op: 'delete', table: SESSIONS_TABLE, key: id }]);
    expect(locks.lockOf('k')?.Session).toBe(id);
    await reaper.pass();
    expect(locks.lockOf('k')).toEqual({ LockIndex: 1, DelayUntil: clock.now() + 5_000 });
  });

  it('sweeps spent lock rows on its timer', async () => {
    const { sessions, locks, reaper } = agent();
    reaper.start();
    const id = await sessions.create({ Behavior: 'delete', LockDelayMs: 1_000 });
    await locks.acquire('k', id, value);
    await sessions.end(id, 'destroyed');
    expect(locks.lockOf('k')).toEqual({ LockIndex: 0, DelayUntil: clock.now() + 1_000 });
    // The pass the end itself woke cannot sweep the row: its lock-delay still runs.
    await reaper.pass();
    expect(locks.lockOf('k')).toBeDefined();
    const swept = changeOf(KV_LOCKS_TABLE, 'k');
    clock.advance(15_000);
    await swept;
    expect(locks.lockOf('k')).toBeUndefined();
  });

  it('does nothing once closed', async () => {
    const { sessions, locks, reaper } = agent();
    reaper.start();
    reaper.close();
    const id = await sessions.create({});
    await locks.acquire('k', id, value);
    await store.commit([{ op: 'delete', table: SESSIONS_TABLE, key: id }]);
    clock.advance(60_000);
    // A later change is committed after anything the closed reaper could have done.
    await store.commit([{ op: 'set', table: 'other', key: 'x', value: 1 }]);
    expect(locks.lockOf('k')?.Session).toBe(id);
    expect(clock.pendingTimers).toBe(0);
  });

  it('applies each change once when two reapers on one store run together', async () => {
    const a = agent();
    const b = agent();
    const id = await a.sessions.create({ LockDelayMs: 0 });
    // Its lock row is kept for its lock-delay: no sweep deletes it in this pass.
    const other = await a.sessions.create({ NodeChecks: [], Behavior: 'delete', LockDelayMs: 1_000 });
    await a.locks.acquire('k', id, value);
    await a.locks.acquire('d', other, value);
    await catalog.setLiveness('n1', 'critical', 'Agent not live or unreachable');
    await store.commit([{ op: 'delete', table: SESSIONS_TABLE, key: other }]);
    const applied: WriteOp[][] = [];
    let failedGuards = 0;
    const commit = store.commit.bind(store);
    // Each commit lands a turn later, as a cluster's do: the other reaper meanwhile reads the state before it.
    vi.spyOn(store, 'commit').mockImplementation(async (ops): Promise<CommitResult> => {
      await new Promise((resolve) => setImmediate(resolve));
      const result = await commit(ops);
      if (result.ok) applied.push([...ops]);
      else failedGuards++;
      return result;
    });
    await Promise.all([a.reaper.pass(), b.reaper.pass(), a.reaper.pass(), b.reaper.pass()]);
    const touching = (table: string, key: string): number =>
      applied.filter((ops) => ops.some((op) => op.table === table && 'key' in op && op.key === key)).length;
    expect(touching(SESSIONS_TABLE, id)).toBe(1);
    expect(touching(KV_LOCKS_TABLE, 'k')).toBe(1);
    expect(touching(KV_LOCKS_TABLE, 'd')).toBe(1);
    expect(touching('kv', 'd')).toBe(1);
    expect(invalidated()).toHaveLength(1);
    // They did race: one's guard failed where the other's held.
    expect(failedGuards).toBeGreaterThan(0);
    expect(a.locks.lockOf('k')).toEqual({ LockIndex: 1 });
    expect(store.get(SESSIONS_TABLE, id)).toBeUndefined();
    expect(store.get('kv', 'd')).toBeUndefined();
  });
});
