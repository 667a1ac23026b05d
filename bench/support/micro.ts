// In-process micro-benchmark harness: warm a function up, then time batches of calls over several
// rounds and report the median ns/op (the median shrugs off a GC pause or a noisy neighbour in
// one round; min and max show how noisy the run was). For one hot function, old vs new side by side.

export interface MicroOptions {
  /** Calls per timed round; large enough that one round takes milliseconds, not microseconds. */
  iterations?: number;
  rounds?: number;
  /** Untimed calls first, so V8 has optimised the function before the clock starts. */
  warmup?: number;
}

export interface MicroResult {
  name: string;
  nsPerOp: number;
  minNsPerOp: number;
  maxNsPerOp: number;
  iterations: number;
  rounds: number;
}

const DEFAULTS = { iterations: 100_000, rounds: 7, warmup: 20_000 };

// Results go here so V8 cannot prove a call unused and drop it (a module-level store survives).
export let sink: unknown;

/** Times `fn` (called with the iteration number); `fn` should return what it computes. */
export function measure(name: string, fn: (i: number) => unknown, options: MicroOptions = {}): MicroResult {
  const { iterations, rounds, warmup } = { ...DEFAULTS, ...options };
  for (let i = 0; i < warmup; i++) sink = fn(i);
  const perOp: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < iterations; i++) sink = fn(i);
    perOp.push(Number(process.hrtime.bigint() - start) / iterations);
  }
  perOp.sort((a, b) => a - b);
  const mid = perOp[Math.floor(perOp.length / 2)] ?? Number.NaN;
  return {
    name,
    nsPerOp: mid,
    minNsPerOp: perOp[0] ?? Number.NaN,
    maxNsPerOp: perOp[perOp.length - 1] ?? Number.NaN,
    iterations,
    rounds,
  };
}

/** One line per result: name, median ns/op and the min..max spread across rounds. */
export function formatMicro(results: readonly MicroResult[]): string {
  const width = Math.max(...results.map((r) => r.name.length));
  return results
    .map((r) => {
      const spread = `(${r.minNsPerOp.toFixed(1)}..${r.maxNsPerOp.toFixed(1)})`;
      return `${r.name.padEnd(width)}  ${r.nsPerOp.toFixed(1).padStart(10)} ns/op  ${spread}`;
    })
    .join('\n');
}
