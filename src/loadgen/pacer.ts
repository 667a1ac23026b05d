// When each call of an open loop falls due: one rate for the whole run, or steps of a rate
// (`-stages 10s:1000,30s:20000`), as vegeta's pacer and k6's stages. Times are ms from the start.

export interface Stage {
  readonly ms: number;
  /** Calls per second during the stage; 0 is a pause. */
  readonly rate: number;
}

export class Pacer {
  /** Per stage: when it starts (ms), its first call's number, and its call count. */
  private readonly starts: {
    readonly at: number;
    readonly first: number;
    readonly count: number;
    readonly rate: number;
  }[] = [];
  /** Calls due over every stage. */
  readonly total: number;
  readonly totalMs: number;

  constructor(readonly stages: readonly Stage[]) {
    let at = 0;
    let first = 0;
    for (const s of stages) {
      // Calls due at at, at + 1/rate, ... strictly before the stage's end.
      const count = s.rate > 0 ? Math.ceil((s.ms * s.rate) / 1000 - 1e-9) : 0;
      this.starts.push({ at, first, count, rate: s.rate });
      at += s.ms;
      first += count;
    }
    this.total = first;
    this.totalMs = at;
  }

  /** When call n (from 0) falls due, ms from the start; Infinity past the last. */
  timeOf(n: number): number {
    for (let k = this.starts.length - 1; k >= 0; k--) {
      const s = this.starts[k]!;
      if (n >= s.first && s.count > 0) return n - s.first < s.count ? s.at + ((n - s.first) * 1000) / s.rate : Infinity;
    }
    return Infinity;
  }

  /** How many calls are due at or before `ms` from the start. */
  dueBy(ms: number): number {
    for (let k = this.starts.length - 1; k >= 0; k--) {
      const s = this.starts[k]!;
      if (ms >= s.at)
        return s.first + Math.min(s.count, s.count === 0 ? 0 : Math.floor(((ms - s.at) * s.rate) / 1000 + 1e-9) + 1);
    }
    return 0;
  }
}

/** One rate over `ms`. */
export function steadyPacer(rate: number, ms: number): Pacer {
  return new Pacer([{ ms, rate }]);
}
