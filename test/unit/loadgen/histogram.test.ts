import * as hdr from 'hdr-histogram-js';
import { describe, expect, it } from 'vitest';
import { decodeHistogram, latencyHistogram } from '../../../src/loadgen/histogram.js';

/** hdr-histogram-js recording each value itself, as the generator did before it counted slots. */
function reference(values: readonly number[]): hdr.Histogram {
  const h = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 3,
    useWebAssembly: false,
  });
  for (const v of values) h.recordValue(Math.max(1, Math.round(v)));
  return h;
}

/** Latencies over every bucket size: sub-µs to tens of minutes, with repeats and both ends of buckets. */
function sample(n: number, seed: number): number[] {
  let x = seed;
  const next = (): number => (x = (x * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  const values = [0.2, 1, 2047, 2048, 2049, 4095, 4096, 1_000_003, 3_599_999_999];
  // Past the hour the histogram is sized for, and past 2^32: handed to hdr-histogram-js as they are.
  if (seed === 42) values.push(3_700_000_000, 5_000_000_000);
  for (let i = 0; i < n; i++) values.push(10 ** (next() * 9.5));
  return values;
}

describe('latency histogram', () => {
  it('reads back exactly what hdr-histogram-js recording each value gives: counts, percentiles, min, max, mean', () => {
    for (const seed of [1, 7, 42]) {
      const values = sample(5_000, seed);
      const fast = latencyHistogram();
      // Read between records too: a copy mid-way must not lose or double anything.
      values.forEach((v, i) => {
        fast.record(v);
        if (i === 2_000) expect(fast.count).toBe(2_001);
      });
      const ref = reference(values);
      expect(fast.count).toBe(ref.totalCount);
      expect(fast.max).toBe(ref.maxValue);
      expect(fast.mean).toBe(ref.mean);
      for (const p of [0, 1, 50, 90, 99, 99.9, 99.99, 100])
        expect(fast.percentile(p)).toBe(ref.getValueAtPercentile(p));
      expect(fast.distribution()[0]?.[1]).toBe(ref.minNonZeroValue);
      // What crosses to the main thread is the same bytes, and so merges the same.
      expect(fast.encode()).toBe(hdr.encodeIntoCompressedBase64(ref));
      const merged = latencyHistogram();
      merged.add(decodeHistogram(fast.encode()));
      expect(merged.percentile(99)).toBe(ref.getValueAtPercentile(99));
    }
  });
});
