import { describe, expect, it } from 'vitest';
import { IndexClock } from '../../../src/state/index-clock.js';

describe('IndexClock', () => {
  it('hands out 1 first, then strictly increasing indexes', () => {
    const clock = new IndexClock();
    expect(clock.current).toBe(0);
    expect(clock.next()).toBe(1);
    expect(clock.next()).toBe(2);
    expect(clock.current).toBe(2);
  });

  it('restore only moves forward', () => {
    const clock = new IndexClock();
    clock.restore(10);
    expect(clock.next()).toBe(11);
    clock.restore(5);
    expect(clock.current).toBe(11);
    expect(clock.next()).toBe(12);
  });

  it('rejects an index that is not a non-negative integer', () => {
    const clock = new IndexClock();
    expect(() => clock.restore(-1)).toThrow(RangeError);
    expect(() => clock.restore(1.5)).toThrow(RangeError);
    expect(() => clock.restore(Number.NaN)).toThrow(RangeError);
  });
});
