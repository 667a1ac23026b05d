// The renewal window is a pure function of now, the certificate and a random source.
import { describe, expect, it } from 'vitest';
import { renewalTime, renewalWindow } from '../../../../src/connect/ca/renewal.js';

const H = 3_600_000;
const cert = { validAfter: 0, validBefore: 100 * H };

describe('renewal window', () => {
  it.each([
    ['at issuance: 60 % to 90 %', 0, [60 * H, 90 * H]],
    ['past 60 %: from now to 90 %', 70 * H, [70 * H, 90 * H]],
    ['past 90 %: now', 95 * H, [95 * H, 95 * H]],
    ['expired: now', 120 * H, [120 * H, 120 * H]],
  ] as const)('%s', (_name, now, window) => {
    expect(renewalWindow(now, cert)).toEqual(window);
  });

  it('renews a leaf living under 10 minutes at once', () => {
    expect(renewalWindow(1000, { validAfter: 0, validBefore: 9 * 60_000 })).toEqual([1000, 1000]);
  });

  it('draws uniformly inside the window from the random source', () => {
    expect(renewalTime(0, cert, () => 0)).toBe(60 * H);
    expect(renewalTime(0, cert, () => 0.5)).toBe(75 * H);
    expect(renewalTime(0, cert, () => 0.999999999)).toBeLessThan(90 * H);
    const leaf72h = { validAfter: -60_000, validBefore: -60_000 + 72 * H };
    const t = renewalTime(0, leaf72h, () => 0.25);
    expect(t).toBeGreaterThanOrEqual(leaf72h.validAfter + 0.6 * 72 * H);
    expect(t).toBeLessThanOrEqual(leaf72h.validAfter + 0.9 * 72 * H);
  });
});
