// The member list on a fake etcd connection: the agent's own record is put under a lease of whole
// seconds, the list follows the watch (puts and lease expiries), a lost lease is put again, a
// broken watch is followed by a fresh read, and close revokes the record.
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
  lease: "1",
});

class FakeEtcd {
  stored = new Map<string, MemberRecord>();
  puts: { key: string; ttl: number; lost: (err: unknown) => void }[] = [];
  revoked: string[] = [];
  listener: EtcdWatchListener | undefined;
  reads = 0;
  connection(): EtcdConnection {
    return {
      putLeased: (key: Buffer, value: Buffer, ttl: number, lost: (err: unknown) => void) => {
        const k = key.toString();
        this.puts.push({ key: k, ttl, lost });
        this.stored.set(k, JSON.parse(value.toString()) as MemberRecord);
        return { ready: Promise.resolve(), revoke: () => (this.revoked.push(k), Promise.resolve()) };
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
    const members = new ClusterMembers({ connection: etcd.connection(), prefix: '/svc/', ttlMs: 2_500, clock, log: silentLogger, random: () => 0.5 });
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
    etcd.listener!.events([{ type: 'delete', kv: kv('b', record('b')) }], 12);
    expect(members.list().map((m) => m.name)).toEqual(['a', 'c']);
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

  it('revokes its record on close', async () => {
    const { etcd, members } = await setup();
    await members.close();
    expect(etcd.revoked).toEqual(['/svc/members/a']);
  });
});
