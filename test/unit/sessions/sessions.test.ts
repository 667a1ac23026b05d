// Sessions (src/sessions/sessions.ts) as a lone agent keeps them: an in-memory embedded store, its
// leases LocalLeases on a fake clock, the catalog written by the Catalog class. Create checks the
// node and its checks as Consul's sessionCreateTxn does; a TTL session ends once twice its TTL
// passes without a renew, and its end frees its keys; a restart takes the leases on again.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Catalog } from '../../../src/catalog/catalog.js';
import { FakeClock } from '../../../src/core/clock.js';
import type { StoredKv } from '../../../src/kv/entries.js';
import { LocalLeases } from '../../../src/sessions/leases.js';
import { KvLocks } from '../../../src/sessions/locks.js';
import { KV_LOCKS_TABLE, SESSIONS_TABLE } from '../../../src/sessions/model.js';
import { Sessions } from '../../../src/sessions/sessions.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../../src/state/embedded/index.js';
import { agentRejectionOf } from '../../support/errors.js';
import { recordingLogger, type LogEntry } from '../../support/recording-logger.js';

const NODE = { ID: '', Address: '10.0.0.1', TaggedAddresses: {}, Meta: {} };
const value: StoredKv = { Flags: 0, Value: 'dg==' };

describe('Sessions', () => {
  let store: EmbeddedStore;
  let clock: FakeClock;
  let catalog: Catalog;
  let locks: KvLocks;
  let log: LogEntry[];
  /** The agent's parts that a restart makes again: its leases and its Sessions. */
  let leases: LocalLeases;
  let sessions: Sessions;

  function start(): void {
    leases = new LocalLeases(clock, (lease) => sessions.leaseExpired(lease));
    sessions = new Sessions({ store, leases, locks, log: recordingLogger(log), nodeName: 'n1' });
  }

  beforeEach(async () => {
    store = await openEmbeddedStore({ log: recordingLogger() });
    clock = new FakeClock(1_700_000_000_000);
    catalog = new Catalog(store, 'dc1');
    locks = new KvLocks(store, clock);
    log = [];
    start();
    await catalog.registerSelf('n1', NODE);
  });
  afterEach(async () => {
    leases.close();
    await store.close();
  });

  /** Resolves on the next change of a row (registered before the change is made). */
  const changeOf = (table: string, key: string): Promise<void> =>
    new Promise((resolve) => store.watchOnce({ table, key }, resolve));

  /** Lets `ms` pass and waits for the session's end and its keys' release that the lapse starts. */
  async function lapse(ms: number, session: string, key: string): Promise<void> {
    const ended = changeOf(SESSIONS_TABLE, session);
    const released = changeOf(KV_LOCKS_TABLE, key);
    clock.advance(ms);
    await Promise.all([ended, released]);
  }

  describe('create', () => {
    it("writes a session with Consul's defaults on this agent's node", async () => {
      const id = await sessions.create({});
      expect(sessions.get(id)?.value).toEqual({
        ID: id,
        Name: '',
        Node: 'n1',
        LockDelay: 15_000_000_000,
        Behavior: 'release',
        TTL: '',
        NodeChecks: ['serfHealth'],
        ServiceChecks: null,
      });
      expect(sessions.list().map((row) => row.key)).toEqual([id]);
      // No TTL, no lease.
      expect(clock.pendingTimers).toBe(0);
    });

    it('puts the session on the asking agent’s node when the create names none', async () => {
      await catalog.registerSelf('n2', NODE);
      expect(sessions.nodeOf({}, 'n2')).toBe('n2');
      expect(sessions.nodeOf({ Node: 'n3' }, 'n2')).toBe('n3');
      const id = await sessions.create({}, 'n2');
      expect(sessions.get(id)?.value.Node).toBe('n2');
    });

    it('refuses a node that is not registered', async () => {
      expect(await agentRejectionOf(sessions.create({ Node: 'nowhere' }))).toEqual([
        'SESSION_NODE_MISSING',
        'Missing node registration',
      ]);
      expect(sessions.list()).toEqual([]);
    });

    it('refuses a check that is not registered on the node, node or service check', async () => {
      expect(await agentRejectionOf(sessions.create({ NodeChecks: ['serfHealth', 'disk'] }))).toEqual([
        'SESSION_CHECK_MISSING',
        "Missing check 'disk' registration",
      ]);
      expect(await agentRejectionOf(sessions.create({ ServiceChecks: [{ ID: 'web-http', Namespace: '' }] }))).toEqual([
        'SESSION_CHECK_MISSING',
        "Missing check 'web-http' registration",
      ]);
      expect(sessions.list()).toEqual([]);
    });

    it('refuses a critical check, and takes a session naming no checks on that node', async () => {
      await catalog.setLiveness('n1', 'critical', 'Agent not live or unreachable');
      expect(await agentRejectionOf(sessions.create({}))).toEqual([
        'SESSION_CHECK_CRITICAL',
        "Check 'serfHealth' is in critical state",
      ]);
      const id = await sessions.create({ NodeChecks: [] });
      expect(sessions.get(id)?.value.NodeChecks).toEqual([]);
    });

    it('takes service checks that pass or warn', async () => {
      await catalog.syncNode('n1', {
        node: NODE,
        services: [{ Service: 'web', Port: 80 }],
        checks: [{ CheckID: 'web-http', Name: 'web', ServiceID: 'web', Status: 'warning' }],
      });
      const id = await sessions.create({ ServiceChecks: [{ ID: 'web-http', Namespace: '' }] });
      expect(sessions.get(id)?.value.ServiceChecks).toEqual([{ ID: 'web-http', Namespace: '' }]);
    });

    it('writes a TTL session under a lease, and gives the lease back when the write fails', async () => {
      const id = await sessions.create({ TTL: '10s' });
      expect(sessions.get(id)?.value).toMatchObject({ TTL: '10s', lease: expect.any(String) });
      expect(clock.pendingTimers).toBe(1);
      vi.spyOn(store, 'commit').mockRejectedValueOnce(new Error('disk gone'));
      await expect(sessions.create({ TTL: '10s' })).rejects.toThrow('disk gone');
      expect(clock.pendingTimers).toBe(1);
    });
  });

  describe('TTL', () => {
    it('ends a session not renewed for twice its TTL, and frees its keys', async () => {
      const id = await sessions.create({ TTL: '10s', LockDelayMs: 0 });
      expect(await locks.acquire('k', id, value)).toBe(true);
      clock.advance(19_999);
      expect(sessions.get(id)).toBeDefined();
      await lapse(1, id, 'k');
      expect(sessions.get(id)).toBeUndefined();
      expect(locks.lockOf('k')).toEqual({ LockIndex: 1 });
      expect(log).toContainEqual(
        expect.objectContaining({ level: 'info', obj: { session: id, node: 'n1', why: 'ttl lapsed' } }),
      );
    });

    it('gives a renewed session its full time again', async () => {
      const id = await sessions.create({ TTL: '10s' });
      await locks.acquire('k', id, value);
      clock.advance(15_000);
      expect((await sessions.renew(id))?.key).toBe(id);
      clock.advance(15_000);
      expect(sessions.get(id)).toBeDefined();
      await lapse(5_000, id, 'k');
      expect(sessions.get(id)).toBeUndefined();
      expect(locks.lockOf('k')?.Session).toBeUndefined();
    });

    it('renews a session without a TTL as it is, and no session that does not exist', async () => {
      const id = await sessions.create({});
      expect(await sessions.renew(id)).toEqual(sessions.get(id));
      expect(await sessions.renew('8b4b1b2e-2a3c-4d5e-9f00-112233445566')).toBeUndefined();
    });
  });

  describe('end', () => {
    it('destroys a session: its row goes, its lease too, its keys are freed', async () => {
      const id = await sessions.create({ TTL: '10s', LockDelayMs: 0 });
      await locks.acquire('k', id, value);
      await sessions.end(id, 'destroyed');
      expect(sessions.get(id)).toBeUndefined();
      expect(locks.lockOf('k')).toEqual({ LockIndex: 1 });
      expect(clock.pendingTimers).toBe(0);
      // Nothing to log for an end the caller asked for; nothing happens on a second end.
      expect(log).toEqual([]);
      await sessions.end(id, 'destroyed');
      expect(await sessions.renew(id)).toBeUndefined();
    });

    it('frees the keys of a session whose row is already gone', async () => {
      const id = await sessions.create({ LockDelayMs: 0 });
      await locks.acquire('k', id, value);
      await store.commit([{ op: 'delete', table: SESSIONS_TABLE, key: id }]);
      await sessions.end(id, 'ttl lapsed');
      expect(locks.lockOf('k')).toEqual({ LockIndex: 1 });
    });

    it('names why a session must end: its node gone, a check critical or gone, else nothing', async () => {
      await catalog.registerSelf('n2', NODE);
      const id = await sessions.create({ Node: 'n2' });
      const session = sessions.get(id)!.value;
      expect(sessions.endReason(session)).toBeUndefined();
      await catalog.setLiveness('n2', 'critical', 'down');
      expect(sessions.endReason(session)).toBe('check critical');
      expect(sessions.endReason({ ...session, NodeChecks: ['gone'] })).toBe('check critical');
      expect(sessions.endReason({ ...session, NodeChecks: [] })).toBeUndefined();
      await catalog.removeNode('n2');
      expect(sessions.endReason(session)).toBe('node gone');
    });
  });

  describe('a restart', () => {
    it('takes on the leases of TTL sessions it finds, each with its full time from now', async () => {
      const ttl = await sessions.create({ TTL: '10s' });
      const plain = await sessions.create({});
      await locks.acquire('k', ttl, value);
      leases.close();
      clock.advance(60_000);
      start();
      sessions.adoptLeases();
      expect(clock.pendingTimers).toBe(1);
      clock.advance(19_999);
      expect(sessions.get(ttl)).toBeDefined();
      await lapse(1, ttl, 'k');
      expect(sessions.list().map((row) => row.key)).toEqual([plain]);
      expect(locks.lockOf('k')?.Session).toBeUndefined();
    });

    it('ends a TTL session whose lease it did not take on when it is renewed', async () => {
      const id = await sessions.create({ TTL: '10s' });
      await locks.acquire('k', id, value);
      leases.close();
      start();
      expect(await sessions.renew(id)).toBeUndefined();
      expect(sessions.get(id)).toBeUndefined();
      expect(locks.lockOf('k')?.Session).toBeUndefined();
    });
  });
});
