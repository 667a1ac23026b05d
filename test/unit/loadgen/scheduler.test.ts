import { describe, expect, it } from 'vitest';
import { Pacer, steadyPacer } from '../../../src/loadgen/pacer.js';
import { drive, type Channel, type LoadClock } from '../../../src/loadgen/scheduler.js';
import type { Outcome } from '../../../src/loadgen/types.js';

/** A clock that moves only when the test advances it; sleepers wake in time order. */
class FakeClock implements LoadClock {
  t = 0;
  private sleepers: { at: number; wake: () => void }[] = [];
  now(): number {
    return this.t;
  }
  sleepUntil(ms: number): Promise<void> {
    if (ms <= this.t) return Promise.resolve();
    return new Promise((wake) => this.sleepers.push({ at: ms, wake }));
  }
  /** Moves time forward in small steps, letting every woken task run before the next. */
  async runUntil(ms: number, done: () => boolean): Promise<void> {
    while (!done()) {
      await new Promise((r) => setImmediate(r));
      const next = Math.min(...this.sleepers.map((s) => s.at));
      if (!Number.isFinite(next)) continue;
      if (next > ms) throw new Error(`nothing left to do before ${ms} ms`);
      this.t = next;
      const due = this.sleepers.filter((s) => s.at <= this.t);
      this.sleepers = this.sleepers.filter((s) => s.at > this.t);
      for (const s of due) s.wake();
    }
  }
}

/** A connection whose answers take the given times, in order (the last one repeats). */
function channel(clock: FakeClock, serviceMs: number[]): Channel {
  let i = 0;
  return {
    async send(): Promise<Outcome> {
      const took = serviceMs[Math.min(i++, serviceMs.length - 1)] as number;
      await clock.sleepUntil(clock.now() + took);
      return { status: 200 };
    },
  };
}

describe('drive', () => {
  it('open loop: a stalled answer delays the requests due behind it, and their latencies run from when they were due', async () => {
    const clock = new FakeClock();
    const latencies: number[] = [];
    let finished = false;
    const run = drive({
      channels: [channel(clock, [10, 0.1])],
      pacer: steadyPacer(1000, 10),
      until: 20,
      clock,
      record: (_o, us) => latencies.push(us / 1000),
    }).then(() => (finished = true));
    await clock.runUntil(100, () => finished);
    await run;
    // Due at 0..9 ms; the first answer takes 10 ms, then each 0.1 ms, one after another.
    expect(latencies.map((ms) => Number(ms.toFixed(1)))).toEqual([10, 9.1, 8.2, 7.3, 6.4, 5.5, 4.6, 3.7, 2.8, 1.9]);
  });

  it('closed loop measures from the send, so the same stall shows once (what open loop exists to avoid)', async () => {
    const clock = new FakeClock();
    const latencies: number[] = [];
    let finished = false;
    const run = drive({
      channels: [channel(clock, [10, 0.1])],
      until: 10.45,
      clock,
      record: (_o, us) => latencies.push(us / 1000),
    }).then(() => (finished = true));
    await clock.runUntil(100, () => finished);
    await run;
    expect(latencies[0]).toBe(10);
    expect(latencies.slice(1).every((ms) => Math.abs(ms - 0.1) < 1e-9)).toBe(true);
    expect(latencies).toHaveLength(6);
  });

  it('open loop spreads requests over the free connections at the rate, and stops when told', async () => {
    const clock = new FakeClock();
    let sent = 0;
    let finished = false;
    const channels = [channel(clock, [0.5]), channel(clock, [0.5])];
    const run = drive({
      channels,
      pacer: steadyPacer(2000, 50),
      until: 50,
      clock,
      record: () => sent++,
      stopped: () => clock.now() >= 20,
    }).then(() => (finished = true));
    await clock.runUntil(100, () => finished);
    await run;
    expect(sent).toBe(40);
  });

  it('past saturation: sending stops at the end, the backlog stays bounded, and every call due is sent or dropped', async () => {
    const clock = new FakeClock();
    const sends: number[] = [];
    const slow = (): Channel => ({
      async send(): Promise<Outcome> {
        sends.push(clock.now());
        await clock.sleepUntil(clock.now() + 10);
        return { status: 200 };
      },
    });
    let answered = 0;
    let late = 0;
    let dropped = 0;
    let finished = false;
    // 10,000/s for 100 ms (1,000 calls) over 2 connections that each answer in 10 ms: about 20 can go out.
    const run = drive({
      channels: [slow(), slow()],
      pacer: steadyPacer(10_000, 100),
      until: 100,
      backlog: 8,
      clock,
      record: (_o, _us, isLate) => {
        answered++;
        if (isLate) late++;
      },
      dropped: (n) => (dropped += n),
    }).then(() => (finished = true));
    await clock.runUntil(1000, () => finished);
    await run;
    expect(Math.max(...sends)).toBeLessThan(100);
    expect(clock.now()).toBeLessThanOrEqual(110);
    expect(answered).toBe(sends.length);
    expect(answered).toBeGreaterThanOrEqual(18);
    expect(answered).toBeLessThanOrEqual(22);
    expect(answered + dropped).toBe(1000);
    expect(late).toBe(answered - 2); // all but the first two waited for a connection
  });

  it('stages: each step runs at its own rate, a rate of 0 pauses', async () => {
    const pacer = new Pacer([
      { ms: 1000, rate: 10 },
      { ms: 1000, rate: 0 },
      { ms: 500, rate: 20 },
    ]);
    expect(pacer.total).toBe(20);
    expect(pacer.timeOf(9)).toBe(900);
    expect(pacer.timeOf(10)).toBe(2000);
    expect(pacer.timeOf(20)).toBe(Infinity);
    expect([pacer.dueBy(0), pacer.dueBy(999), pacer.dueBy(1999), pacer.dueBy(2000), pacer.dueBy(2499)]).toEqual([
      1, 10, 10, 11, 20,
    ]);
    const clock = new FakeClock();
    const sentAt: number[] = [];
    let finished = false;
    const run = drive({
      channels: [channel(clock, [1])],
      pacer,
      until: 2500,
      clock,
      record: () => sentAt.push(clock.now()),
    }).then(() => (finished = true));
    await clock.runUntil(5000, () => finished);
    await run;
    expect(sentAt.filter((t) => t < 1000)).toHaveLength(10);
    expect(sentAt.filter((t) => t >= 1000 && t < 2000)).toHaveLength(0);
    expect(sentAt.filter((t) => t >= 2000)).toHaveLength(10);
  });
});
