import { describe, expect, it } from 'vitest';
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
    const run = drive({ channels: [channel(clock, [10, 0.1])], rate: 1000, until: 10, clock, record: (_o, us) => latencies.push(us / 1000) }).then(() => (finished = true));
    await clock.runUntil(100, () => finished);
    await run;
    // Due at 0..9 ms; the first answer takes 10 ms, then each 0.1 ms, one after another.
    expect(latencies.map((ms) => Number(ms.toFixed(1)))).toEqual([10, 9.1, 8.2, 7.3, 6.4, 5.5, 4.6, 3.7, 2.8, 1.9]);
  });

  it('closed loop measures from the send, so the same stall shows once (what open loop exists to avoid)', async () => {
    const clock = new FakeClock();
    const latencies: number[] = [];
    let finished = false;
    const run = drive({ channels: [channel(clock, [10, 0.1])], until: 10.45, clock, record: (_o, us) => latencies.push(us / 1000) }).then(() => (finished = true));
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
    const run = drive({ channels, rate: 2000, until: 50, clock, record: () => sent++, stopped: () => clock.now() >= 20 }).then(() => (finished = true));
    await clock.runUntil(100, () => finished);
    await run;
    expect(sent).toBe(40);
  });
});
