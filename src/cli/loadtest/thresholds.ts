// Pass/fail conditions on a run, as k6 users gate a pipeline: `-threshold 'p99<5ms'`,
// `'errors<0.1%'`, `'rate>=0.95*asked'` (repeatable). A run with one failing exits 2.
import { ClientError } from '../client/api.js';
import type { Aggregate } from '../../loadgen/aggregate.js';
import { spanRates, type Schedule } from './rates.js';

/** The numbers a threshold can name, from a run or one step of -find-max. */
export interface RunNumbers {
  readonly latencyUs: Readonly<Record<'p50' | 'p90' | 'p99' | 'p999' | 'max' | 'mean', number>>;
  readonly requests: number;
  readonly errors: number;
  readonly dropped: number;
  readonly achievedRps: number;
  /** null in closed loop: nothing was asked. */
  readonly askedRps: number | null;
}

type Op = '<' | '<=' | '>' | '>=';

export interface Threshold {
  readonly text: string;
  readonly metric: string;
  readonly op: Op;
  /** Microseconds for latencies, a share (0-1) for `errors` and `dropped` given in %, a count otherwise, req/s for rate. */
  readonly value: number;
  /** `rate>=0.95*asked`: value is a share of the rate asked. */
  readonly ofAsked: boolean;
  readonly share: boolean;
  /** The unit the run's value is given in: the latency's own (`us`, `ms`, `s`), `%`, `/s`, `x asked`, or '' for a count. */
  readonly unit: string;
}

export interface ThresholdVerdict {
  readonly threshold: string;
  readonly passed: boolean;
  /** The run's value, in the threshold's terms (its latency unit, %, /s, a share of asked, or a count). */
  readonly actual: number | null;
  /** `actual`'s unit, as `Threshold.unit`. */
  readonly unit: string;
}

const LATENCIES: Readonly<Record<string, keyof RunNumbers['latencyUs']>> = {
  p50: 'p50',
  p90: 'p90',
  p99: 'p99',
  'p99.9': 'p999',
  p999: 'p999',
  max: 'max',
  mean: 'mean',
};
const UNIT_US: Readonly<Record<string, number>> = { us: 1, µs: 1, ms: 1000, s: 1_000_000 };

export function parseThreshold(text: string): Threshold {
  const m = /^\s*([a-z0-9.]+)\s*(<=|>=|<|>)\s*([0-9.]+)\s*(%|ms|us|µs|s|\/s|\*asked)?\s*$/.exec(text);
  const refuse = (why: string): never => {
    throw new ClientError('CLI_LOADTEST_FLAG', `invalid value ${JSON.stringify(text)} for flag -threshold: ${why}`);
  };
  if (m === null) return refuse("expected such as 'p99<5ms', 'errors<0.1%' or 'rate>=0.95*asked'");
  const [, metric = '', op = '<', raw = '', unit] = m;
  const n = Number(raw);
  if (!Number.isFinite(n)) return refuse('not a number');
  if (metric in LATENCIES) {
    if (unit === undefined || !(unit in UNIT_US)) return refuse('a latency needs a unit: us, ms or s');
    const us = unit === 'µs' ? 'us' : unit;
    return { text, metric, op: op as Op, value: n * (UNIT_US[unit] as number), ofAsked: false, share: false, unit: us };
  }
  if (metric === 'errors' || metric === 'dropped') {
    if (unit !== undefined && unit !== '%') return refuse(`${metric} is a count, or a share in %`);
    const share = unit === '%';
    return { text, metric, op: op as Op, value: share ? n / 100 : n, ofAsked: false, share, unit: share ? '%' : '' };
  }
  if (metric === 'rate') {
    if (unit !== undefined && unit !== '*asked' && unit !== '/s')
      return refuse('rate is per second, or a share of the rate asked (0.95*asked)');
    const ofAsked = unit === '*asked';
    return { text, metric, op: op as Op, value: n, ofAsked, share: false, unit: ofAsked ? 'x asked' : '/s' };
  }
  return refuse('one of p50, p90, p99, p99.9, max, mean, errors, dropped, rate');
}

function holds(actual: number, op: Op, limit: number): boolean {
  return op === '<' ? actual < limit : op === '<=' ? actual <= limit : op === '>' ? actual > limit : actual >= limit;
}

export function judge(t: Threshold, r: RunNumbers): ThresholdVerdict {
  const round = (x: number): number => Math.round(x * 1000) / 1000;
  const latency = LATENCIES[t.metric];
  if (latency !== undefined) {
    const us = r.latencyUs[latency];
    return {
      threshold: t.text,
      passed: r.requests > 0 && holds(us, t.op, t.value),
      actual: round(us / (UNIT_US[t.unit] ?? 1)),
      unit: t.unit,
    };
  }
  if (t.metric === 'errors' || t.metric === 'dropped') {
    const count = t.metric === 'errors' ? r.errors : r.dropped;
    // Dropped calls were never sent: their share is of every call due.
    const of = t.metric === 'errors' ? r.requests : r.requests + r.dropped;
    const actual = t.share ? (of === 0 ? 0 : count / of) : count;
    return {
      threshold: t.text,
      passed: holds(actual, t.op, t.value),
      actual: t.share ? round(actual * 100) : actual,
      unit: t.unit,
    };
  }
  if (t.ofAsked) {
    // Closed loop asks for no rate: there is nothing to fall short of.
    if (r.askedRps === null) return { threshold: t.text, passed: true, actual: null, unit: t.unit };
    return {
      threshold: t.text,
      passed: holds(r.achievedRps, t.op, t.value * r.askedRps),
      actual: r.askedRps === 0 ? null : round(r.achievedRps / r.askedRps),
      unit: t.unit,
    };
  }
  return { threshold: t.text, passed: holds(r.achievedRps, t.op, t.value), actual: r.achievedRps, unit: t.unit };
}

/**
 * The numbers a threshold names, from a measured run: rates by rates.ts's definition; latencies and
 * counts of every answer (the drain's too), or with `window` only of those in the scheduled time
 * (a -find-max step).
 */
export function numbersOf(m: { readonly aggregate: Aggregate } & Schedule, window = false): RunNumbers {
  const a = m.aggregate;
  const span = a.measured();
  const h = window ? span.histogram : a.total;
  const pct = (p: number): number => (h.count === 0 ? 0 : h.percentile(p));
  const rates = spanRates(span, m);
  let errors = 0;
  for (const n of a.errors.values()) errors += n;
  return {
    latencyUs: {
      p50: pct(50),
      p90: pct(90),
      p99: pct(99),
      p999: pct(99.9),
      max: h.count === 0 ? 0 : h.max,
      mean: h.count === 0 ? 0 : Math.round(h.mean),
    },
    requests: window ? span.requests : a.requests,
    errors: window ? span.errors : errors,
    dropped: window ? span.dropped : a.dropped,
    achievedRps: rates.achievedRps,
    askedRps: rates.askedRps,
  };
}
