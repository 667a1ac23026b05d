// The one definition of a rate that the console, the JSON result, the HTML report, the thresholds,
// -find-max and compare all read (docs/decisions.md#loadtest-rates): the calls answered in a window
// divided by the window's length, where a stage's or a step's window is its scheduled time. The
// answers after the schedule's end are the drain, reported apart. "Asked" is the schedule's calls
// due in the same window over the same length.
import type { Aggregate, Span } from '../../loadgen/aggregate.js';
import { Pacer, shareOf, type Stage } from '../../loadgen/pacer.js';

/** Calls per second: `count` over `ms`, rounded; 0 over no time. */
export function perSecond(count: number, ms: number): number {
  return ms > 0 ? Math.round((count / ms) * 1000) : 0;
}

/** What the generator threads were asked: each ran the stages at its share of the rate. */
export interface Schedule {
  readonly stages?: readonly Stage[] | null | undefined;
  readonly threads: number;
  /** A rate asked without stages (proxies: each proxy's inbound rate); null or absent: none. */
  readonly askedRps?: number | null | undefined;
}

/** Calls the schedule had fall due in [fromMs, toMs), over every thread; null in closed loop. */
export function askedIn(schedule: Schedule, fromMs: number, toMs: number): number | null {
  const { stages, threads } = schedule;
  if (stages === null || stages === undefined)
    return schedule.askedRps === null || schedule.askedRps === undefined
      ? null
      : (schedule.askedRps * (toMs - fromMs)) / 1000;
  const pacer = new Pacer(stages.map((s) => shareOf(s, 1 / threads)));
  return pacer.dueIn(fromMs, toMs) * threads;
}

export interface WindowRates {
  /** The window's length (ms). */
  readonly ms: number;
  readonly answered: number;
  readonly achievedRps: number;
  /** Calls due in the window, and per second; null in closed loop. */
  readonly asked: number | null;
  readonly askedRps: number | null;
}

/** A span of windows (a stage, a step, the run) as rates. */
export function spanRates(span: Span, schedule: Schedule): WindowRates {
  const ms = span.endMs - span.startMs;
  const asked = askedIn(schedule, span.startMs, span.endMs);
  return {
    ms,
    answered: span.answered,
    achievedRps: perSecond(span.answered, ms),
    asked,
    askedRps: asked === null ? null : perSecond(asked, ms),
  };
}

/** The measured time's rates, and the drain's figures apart. */
export function runRates(
  aggregate: Aggregate,
  schedule: Schedule,
): WindowRates & { readonly drain: { readonly ms: number; readonly requests: number; readonly answered: number } } {
  const d = aggregate.drain();
  return {
    ...spanRates(aggregate.measured(), schedule),
    drain:
      d === null
        ? { ms: 0, requests: 0, answered: 0 }
        : { ms: Math.round(d.endMs - d.startMs), requests: d.requests, answered: d.answered },
  };
}

/** The achieved rate of a whole run's series point, or of a count (an outcome's) in it. */
export function pointRate(count: number, point: { readonly startMs: number; readonly endMs: number }): number {
  return perSecond(count, point.endMs - point.startMs);
}
