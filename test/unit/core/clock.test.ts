import { describe, expect, it } from 'vitest';
import { FakeClock, systemClock } from '../../../src/core/clock.js';

describe('FakeClock', () => {
  it('starts where told and moves only on advance', () => {
    const clock = new FakeClock(1000);
    expect(clock.now()).toBe(1000);
    expect(clock.now()).toBe(1000);
    clock.advance(250);
    expect(clock.now()).toBe(1250);
    expect(new FakeClock().now()).toBe(0);
  });

  it('fires timers in deadline order, ties in the order they were set', () => {
    const clock = new FakeClock();
    const fired: string[] = [];
    clock.setTimer(30, () => fired.push('c'));
    clock.setTimer(10, () => fired.push('a1'));
    clock.setTimer(20, () => fired.push('b'));
    clock.setTimer(10, () => fired.push('a2'));
    clock.advance(100);
    expect(fired).toEqual(['a1', 'a2', 'b', 'c']);
  });

  it('fires a timer only once its deadline is reached, with now() at the deadline', () => {
    const clock = new FakeClock(100);
    const seen: number[] = [];
    clock.setTimer(50, () => seen.push(clock.now()));
    clock.advance(49);
    expect(seen).toEqual([]);
    expect(clock.pendingTimers).toBe(1);
    clock.advance(1);
    expect(seen).toEqual([150]);
    expect(clock.pendingTimers).toBe(0);
    clock.advance(1000);
    expect(seen).toEqual([150]);
  });

  it('does not fire a cancelled timer, and cancel is idempotent', () => {
    const clock = new FakeClock();
    const fired: string[] = [];
    const a = clock.setTimer(10, () => fired.push('a'));
    clock.setTimer(10, () => fired.push('b'));
    expect(clock.pendingTimers).toBe(2);
    a.cancel();
    a.cancel();
    expect(clock.pendingTimers).toBe(1);
    clock.advance(10);
    expect(fired).toEqual(['b']);
  });

  it('cancelling after firing is harmless', () => {
    const clock = new FakeClock();
    let count = 0;
    const t = clock.setTimer(5, () => count++);
    clock.advance(5);
    t.cancel();
    clock.advance(5);
    expect(count).toBe(1);
    expect(clock.pendingTimers).toBe(0);
  });

  it('fires timers set by a firing timer within the same advance when due', () => {
    const clock = new FakeClock();
    const fired: [string, number][] = [];
    clock.setTimer(10, () => {
      fired.push(['outer', clock.now()]);
      clock.setTimer(5, () => fired.push(['inner', clock.now()]));
      clock.setTimer(100, () => fired.push(['late', clock.now()]));
    });
    clock.advance(20);
    expect(fired).toEqual([
      ['outer', 10],
      ['inner', 15],
    ]);
    expect(clock.now()).toBe(20);
    expect(clock.pendingTimers).toBe(1);
  });

  it('a timer cancelled by an earlier timer in the same advance does not fire', () => {
    const clock = new FakeClock();
    const fired: string[] = [];
    const later = clock.setTimer(20, () => fired.push('later'));
    clock.setTimer(10, () => {
      fired.push('first');
      later.cancel();
    });
    clock.advance(30);
    expect(fired).toEqual(['first']);
  });

  it('treats a negative or zero delay as due now', () => {
    const clock = new FakeClock(10);
    const fired: string[] = [];
    clock.setTimer(-5, () => fired.push('neg'));
    clock.setTimer(0, () => fired.push('zero'));
    clock.advance(0);
    expect(fired).toEqual(['neg', 'zero']);
    expect(clock.now()).toBe(10);
  });
});

describe('systemClock', () => {
  it('reads the wall clock', () => {
    const before = Date.now();
    const now = systemClock.now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });

  it('a cancelled timer never runs', async () => {
    let ran = false;
    systemClock.setTimer(0, () => (ran = true)).cancel();
    await new Promise<void>((resolve) => systemClock.setTimer(1, resolve));
    expect(ran).toBe(false);
  });
});
