// The member list on a fake etcd connection: the agent's own record is put under a lease of whole
// seconds, the list follows the watch (puts and lease expiries), a lost lease is put again, a
// broken watch is followed by a fresh read, and close says the agent leaves, then revokes the
// record. Re-registration is one loop with backoff however many lost events and failed attempts
// arrive (a fake clock drives it), and a replaced lease is revoked. An entry that went saying it
// leaves is kept as departing until the servers recorded it.
import { describe, expect, it } from 'vitest';
import { ClusterMembers, type MemberRecord } from '../../../src/cluster/members.js';
import { FakeClock } from '../../../src/core/clock.js';
import { silentLogger } from '../../../src/core/log.js';
import type { EtcdConnection, EtcdKeyValue, EtcdWatchListener } from '../../../src/state/etcd/index.js';

const record = (name: string, server = false): MemberRecord => ({
  name,
  id: `id-${name}`,
  address: '127.0.0.1',
  port: 8500,
  datacenter: 'dc1',
  server,
  version: '0.1.0',
  aclsEnabled: false,
});

const kv = (name: string, r: MemberRecord): EtcdKeyValue => ({
  key: `/svc/members/${name}`,
  value: Buffer.from(JSON.stringify(r)),
  createRevision: 1,
  modRevision: 1,
  lease: '1',
});

class FakeEtcd {
  stored = new Map<string, MemberRecord>();
  puts: { key: string; ttl: number; lost: (err: unknown) => void; lease: number }[] = [];
  revoked: string[] = [];
  revokedLeases: number[] = [];
  listener: EtcdWatchListener | undefined;
  reads = 0;
  /** While set, a put fails: its lease is reported lost as well (etcd3 does both when a grant fails). */
  down = false;
  /** While set, a put is never answered. */
  hang = false;
  inFlight = 0;
  maxInFlight = 0;
  connection(): EtcdConnection {
    return {
      putLeased: (key: Buffer, value: Buffer, ttl: number, lost: (err: unknown) => void) => {
        const k = key.toString();
        const lease = this.puts.length + 1;
        this.puts.push({ key: k, ttl, lost, lease });
        this.inFlight++;
        this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
        const failing = this.down;
        if (this.hang) return { ready: new Promise<void>(() => {}), revoke: () => Promise.resolve() };
        const ready = Promise.resolve().then(() => {
          this.inFlight--;
          if (failing) {
            lost(new Error('lease grant failed'));
            throw new Error('unavailable');
          }
          this.stored.set(k, JSON.parse(value.toString()) as MemberRecord);
        });
        return { ready, revoke: () => (this.revoked.push(k), this.revokedLeases.push(lease), Promise.resolve()) };
      },
      rangePrefix: () => {
        this.reads++;
        return Promise.resolve({ revision: 10, kvs: [...this.stored].map(([k, r]) => ({ ...kv(r.name, r), key: k })) });
      },
      watchPrefix: (_prefix: Buffer, _from: number, listener: EtcdWatchListener) => {
        this.listener = listener;
        return { cancel: () => {} };
      },
    } as unknown as EtcdConnection;
  }
}

const settle = () => new Promise((r) => setImmediate(r));

describe('ClusterMembers', () => {
  async function setup() {
    const etcd = new FakeEtcd();
    etcd.stored.set('/svc/members/b', record('b', true));
    const clock = new FakeClock(0);
    const members = new ClusterMembers({
      connection: etcd.connection(),
      prefix: '/svc/',
      ttlMs: 2_500,
      clock,
      log: silentLogger,
      random: () => 0.5,
    });
    await members.start(record('a'));
    return { etcd, clock, members };
  }

  it('registers itself under a lease of whole seconds and lists everyone, sorted', async () => {
    const { etcd, members } = await setup();
    expect(etcd.puts.map((p) => [p.key, p.ttl])).toEqual([['/svc/members/a', 3]]);
    expect(members.list().map((m) => [m.name, m.server])).toEqual([
      ['a', false],
      ['b', true],
    ]);
  });

  it('follows the watch: a new member appears, an expired one leaves', async () => {
    const { etcd, members } = await setup();
    etcd.listener!.events([{ type: 'put', kv: kv('c', record('c')) }], 11);
    expect(members.list().map((m) => m.name)).toEqual(['a', 'b', 'c']);
    expect(members.hasServer()).toBe(true);
    etcd.listener!.events([{ type: 'delete', kv: kv('b', record('b')) }], 12);
    expect(members.list().map((m) => m.name)).toEqual(['a', 'c']);
    // b was the one server.
    expect(members.hasServer()).toBe(false);
  });

  it('reads the list again after the watch broke', async () => {
    const { etcd, clock, members } = await setup();
    etcd.stored.delete('/svc/members/b');
    etcd.listener!.disconnected(new Error('unavailable'));
    clock.advance(1_000);
    await settle();
    expect(etcd.reads).toBe(2);
    expect(members.list().map((m) => m.name)).toEqual(['a']);
  });

  it('puts its record again when the lease was lost', async () => {
    const { etcd, clock } = await setup();
    etcd.puts[0]!.lost(new Error('lease expired'));
    clock.advance(1_000);
    await settle();
    expect(etcd.puts.map((p) => p.key)).toEqual(['/svc/members/a', '/svc/members/a']);
  });

  it('says it leaves, then revokes its record on close', async () => {
    const { etcd, members } = await setup();
    await Promise.all([members.close(), members.close()]);
    expect(etcd.puts.map((p) => p.lease)).toEqual([1, 2]);
    expect(etcd.stored.get('/svc/members/a')?.leaving).toBe(true);
    expect(etcd.revokedLeases).toEqual([1, 2]);
  });

  it('revokes its record on close when etcd takes no leaving put, after a bounded wait', async () => {
    const { etcd, clock, members } = await setup();
    etcd.hang = true;
    const closed = members.close();
    await settle();
    expect(etcd.revokedLeases).toEqual([]);
    clock.advance(1_000);
    await closed;
    expect(etcd.revokedLeases).toEqual([1]);
  });

  it('keeps an entry that went saying it leaves as departing, until told or the member is back', async () => {
    const { etcd, members } = await setup();
    const leaving = { ...record('c'), leaving: true };
    etcd.listener!.events([{ type: 'put', kv: kv('c', leaving) }], 11);
    etcd.listener!.events(
      [
        { type: 'delete', kv: kv('c', leaving) },
        { type: 'delete', kv: kv('b', record('b', true)) },
      ],
      12,
    );
    expect(members.list().map((m) => m.name)).toEqual(['a']);
    // b went without a word: failed, not departing.
    expect(members.departing().map((m) => [m.name, m.leaving])).toEqual([['c', true]]);
    members.forgetDeparting('c');
    expect(members.departing()).toEqual([]);
    etcd.listener!.events([{ type: 'put', kv: kv('d', { ...record('d'), leaving: true }) }], 13);
    etcd.listener!.events([{ type: 'delete', kv: kv('d', record('d')) }], 14);
    etcd.listener!.events([{ type: 'put', kv: kv('d', record('d')) }], 15);
    expect(members.departing()).toEqual([]);
  });

  it('puts its record again in one loop however many lost events and failed attempts arrive, with backoff', async () => {
    const { etcd, clock } = await setup();
    etcd.down = true;
    for (let i = 0; i < 5; i++) etcd.puts[0]!.lost(new Error('lease expired'));
    // Backoff from 100 ms doubling (random 0.5: no jitter), capped at 2 s: 100, 200, 400, 800, 1600.
    const putsAfter: number[] = [];
    for (const step of [100, 200, 400, 800, 1_600]) {
      clock.advance(step);
      await settle();
      putsAfter.push(etcd.puts.length);
    }
    expect(putsAfter).toEqual([2, 3, 4, 5, 6]);
    expect(etcd.maxInFlight).toBe(1);
    etcd.down = false;
    clock.advance(2_000);
    await settle();
    expect(etcd.puts.length).toBe(7);
    // Registered: nothing more however long it waits, and the lost events of failed attempts changed nothing.
    clock.advance(60_000);
    await settle();
    expect(etcd.puts.length).toBe(7);
    expect(clock.pendingTimers).toBe(0);
  });

  it('revokes the lease it replaces: after a lost lease, and after an update', async () => {
    const { etcd, clock, members } = await setup();
    etcd.puts[0]!.lost(new Error('lease expired'));
    clock.advance(100);
    await settle();
    expect(etcd.puts.map((p) => p.lease)).toEqual([1, 2]);
    expect(etcd.revokedLeases).toEqual([]);
    await members.update({ ...record('a'), port: 9000 });
    expect(etcd.revokedLeases).toEqual([2]);
    expect(etcd.stored.get('/svc/members/a')?.port).toBe(9000);
    await members.close();
    // The leaving put takes lease 4, which replaces 3; then 4 goes.
    expect(etcd.revokedLeases).toEqual([2, 3, 4]);
  });
});
