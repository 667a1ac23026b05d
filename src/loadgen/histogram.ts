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

const HIGHEST_US = 3_600_000_000;
// HdrHistogram's layout at 3 significant digits from 1 µs: 2,048 sub-buckets (half: 2^10) per
// power of two, so a value's slot is two integer operations (Math.clz32 and a shift).
const HALF_MAGNITUDE = 10;
const HALF_COUNT = 1 << HALF_MAGNITUDE;
const SUB_BUCKET_MASK = 2 * HALF_COUNT - 1;
const TOP_BUCKET = 31 - HALF_MAGNITUDE - Math.clz32(HIGHEST_US);
const SLOTS = (TOP_BUCKET + 2) << HALF_MAGNITUDE;

/** A value's slot in HdrHistogram's counts array, for 1 <= value < 2^32. */
function slotOf(value: number): number {
  const bucket = 31 - HALF_MAGNITUDE - Math.clz32(value | SUB_BUCKET_MASK);
  return ((bucket + 1) << HALF_MAGNITUDE) + (value >>> bucket) - HALF_COUNT;
}

/** The lowest value of a slot. */
function slotValue(slot: number): number {
  const bucket = (slot >> HALF_MAGNITUDE) - 1;
  const sub = (slot & (HALF_COUNT - 1)) + HALF_COUNT;
  return bucket < 0 ? sub - HALF_COUNT : sub * 2 ** bucket;
}

/**
 * Recording goes to a plain counts array in HdrHistogram's own layout, copied into the histogram
 * before any read: hdr-histogram-js's recordValue takes a log2, a pow and a floor per value, about
 * five times this. The copy records the exact minimum and maximum, so every figure read back is
 * what recordValue would have given (test/unit/loadgen/histogram.test.ts).
 */
class Hdr implements LatencyHistogram {
  private readonly hist = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: HIGHEST_US,
    numberOfSignificantValueDigits: 3,
    useWebAssembly: false,
  });
  private pending: Uint32Array | undefined;
  /** Slots counted since the last copy. */
  private touched: Int32Array | undefined;
  private touchedCount = 0;
  private pendingMin = Infinity;
  private pendingMax = 0;

  /** The histogram itself, with everything recorded so far. */
  get h(): hdr.Histogram {
    if (this.touchedCount > 0) this.flush();
    return this.hist;
  }

  record(micros: number): void {
    const value = micros < 1 ? 1 : Math.round(micros);
    if (value > HIGHEST_US) {
      this.h.recordValue(value); // out of range: hdr-histogram-js says so
      return;
    }
    const pending = (this.pending ??= new Uint32Array(SLOTS));
    const slot = slotOf(value);
    const count = pending[slot] as number;
    pending[slot] = count + 1;
    if (count === 0) (this.touched ??= new Int32Array(SLOTS))[this.touchedCount++] = slot;
    if (value < this.pendingMin) this.pendingMin = value;
    if (value > this.pendingMax) this.pendingMax = value;
  }

  private flush(): void {
    const pending = this.pending as Uint32Array;
    const touched = this.touched as Int32Array;
    const minSlot = slotOf(this.pendingMin);
    const maxSlot = slotOf(this.pendingMax);
    for (let k = 0; k < this.touchedCount; k++) {
      const slot = touched[k] as number;
      let count = pending[slot] as number;
      pending[slot] = 0;
      if (slot === maxSlot) {
        this.hist.recordValue(this.pendingMax);
        count--;
      }
      if (count > 0) this.hist.recordValueWithCount(slot === minSlot ? this.pendingMin : slotValue(slot), count);
    }
    this.touchedCount = 0;
    this.pendingMin = Infinity;
    this.pendingMax = 0;
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
