// The versioned JSON result of a run (docs/loadtest-result.md) and its summary table.
import { availableParallelism } from 'node:os';
import type { Aggregate } from '../../loadgen/aggregate.js';
import type { LatencyHistogram } from '../../loadgen/histogram.js';
import { endRate, type Stage } from '../../loadgen/pacer.js';
import type { SecondPoint } from '../../loadgen/types.js';
import { askedIn, perSecond, pointRate, runRates, spanRates, type Schedule } from './rates.js';
import type { CommonSettings, Propagation, ScenarioReport } from './scenario.js';
import { judge, numbersOf } from './thresholds.js';

/** The JSON result's schema name and version (docs/loadtest-result.md). */
export const RESULT_SCHEMA = 'svc-agent-loadtest/4';

export interface RunFacts {
  readonly scenario: string;
  readonly unit: string;
  readonly prefix: string;
  readonly targets: readonly string[];
  readonly common: CommonSettings;
  readonly stoppedEarly: boolean;
  /** ISO time the run began. */
  readonly startedAt: string;
  readonly report: ScenarioReport;
  /** The machine's cores (the CPU share's ceiling); default this machine's. */
  readonly cores?: number;
}

export type LoadtestResult = ReturnType<typeof resultOf>;

function latencyOf(h: LatencyHistogram) {
  const pct = (p: number): number => (h.count === 0 ? 0 : h.percentile(p));
  return {
    p50: pct(50),
    p90: pct(90),
    p99: pct(99),
    p999: pct(99.9),
    max: h.count === 0 ? 0 : h.max,
    mean: h.count === 0 ? 0 : Math.round(h.mean),
  };
}

export function resultOf(f: RunFacts) {
  const { measured, crossCheck } = f.report;
  const a = measured.aggregate;
  const h = a.total;
  const cores = f.cores ?? availableParallelism();
  // Never more than the machine has: a wall time shorter than the work (a clock step) cannot make 2,946% of 2 cores.
  const cpuPct = Math.min(100 * cores, Math.round(measured.cpuPct));
  const clientBusy = measured.clientBusy ?? measured.cpuPct > 90 * measured.threads;
  const schedule: Schedule = {
    stages: measured.stages ?? null,
    threads: measured.threads,
    askedRps: measured.askedRps,
  };
  const numbers = numbersOf({ aggregate: a, ...schedule });
  const rates = runRates(a, schedule);
  const span = a.measured();
  const series = withoutEmptyTail(a.series).map((p) => seriesPoint(p, schedule));
  return {
    schema: RESULT_SCHEMA,
    scenario: f.scenario,
    unit: f.unit,
    prefix: f.prefix,
    startedAt: f.startedAt as string | undefined,
    targets: f.targets,
    settings: {
      connections: f.common.connections as number | null,
      threads: measured.threads,
      mode: (f.common.stages === undefined ? 'closed' : 'open') as string,
      rate: f.common.rate ?? (null as number | null),
      stages: (f.common.findMax ? null : (measured.stages ?? null)) as readonly Stage[] | null,
      findMax: f.common.findMax,
      durationMs: f.common.measureMs,
      warmupMs: f.common.warmupMs,
      ...f.report.settings,
    },
    stoppedEarly: f.stoppedEarly,
    summary: {
      elapsedMs: Math.round(rates.ms),
      requests: a.requests,
      ok: a.ok,
      errors: Object.fromEntries(a.errors),
      answered: rates.answered,
      asked: rates.asked === null ? null : Math.round(rates.asked),
      askedRps: rates.askedRps,
      achievedRps: rates.achievedRps,
      drain: rates.drain,
      late: a.late,
      dropped: a.dropped,
      latencyUs: latencyOf(h),
      outcomes: Object.fromEntries(
        [...a.outcomes].map(([kind, o]) => [
          kind,
          {
            requests: o.requests,
            rps: perSecond(span.outcomes[kind] ?? 0, rates.ms),
            latencyUs: latencyOf(o.histogram),
          },
        ]),
      ),
    },
    stages: stagesOf(schedule, a, f.common.findMax),
    findMax: measured.findMax ?? null,
    thresholds: f.common.findMax ? [] : f.common.thresholds.map((t) => judge(t, numbers)),
    series,
    distribution: h.count === 0 ? [] : h.distribution(),
    propagation: (f.report.propagation ?? []).map(propagationOf),
    markers: f.report.markers ?? [],
    facts: Object.fromEntries(f.report.facts ?? []) as Record<string, number | string | null>,
    limitedBy: limitOf(a.errors, clientBusy, rates.achievedRps, rates.askedRps),
    client: {
      cpuPct,
      cores,
      machinePct: Math.round(cpuPct / cores),
      threads: measured.threads,
      limit: clientBusy
        ? 'the load generator kept its threads busy: the client, not the target, may have been the limit'
        : null,
    },
    crossCheck:
      crossCheck === null ? null : { ...crossCheck, warmupIncluded: measured.warmupOk > 0 || f.common.warmupMs > 0 },
  };
}

/** A window of the series with its rates (rates.ts): achieved, and asked over the same window. */
function seriesPoint(p: SecondPoint, schedule: Schedule) {
  const asked = askedIn(schedule, p.startMs, p.endMs);
  return {
    ...p,
    t: Math.round(p.endMs) / 1000,
    achievedRps: pointRate(p.answered, p),
    askedRps: asked === null ? null : pointRate(asked, p),
  };
}

/** A stage's kind: a hold at one rate, a ramp from one rate to another, or a pause (0/s). */
function kindOf(s: Stage): 'hold' | 'ramp' | 'pause' {
  return s.to !== undefined && s.to !== s.rate ? 'ramp' : s.rate === 0 ? 'pause' : 'hold';
}

/** Each stage's windows: its rates over its scheduled time (rates.ts); the drain is the run's, apart. */
function stagesOf(schedule: Schedule, a: Aggregate, findMax: boolean) {
  const stages = schedule.stages;
  if (stages === null || stages === undefined || findMax) return [];
  if (stages.length < 2 && !stages.some((s) => kindOf(s) === 'ramp')) return [];
  let at = 0;
  return stages.map((s) => {
    const from = at;
    at += s.ms;
    const span = a.span(from, at);
    const r = spanRates(span, schedule);
    const l = latencyOf(span.histogram);
    return {
      kind: kindOf(s),
      rate: s.rate,
      to: endRate(s),
      startMs: from,
      durationMs: s.ms,
      asked: r.asked === null ? 0 : Math.round(r.asked),
      askedRps: r.askedRps ?? 0,
      requests: span.requests,
      answered: span.answered,
      achievedRps: r.achievedRps,
      errors: span.errors,
      dropped: span.dropped,
      latencyUs: { p50: l.p50, p99: l.p99, max: l.max },
    };
  });
}

/** The run's last point covers only what was left after the last full second: dropped when nothing was. */
function withoutEmptyTail(series: readonly SecondPoint[]): SecondPoint[] {
  const last = series.at(-1);
  return last !== undefined && last.requests === 0 && last.dropped === 0 ? series.slice(0, -1) : [...series];
}

function propagationOf(p: Propagation) {
  const s = p.samplesMs;
  const at = (q: number): number | null =>
    s.length === 0
      ? null
      : Math.round((s[Math.min(s.length - 1, Math.ceil((q / 100) * s.length) - 1)] as number) * 100) / 100;
  return {
    name: p.name,
    includes: p.includes ?? null,
    seen: p.seen,
    missing: p.missing,
    staleAfterAck: p.staleAfterAck ?? null,
    agentMs: p.agentMs === undefined || p.agentMs === null ? null : Math.round(p.agentMs * 100) / 100,
    ms: { p50: at(50), p90: at(90), p99: at(99), max: at(100) },
    samplesMs: s.map((x) => Math.round(x * 1000) / 1000),
  };
}

/**
 * What most likely capped the run: the generator's machine (ports, descriptors, CPU), the target
 * (it served less than asked, or in closed loop as fast as it answered), or nothing (it served what
 * was asked).
 */
function limitOf(
  errors: ReadonlyMap<string, number>,
  clientBusy: boolean,
  achievedRps: number,
  askedRps: number | null,
): string {
  if (errors.has('EADDRNOTAVAIL'))
    return 'client ports: the generator ran out of local ports (TIME_WAIT; see ip_local_port_range)';
  if (errors.has('EMFILE') || errors.has('ENFILE')) return "file descriptors: the generator's open-files limit";
  if (clientBusy) return 'the client: the generator kept its threads busy';
  if (askedRps !== null && achievedRps >= SERVED_ALL * askedRps) return 'nothing: the target served the rate asked';
  return 'the target';
}

/** Achieved at least this share of asked: the rate asked was served (find-max's own criterion). */
const SERVED_ALL = 0.95;

/** Microseconds as milliseconds, two decimals. */
export const ms = (us: number): string => (us / 1000).toFixed(2);

const num = (n: number): string => n.toLocaleString('en-US');

/** Errors by kind, `none` when there were none. */
export function errorsText(errors: Readonly<Record<string, number>>): string {
  return Object.keys(errors).length === 0
    ? 'none'
    : Object.entries(errors)
        .map(([k, v]) => `${k}: ${v}`)
        .join(', ');
}

/** The drain: answers after the schedule's end, apart from the rate. */
function drainText(r: LoadtestResult): string {
  const d = r.summary.drain;
  return d.requests === 0 ? '' : `; ${num(d.requests)} answered in the ${num(d.ms)} ms drain after the end`;
}

/** The rate line: achieved beside asked over the same window, and what was late, dropped or drained. */
export function rateText(r: LoadtestResult): string {
  const s = r.summary;
  const mode = r.settings.mode === 'wave' ? 'one wave' : `${r.settings.mode} loop`;
  const over = `over ${secondsText(s.elapsedMs)}`;
  if (s.askedRps === null) return `${num(s.achievedRps)} ${r.unit} ${over}${drainText(r)} (${mode})`;
  const short = s.achievedRps < SERVED_ALL * s.askedRps || s.dropped > 0;
  const lost = `${num(s.dropped)} calls dropped, ${num(s.late)} late${drainText(r)}`;
  return short
    ? `the target served ${num(s.achievedRps)}/s of the ${num(s.askedRps)}/s asked ${over}; ${lost} (${mode})`
    : `${num(s.achievedRps)} ${r.unit} achieved of ${num(s.askedRps)}/s asked ${over}; ${lost} (${mode})`;
}

/** Milliseconds as seconds with one decimal: `5.0 s`. */
export const secondsText = (msValue: number): string => `${(msValue / 1000).toFixed(1)} s`;

/** A stage's line: what it asked and what it got over its own window; a pause says so. */
export function stageText(s: LoadtestResult['stages'][number]): string {
  const head =
    s.kind === 'pause'
      ? `${secondsText(s.durationMs)} pause`
      : s.kind === 'ramp'
        ? `${secondsText(s.durationMs)} ramp ${num(s.rate)}/s to ${num(s.to)}/s (${num(s.askedRps)}/s asked)`
        : `${secondsText(s.durationMs)} at ${num(s.askedRps)}/s`;
  if (s.kind === 'pause') return `${head}: ${num(s.answered)} answers came in (${num(s.achievedRps)}/s)`;
  return `${head}: achieved ${num(s.achievedRps)}/s, p50 ${ms(s.latencyUs.p50)} ms, p99 ${ms(s.latencyUs.p99)} ms, dropped ${num(s.dropped)}`;
}

/** A -find-max step's line. */
export function stepText(s: NonNullable<LoadtestResult['findMax']>['steps'][number]): string {
  return `${s.confirm ? 'confirm ' : ''}${num(s.askedRps)}/s for ${secondsText(s.durationMs)} ${s.held ? 'held' : `not held (${s.failed.join(', ')})`}: achieved ${num(s.achievedRps)}/s, p99 ${ms(s.p99Us)} ms, dropped ${num(s.dropped)}${s.clientBusy ? ', client busy' : ''}`;
}

/** -find-max's answer: the confirmed rate with its step's figures and the spread of the steps near it. */
export function findMaxText(f: NonNullable<LoadtestResult['findMax']>): string {
  const criteria = `criteria ${f.criteria.join(', ')}`;
  const client = f.clientLimited ? '; the client was the limit (its threads busy), not the target' : '';
  if (f.highestHeldRps === null || f.confirmed === null) return `none confirmed (${criteria})${client}`;
  const c = f.confirmed;
  const spread = f.spread === null ? '' : `; steps near it achieved ${num(f.spread.lowRps)}-${num(f.spread.highRps)}/s`;
  return `${num(f.highestHeldRps)}/s (confirmed over ${secondsText(c.durationMs)}: achieved ${num(c.achievedRps)}/s, p99 ${ms(c.p99Us)} ms${spread}; ${criteria})${client}`;
}

export function cpuText(r: LoadtestResult): string {
  const c = r.client;
  return `${c.cpuPct}% of one core (${c.machinePct}% of the machine's ${c.cores} cores)${c.limit === null ? '' : ` (${c.limit})`}`;
}

export function thresholdText(t: LoadtestResult['thresholds'][number]): string {
  const unit = t.unit === '' ? '' : t.unit === '%' || t.unit === '/s' ? t.unit : ` ${t.unit}`;
  return `${t.passed ? 'pass' : 'FAIL'} ${t.threshold}${t.actual === null ? '' : ` (was ${num(t.actual)}${unit})`}`;
}

function factText(v: number | string | null): string {
  return v === null ? 'n/a' : typeof v === 'number' ? num(v) : v;
}

export function summaryText(r: LoadtestResult): string {
  const l = r.summary.latencyUs;
  const c = r.crossCheck;
  const rows: [string, string][] = [
    ['requests', num(r.summary.requests)],
    ['throughput', rateText(r)],
    ['limited by', r.limitedBy],
    ['latency ms', `p50 ${ms(l.p50)}  p90 ${ms(l.p90)}  p99 ${ms(l.p99)}  p99.9 ${ms(l.p999)}  max ${ms(l.max)}`],
    ['errors', errorsText(r.summary.errors)],
    ...Object.entries(r.summary.outcomes).map(([kind, o]): [string, string] => [
      kind,
      `${num(o.requests)} (${num(o.rps)}/s)  p50 ${ms(o.latencyUs.p50)} ms  p99 ${ms(o.latencyUs.p99)} ms`,
    ]),
    ...r.stages.map((s, k): [string, string] => [`stage ${k + 1}`, stageText(s)]),
    ...(r.findMax === null
      ? []
      : [
          ['highest rate held', findMaxText(r.findMax)] as [string, string],
          ...r.findMax.steps.map((s, k): [string, string] => [`step ${k + 1}`, stepText(s)]),
        ]),
    ...r.propagation.map((p): [string, string] => [
      p.name,
      p.seen === 0
        ? `seen by none (${p.missing} waited for)`
        : `p50 ${p.ms.p50} ms  p99 ${p.ms.p99} ms  max ${p.ms.max} ms, seen by ${p.seen}${p.missing > 0 ? `, NOT by ${p.missing}` : ''}${p.staleAfterAck === null ? '' : `, ${p.staleAfterAck} stale answers after the ack`}${p.agentMs === null ? '' : `; the agent's own part ${p.agentMs} ms (ack to the first new answer to a call made after it)`}${p.includes === null ? '' : `; includes ${p.includes}`}`,
    ]),
    ...Object.entries(r.facts).map(([k, v]): [string, string] => [k, factText(v)]),
    [
      'target counted',
      c === null
        ? 'n/a (no svc-agent metrics)'
        : c.targetCounted === null
          ? `n/a (the target has no ${c.counter})`
          : `${c.targetCounted} (${c.counter}${c.warmupIncluded ? ', warm-up included' : ''}): ${c.agrees ? 'agrees with' : 'DIFFERS from'} the generator's ${c.generatorCounted}`,
    ],
    ['client cpu', cpuText(r)],
    ...r.thresholds.map((t): [string, string] => ['threshold', thresholdText(t)]),
  ];
  const connections = r.settings.connections === null ? '' : `, ${r.settings.connections} connections`;
  const width = Math.max(17, ...rows.map((row) => row[0].length + 2));
  const drain = r.summary.drain.ms > 0 ? ` (+ ${num(r.summary.drain.ms)} ms drain)` : '';
  return `\n${r.scenario} against ${r.targets.join(', ')}${connections}, ${secondsText(r.summary.elapsedMs)}${drain}\n${rows.map(([k, v]) => `  ${k.padEnd(width)}${v}`).join('\n')}\n`;
}
