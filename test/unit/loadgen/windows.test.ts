// The windows a run's rates are counted in (src/loadgen/windows.ts, src/cli/loadtest/rates.ts): a
// second cut where a stage ends, nothing past the schedule's end, the drain apart; a ramp's calls
// as the integral of its rate; a stage's asked and achieved over its own window.
import { describe, expect, it } from 'vitest';
import { Aggregate } from '../../../src/loadgen/aggregate.js';
import { Pacer } from '../../../src/loadgen/pacer.js';
import { Recorder } from '../../../src/loadgen/recorder.js';
import type { ThreadTick } from '../../../src/loadgen/types.js';
import { windowEnds, Windows } from '../../../src/loadgen/windows.js';
import { askedIn, runRates, spanRates } from '../../../src/cli/loadtest/rates.js';

describe('windows and rates', () => {
  it('cuts each second where a stage ends, and ends at the schedule', () => {
    expect(
      windowEnds(5000, [
        { ms: 2000, rate: 1 },
        { ms: 1500, rate: 1 },
        { ms: 1500, rate: 0 },
      ]),
    ).toEqual([1000, 2000, 3000, 3500, 4000, 5000]);
    expect(windowEnds(2500, undefined)).toEqual([1000, 2000, 2500]);
  });

  it('a ramp falls due as the integral of its rate; a pause asks nothing', () => {
    const pacer = new Pacer([
      { ms: 2000, rate: 0, to: 1000 },
      { ms: 1000, rate: 0 },
      { ms: 1000, rate: 500 },
    ]);
    expect(pacer.total).toBe(1000 + 500); // 0 to 1,000/s over 2 s: 1,000 calls
    expect(pacer.dueIn(0, 1000)).toBe(250); // a quarter of the ramp's calls in its first half
    expect(pacer.dueIn(1000, 2000)).toBe(750);
    expect(pacer.dueIn(2000, 3000)).toBe(0);
    expect(pacer.dueIn(3000, 4000)).toBe(500);
    expect(pacer.timeOf(999)).toBeLessThan(2000);
    expect(pacer.timeOf(1000)).toBe(3000);
    // Threads share the rate; the sum is what the schedule asked.
    expect(askedIn({ stages: pacer.stages, threads: 2 }, 0, 2000)).toBe(1000);
  });

  it('puts each answer in the window it came in, and what came after the end in the drain', () => {
    const recorder = new Recorder();
    const ticks: ThreadTick[] = [];
    const w = new Windows(recorder, windowEnds(1500, [{ ms: 1500, rate: 100 }]), (t) => ticks.push(t));
    for (const at of [10, 500, 999]) {
      w.roll(at);
      recorder.record({ status: 200 }, 1000);
    }
    w.roll(1000);
    recorder.record({ status: 503 }, 1000);
    w.roll(1499);
    recorder.record({ error: 'reset' }, 1000);
    w.roll(1520); // after the end: the drain
    recorder.record({ status: 200 }, 30_000);
    w.drain(1520);
    expect(ticks.map((t) => [t.t, t.startMs, t.endMs, t.drain, t.requests, t.answered])).toEqual([
      [1, 0, 1000, false, 3, 3],
      [2, 1000, 1500, false, 2, 1], // a reset is no answer
      [3, 1500, 1520, true, 1, 1],
    ]);
    const a = new Aggregate(1);
    for (const t of ticks) a.add(t);
    const schedule = { stages: [{ ms: 1500, rate: 100 }], threads: 1 };
    const rates = runRates(a, schedule);
    expect(rates).toMatchObject({ ms: 1500, answered: 4, achievedRps: 3, asked: 150, askedRps: 100 });
    expect(rates.drain).toEqual({ ms: 20, requests: 1, answered: 1 });
    expect(a.series.map((p) => p.t)).toEqual([1, 2]);
    expect(spanRates(a.span(1000, 1500), schedule)).toMatchObject({ ms: 500, achievedRps: 2, askedRps: 100 });
    // The drain's answer is in the run's latencies, not in its rate.
    expect(a.total.max).toBeGreaterThanOrEqual(30_000);
  });

  it('stopped early, the open window ends then and no other follows', () => {
    const recorder = new Recorder();
    const ticks: ThreadTick[] = [];
    const w = new Windows(recorder, windowEnds(3000, undefined), (t) => ticks.push(t));
    w.roll(1200);
    recorder.record({ status: 200 }, 1000);
    w.cut(1700);
    expect(ticks.map((t) => [t.startMs, t.endMs, t.requests])).toEqual([
      [0, 1000, 0],
      [1000, 1700, 1],
    ]);
    expect(w.nextEndMs).toBeUndefined();
  });
});
