// Latency histograms for the load generator: hdr-histogram-js (HdrHistogram's port), imported here
// and nowhere else; values are microseconds, from 1 µs to an hour at 3 significant digits.
import * as hdr from 'hdr-histogram-js';

export interface LatencyHistogram {
  record(micros: number): void;
  readonly count: number;
  percentile(p: number): number;
  readonly max: number;
  readonly mean: number;
  /** Adds another's counts (the run's total from per-second histograms). */
  add(other: LatencyHistogram): void;
  /** The percentile distribution, for the report's HDR plot: [percentile, micros] pairs. */
  distribution(): [number, number][];
  /** Compressed, to cross a thread boundary (decodeHistogram reads it). */
  encode(): string;
  /** HdrHistogram's percentile distribution text (.hgrm), values in milliseconds, for plotting elsewhere. */
  hgrm(): string;
}

class Hdr implements LatencyHistogram {
  readonly h = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 3,
    useWebAssembly: false,
  });

  record(micros: number): void {
    this.h.recordValue(Math.max(1, Math.round(micros)));
  }
  get count(): number {
    return this.h.totalCount;
  }
  percentile(p: number): number {
    return this.h.getValueAtPercentile(p);
  }
  get max(): number {
    return this.h.maxValue;
  }
  get mean(): number {
    return this.h.mean;
  }
  add(other: LatencyHistogram): void {
    this.h.add((other as Hdr).h);
  }
  distribution(): [number, number][] {
    const points: [number, number][] = [];
    // Evenly spaced on the HDR plot's log axis (ten per decade of 1/(1-p)), up to 99.999, then the max.
    for (let k = 0; k <= 50; k++) {
      const p = Math.round((100 - 100 * 10 ** (-k / 10)) * 10_000) / 10_000;
      points.push([p, k === 0 ? this.h.minNonZeroValue : this.h.getValueAtPercentile(p)]);
    }
    points.push([100, this.h.maxValue]);
    return points;
  }
  encode(): string {
    return hdr.encodeIntoCompressedBase64(this.h);
  }
  hgrm(): string {
    return this.h.outputPercentileDistribution(5, 1000);
  }
}

export function decodeHistogram(encoded: string): LatencyHistogram {
  const out = new Hdr();
  out.h.add(hdr.decodeFromCompressedBase64(encoded, 32, false));
  return out;
}

export function latencyHistogram(): LatencyHistogram {
  return new Hdr();
}
