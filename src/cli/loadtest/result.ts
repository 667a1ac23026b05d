// The versioned JSON result of a run (docs/loadtest-result.md) and its summary table.
import { availableParallelism } from 'node:os';
import type { Aggregate } from '../../loadgen/aggregate.js';
import type { LatencyHistogram } from '../../loadgen/histogram.js';
import type { SecondPoint } from '../../loadgen/types.js';
import type { CommonSettings, Propagation, ScenarioReport } from './scenario.js';
import { judge, numbersOf } from './thresholds.js';

/** The JSON result's schema name and version (docs/loadtest-result.md). */
export const RESULT_SCHEMA = 'svc-agent-loadtest/3';

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
  const numbers = numbersOf(measured);
  const seconds = measured.elapsedMs / 1000;
  const series = withoutEmptyTail(a.series);
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
      stages: (f.common.findMax ? null : (measured.stages ?? null)) as readonly { ms: number; rate: number }[] | null,
      findMax: f.common.findMax,
      durationMs: f.common.measureMs,
      warmupMs: f.common.warmupMs,
      ...f.report.settings,
    },
    stoppedEarly: f.stoppedEarly,
    summary: {
      elapsedMs: Math.round(measured.elapsedMs),
      requests: a.requests,
      ok: a.ok,
      errors: Object.fromEntries(a.errors),
      askedRps: measured.askedRps,
      achievedRps: numbers.achievedRps,
      late: a.late,
      dropped: a.dropped,
      latencyUs: latencyOf(h),
      outcomes: Object.fromEntries(
        [...a.outcomes].map(([kind, o]) => [
          kind,
          { requests: o.requests, rps: Math.round(o.requests / seconds), latencyUs: latencyOf(o.histogram) },
        ]),
      ),
    },
    stages: stagesOf(measured.stages ?? null, a, f.common.findMax),
    findMax: measured.findMax ?? null,
    thresholds: f.common.findMax ? [] : f.common.thresholds.map((t) => judge(t, numbers)),
    series,
    distribution: h.count === 0 ? [] : h.distribution(),
    propagation: (f.report.propagation ?? []).map(propagationOf),
    markers: f.report.markers ?? [],
    facts: Object.fromEntries(f.report.facts ?? []) as Record<string, number | string | null>,
    limitedBy: limitOf(a.errors, clientBusy),
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

/** Each stage's share of the seconds (the last one keeps the answers that came after the end). */
function stagesOf(stages: readonly { ms: number; rate: number }[] | null, a: Aggregate, findMax: boolean) {
  if (stages === null || findMax || stages.length < 2) return [];
  let at = 0;
  return stages.map((s, k) => {
    const from = Math.round(at / 1000);
    at += s.ms;
    const span = a.span(from, k === stages.length - 1 ? Infinity : Math.round(at / 1000));
    const l = latencyOf(span.histogram);
    return {
      rate: s.rate,
      durationMs: s.ms,
      requests: span.requests,
      achievedRps: Math.round((span.requests / s.ms) * 1000),
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

/** What most likely capped the run: the generator's machine (ports, descriptors, CPU) or the target. */
function limitOf(errors: ReadonlyMap<string, number>, clientBusy: boolean): string {
  if (errors.has('EADDRNOTAVAIL'))
    return 'client ports: the generator ran out of local ports (TIME_WAIT; see ip_local_port_range)';
  if (errors.has('EMFILE') || errors.has('ENFILE')) return "file descriptors: the generator's open-files limit";
  if (clientBusy) return 'the client: the generator kept its threads busy';
  return 'the target';
}

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

/** The rate line: achieved beside asked, and what was late or dropped. */
export function rateText(r: LoadtestResult): string {
  const s = r.summary;
  const mode = r.settings.mode === 'wave' ? 'one wave' : `${r.settings.mode} loop`;
  if (s.askedRps === null) return `${num(s.achievedRps)} ${r.unit} (${mode})`;
  const short = s.achievedRps < 0.95 * s.askedRps || s.dropped > 0;
  const lost = `${num(s.dropped)} calls dropped, ${num(s.late)} late`;
  return short
    ? `the target served ${num(s.achievedRps)}/s of the ${num(s.askedRps)}/s asked; ${lost} (${mode})`
    : `${num(s.achievedRps)} ${r.unit} achieved of ${num(s.askedRps)}/s asked; ${lost} (${mode})`;
}

export function cpuText(r: LoadtestResult): string {
  const c = r.client;
  return `${c.cpuPct}% of one core (${c.machinePct}% of the machine's ${c.cores} cores)${c.limit === null ? '' : ` (${c.limit})`}`;
}

export function thresholdText(t: LoadtestResult['thresholds'][number]): string {
  return `${t.passed ? 'pass' : 'FAIL'} ${t.threshold}${t.actual === null ? '' : ` (was ${t.actual})`}`;
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
    ...r.stages.map((s, k): [string, string] => [
      `stage ${k + 1}`,
      `${s.durationMs / 1000}s at ${num(s.rate)}/s: achieved ${num(s.achievedRps)}/s, p50 ${ms(s.latencyUs.p50)} ms, p99 ${ms(s.latencyUs.p99)} ms, dropped ${num(s.dropped)}`,
    ]),
    ...(r.findMax === null
      ? []
      : [
          [
            'highest rate held',
            r.findMax.highestHeldRps === null
              ? `none (criteria ${r.findMax.criteria.join(', ')})`
              : `${num(r.findMax.highestHeldRps)}/s (criteria ${r.findMax.criteria.join(', ')})`,
          ] as [string, string],
          ...r.findMax.steps.map((s, k): [string, string] => [
            `step ${k + 1}`,
            `${num(s.askedRps)}/s ${s.held ? 'held' : `not held (${s.failed.join(', ')})`}: achieved ${num(s.achievedRps)}/s, p99 ${ms(s.p99Us)} ms, dropped ${num(s.dropped)}`,
          ]),
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
  return `\n${r.scenario} against ${r.targets.join(', ')}${connections}, ${(r.summary.elapsedMs / 1000).toFixed(1)} s\n${rows.map(([k, v]) => `  ${k.padEnd(width)}${v}`).join('\n')}\n`;
}
