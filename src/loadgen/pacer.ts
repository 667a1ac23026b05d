// When each call of an open loop falls due: one rate for the whole run, or stages
// (`-stages 10s:1000,30s:1000-20000,10s:0`): a hold at one rate, a ramp from one rate to another
// (k6's ramping-arrival-rate), or a pause at 0. Times are ms from the start.

export interface Stage {
  readonly ms: number;
  /** Calls per second during the stage (a ramp's rate at its start); 0 with no `to` is a pause. */
  readonly rate: number;
  /** A ramp: the rate at the stage's end, reached linearly from `rate`. */
  readonly to?: number;
}

/** A stage's end rate: `to` for a ramp, else its rate. */
export const endRate = (s: Stage): number => s.to ?? s.rate;

/** A stage scaled by `share` (a generator thread's part of the rate). */
export function shareOf(s: Stage, share: number): Stage {
  return s.to === undefined ? { ms: s.ms, rate: s.rate * share } : { ms: s.ms, rate: s.rate * share, to: s.to * share };
}

interface Placed {
  readonly at: number;
  readonly first: number;
  readonly count: number;
  /** Calls per ms at the start, and the change of that per ms (a ramp's slope). */
  readonly r0: number;
  readonly slope: number;
  readonly ms: number;
}

/** Calls due by `t` ms into a stage (a real number): the integral of its rate. */
const callsBy = (s: Placed, t: number): number => s.r0 * t + (s.slope * t * t) / 2;

/** When the stage's `n`-th call (a real number of calls) falls due, ms into it. */
function timeFor(s: Placed, n: number): number {
  if (Math.abs(s.slope) < 1e-15) return n / s.r0;
  // r0 t + slope t^2 / 2 = n, the root in [0, ms].
  const d = s.r0 * s.r0 + 2 * s.slope * n;
  return (-s.r0 + Math.sqrt(Math.max(0, d))) / s.slope;
}

export class Pacer {
  private readonly placed: Placed[] = [];
  /** Calls due over every stage. */
  readonly total: number;
  readonly totalMs: number;

  constructor(readonly stages: readonly Stage[]) {
    let at = 0;
    let first = 0;
    for (const s of stages) {
      const r0 = s.rate / 1000;
      const slope = s.ms > 0 ? (endRate(s) / 1000 - r0) / s.ms : 0;
      const p = { at, first, count: 0, r0, slope, ms: s.ms };
      // Calls due at the times the integral reaches 0, 1, 2, ... strictly before the stage's end.
      const count = s.ms > 0 ? Math.max(0, Math.ceil(callsBy(p, s.ms) - 1e-9)) : 0;
      this.placed.push({ ...p, count });
      at += s.ms;
      first += count;
    }
    this.total = first;
    this.totalMs = at;
  }

  /** When call n (from 0) falls due, ms from the start; Infinity past the last. */
  timeOf(n: number): number {
    for (let k = this.placed.length - 1; k >= 0; k--) {
      const s = this.placed[k]!;
      if (n >= s.first && s.count > 0) return n - s.first < s.count ? s.at + timeFor(s, n - s.first) : Infinity;
    }
    return Infinity;
  }

  /** How many calls are due at or before `ms` from the start. */
  dueBy(ms: number): number {
    for (let k = this.placed.length - 1; k >= 0; k--) {
      const s = this.placed[k]!;
      if (ms >= s.at)
        return (
          s.first + Math.min(s.count, s.count === 0 ? 0 : Math.floor(callsBy(s, Math.min(ms - s.at, s.ms)) + 1e-9) + 1)
        );
    }
    return 0;
  }

  /** Calls due in [fromMs, toMs): what a window of the run was asked. */
  dueIn(fromMs: number, toMs: number): number {
    const before = (ms: number): number => (ms <= 0 ? 0 : this.dueBy(ms - 1e-6));
    return Math.max(0, before(Math.min(toMs, this.totalMs)) - before(Math.min(fromMs, this.totalMs)));
  }
}

/** One rate over `ms`. */
export function steadyPacer(rate: number, ms: number): Pacer {
  return new Pacer([{ ms, rate }]);
}
