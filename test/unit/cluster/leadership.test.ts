// The leadership probe on a fake connection and a fake clock: a failed probe is retried soon (the
// client may reach another member); failures for longer than a probe cycle and two deadlines mean
// no known leader, and a member that answers in between keeps it known; LastContact counts
// from the last good answer; leader and peers come from the member list as host:port; etcd's
// alarms are logged once as they are raised and once as they clear; each pause between probes is the
// interval ±10 %, drawn from the injected random source.
import { describe, expect, it } from 'vitest';
import { EtcdLeadership } from '../../../src/cluster/leadership.js';
import { FakeClock } from '../../../src/core/clock.js';
import { silentLogger, type Logger } from '../../../src/core/log.js';
import type { EtcdConnection, EtcdMember, EtcdStatus } from '../../../src/state/etcd/index.js';

class FakeEtcd {
  answer: () => Promise<EtcdStatus> = () => Promise.resolve({ memberId: '1', leaderId: '2', alarms: [] });
  list: EtcdMember[] = [
    { id: '1', name: 'e1', clientUrls: ['http://127.0.0.1:2379'] },
    { id: '2', name: 'e2', clientUrls: ['http://127.0.0.2:2379', 'http://10.0.0.2:2379'] },
  ];
  probes = 0;
  connection(): EtcdConnection {
    return {
      status: () => {
        this.probes++;
        return this.answer();
      },
      members: () => Promise.resolve(this.list),
    } as unknown as EtcdConnection;
  }
}

const settle = () => new Promise((r) => setImmediate(r));

/** `random` 0.5: every pause exactly the interval (the jitter's middle). */
async function setup(log: Logger = silentLogger, random: () => number = () => 0.5) {
  const etcd = new FakeEtcd();
  const clock = new FakeClock(1_000_000);
  const leadership = new EtcdLeadership({
    connection: etcd.connection(),
    clock,
    log,
    random,
    intervalMs: 500,
    deadlineMs: 600,
  });
  await leadership.start();
  return { etcd, clock, leadership };
}

describe('EtcdLeadership', () => {
  it('knows the leader while etcd answers, and names it host:port', async () => {
    const { leadership } = await setup();
    expect([leadership.knownLeader, leadership.lastContactMs]).toEqual([true, 0]);
    expect(await leadership.leader()).toBe('127.0.0.2:2379');
    expect(await leadership.peers()).toEqual(['127.0.0.1:2379', '127.0.0.2:2379']);
    leadership.close();
  });

  it('loses the leader once probes have failed for its longest cycle and two deadlines, and counts LastContact from the last answer', async () => {
    const { etcd, clock, leadership } = await setup();
    etcd.answer = () => Promise.reject(new Error('deadline exceeded'));
    // The last answer was at 1,000,000; failures from 1,000,500 on are retried every 50 ms; lost at
    // 550 ms (the interval and its jitter) + 2 x 600 ms.
    for (let t = 500; t < 1_750; t += 50) {
      clock.advance(t === 500 ? 500 : 50);
      await settle();
      expect(leadership.knownLeader, `at +${t} ms`).toBe(true);
    }
    clock.advance(50);
    await settle();
    expect(leadership.knownLeader).toBe(false);
    const probes = etcd.probes;
    clock.advance(500);
    await settle();
    expect(etcd.probes).toBe(probes + 1); // lost: back to one probe per interval
    expect(leadership.lastContactMs).toBe(2_250);
    expect(await leadership.leader()).toBe('');
    expect(await leadership.peers()).toEqual(['127.0.0.1:2379', '127.0.0.2:2379']); // the last list etcd gave

    etcd.answer = () => Promise.resolve({ memberId: '1', leaderId: '1', alarms: [] });
    clock.advance(500);
    await settle();
    expect([leadership.knownLeader, leadership.lastContactMs]).toEqual([true, 0]);
    expect(await leadership.leader()).toBe('127.0.0.1:2379');
    leadership.close();
  });

  it('keeps the leader while one member of three fails and the others answer', async () => {
    const { etcd, clock, leadership } = await setup();
    let call = 0;
    // Two calls in a row reach the dead member, then a live one answers: a quorum is still there.
    etcd.answer = () =>
      call++ % 3 < 2
        ? Promise.reject(new Error('connect ECONNREFUSED'))
        : Promise.resolve({ memberId: '1', leaderId: '2', alarms: [] });
    for (let i = 0; i < 60; i++) {
      clock.advance(i === 0 ? 500 : 50);
      await settle();
      expect(leadership.knownLeader, `probe ${i}`).toBe(true);
    }
    leadership.close();
  });

  it('counts a member that knows no leader (leader 0) as a failed probe', async () => {
    const { etcd, clock, leadership } = await setup();
    etcd.answer = () => Promise.resolve({ memberId: '1', leaderId: '0', alarms: [] });
    clock.advance(500);
    await settle();
    for (let t = 550; t <= 1_750; t += 50) {
      clock.advance(50);
      await settle();
    }
    expect(leadership.knownLeader).toBe(false);
    leadership.close();
  });

  it('started from a view on disk, knows no leader and counts contact from the view until etcd answers', async () => {
    const etcd = new FakeEtcd();
    etcd.answer = () => Promise.reject(new Error('connect ECONNREFUSED'));
    const clock = new FakeClock(1_000_000);
    const leadership = new EtcdLeadership({
      connection: etcd.connection(),
      clock,
      log: silentLogger,
      random: () => 0.5,
      intervalMs: 500,
      deadlineMs: 600,
      lastContact: 940_000,
    });
    // The answer before the first probe has failed: a request can arrive while start() awaits it.
    expect([leadership.knownLeader, leadership.lastContactMs]).toEqual([false, 60_000]);
    await leadership.start();
    expect([leadership.knownLeader, leadership.lastContactMs]).toEqual([false, 60_000]);
    clock.advance(500);
    await settle();
    expect([leadership.knownLeader, leadership.lastContactMs]).toEqual([false, 60_500]);

    etcd.answer = () => Promise.resolve({ memberId: '1', leaderId: '2', alarms: [] });
    clock.advance(500);
    await settle();
    expect([leadership.knownLeader, leadership.lastContactMs]).toEqual([true, 0]);
    leadership.close();
  });

  it("logs etcd's alarms once as they are raised, with what to do for NOSPACE, and once as they clear", async () => {
    const lines: [string, string][] = [];
    const log = { ...silentLogger, info: (_: object, msg?: string) => void lines.push(['info', msg ?? '']) };
    log.warn = (_: object, msg?: string) => void lines.push(['warn', msg ?? '']);
    const { etcd, clock, leadership } = await setup(log);
    const probe = async (alarms: string[]): Promise<void> => {
      etcd.answer = () => Promise.resolve({ memberId: '1', leaderId: '2', alarms });
      clock.advance(500);
      await settle();
    };
    await probe(['memberID:1 alarm:NOSPACE']);
    expect(leadership.alarmCount).toBe(1);
    await probe(['memberID:1 alarm:NOSPACE']);
    await probe(['memberID:1 alarm:NOSPACE', 'memberID:2 alarm:NOSPACE']);
    await probe([]);
    expect(leadership.alarmCount).toBe(0);
    await probe([]);
    await probe(['memberID:2 alarm:CORRUPT']);
    expect(lines).toEqual([
      ['warn', expect.stringMatching(/^etcd raised an alarm \(memberID:1 alarm:NOSPACE\): .*etcdctl alarm disarm/)],
      ['warn', expect.stringMatching(/^etcd raised an alarm \(memberID:1 alarm:NOSPACE, memberID:2 alarm:NOSPACE\): /)],
      ['info', 'etcd alarms cleared'],
      ['warn', 'etcd raised an alarm (memberID:2 alarm:CORRUPT)'],
    ]);
    expect(leadership.knownLeader).toBe(true); // an alarm is no lost leader
    leadership.close();
  });

  it('spreads its probes ±10 % around the interval, each pause drawn afresh, so agents started together drift apart', async () => {
    const draws = [0, 0.999_999, 0.25];
    let drawn = 0;
    const { etcd, clock, leadership } = await setup(silentLogger, () => draws[drawn++ % draws.length] as number);
    /** Advances to `ms` after the last probe and says whether the next one went out by then. */
    const probedBy = async (ms: number): Promise<boolean> => {
      const before = etcd.probes;
      clock.advance(ms);
      await settle();
      return etcd.probes > before;
    };
    // The first pause drew 0: 450 ms, not before.
    expect(await probedBy(449)).toBe(false);
    expect(await probedBy(1)).toBe(true);
    // Then ~1: 550 ms.
    expect(await probedBy(549)).toBe(false);
    expect(await probedBy(1)).toBe(true);
    // Then 0.25: 475 ms.
    expect(await probedBy(474)).toBe(false);
    expect(await probedBy(1)).toBe(true);
    // Two agents started in the same instant, with different draws, probe apart from the next interval on.
    const a = await setup(silentLogger, () => 0.1);
    const b = await setup(silentLogger, () => 0.9);
    a.clock.advance(500);
    b.clock.advance(500);
    await settle();
    expect([a.etcd.probes, b.etcd.probes]).toEqual([2, 1]);
    for (const l of [leadership, a.leadership, b.leadership]) l.close();
  });

  it('stops probing once closed', async () => {
    const { etcd, clock, leadership } = await setup();
    leadership.close();
    const before = etcd.probes;
    clock.advance(5_000);
    await settle();
    expect(etcd.probes).toBe(before);
  });
});
