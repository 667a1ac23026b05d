// The versioned JSON result of a run (docs/loadtest-result.md) and its summary table.
import type { SecondPoint } from '../../loadgen/types.js';
import type { CommonSettings, Propagation, ScenarioReport } from './scenario.js';

/** The JSON result's schema name and version (docs/loadtest-result.md). */
export const RESULT_SCHEMA = 'svc-agent-loadtest/2';

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
}

export type LoadtestResult = ReturnType<typeof resultOf>;

export function resultOf(f: RunFacts) {
  const { measured, crossCheck } = f.report;
  const a = measured.aggregate;
  const h = a.total;
  const clientBusy = measured.clientBusy ?? measured.cpuPct > 90 * measured.threads;
  const pct = (p: number): number => (h.count === 0 ? 0 : h.percentile(p));
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
      mode: (f.common.rate === undefined ? 'closed' : 'open') as string,
      rate: f.common.rate ?? null,
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
      rps: Math.round((a.requests / measured.elapsedMs) * 1000),
      latencyUs: { p50: pct(50), p90: pct(90), p99: pct(99), p999: pct(99.9), max: h.count === 0 ? 0 : h.max, mean: h.count === 0 ? 0 : Math.round(h.mean) },
    },
    series: withoutEmptyTail(a.series),
    distribution: h.count === 0 ? [] : h.distribution(),
    propagation: (f.report.propagation ?? []).map(propagationOf),
    facts: Object.fromEntries(f.report.facts ?? []),
    limitedBy: limitOf(a.errors, clientBusy),
    client: { cpuPct: Math.round(measured.cpuPct), threads: measured.threads, limit: clientBusy ? 'the load generator kept its threads busy: the client, not the target, may have been the limit' : null },
    crossCheck: crossCheck === null ? null : { ...crossCheck, warmupIncluded: measured.warmupOk > 0 || f.common.warmupMs > 0 },
  };
}

/** The run's last point covers only what was left after the last full second: dropped when nothing was. */
function withoutEmptyTail(series: readonly SecondPoint[]): SecondPoint[] {
  return series.at(-1)?.requests === 0 ? series.slice(0, -1) : [...series];
}

function propagationOf(p: Propagation) {
  const s = p.samplesMs;
  const at = (q: number): number | null => (s.length === 0 ? null : Math.round((s[Math.min(s.length - 1, Math.ceil((q / 100) * s.length) - 1)] as number) * 100) / 100);
  return { name: p.name, seen: p.seen, missing: p.missing, staleAfterAck: p.staleAfterAck ?? null, ms: { p50: at(50), p90: at(90), p99: at(99), max: at(100) }, samplesMs: s.map((x) => Math.round(x * 1000) / 1000) };
}

/** What most likely capped the run: the generator's machine (ports, descriptors, CPU) or the target. */
function limitOf(errors: ReadonlyMap<string, number>, clientBusy: boolean): string {
  if (errors.has('EADDRNOTAVAIL')) return 'client ports: the generator ran out of local ports (TIME_WAIT; see ip_local_port_range)';
  if (errors.has('EMFILE') || errors.has('ENFILE')) return "file descriptors: the generator's open-files limit";
  if (clientBusy) return 'the client: the generator kept its threads busy';
  return 'the target';
}

/** Microseconds as milliseconds, two decimals. */
export const ms = (us: number): string => (us / 1000).toFixed(2);

/** Errors by kind, `none` when there were none. */
export function errorsText(errors: Readonly<Record<string, number>>): string {
  return Object.keys(errors).length === 0 ? 'none' : Object.entries(errors).map(([k, v]) => `${k}: ${v}`).join(', ');
}

export function summaryText(r: LoadtestResult): string {
  const l = r.summary.latencyUs;
  const c = r.crossCheck;
  const rows: [string, string][] = [
    ['requests', r.summary.requests.toLocaleString('en-US')],
    ['throughput', `${r.summary.rps.toLocaleString('en-US')} ${r.unit} (${r.settings.mode === 'wave' ? 'one wave' : `${r.settings.mode} loop`}${r.settings.rate === null ? '' : `, ${r.settings.rate}/s asked`})`],
    ['limited by', r.limitedBy],
    ['latency ms', `p50 ${ms(l.p50)}  p90 ${ms(l.p90)}  p99 ${ms(l.p99)}  p99.9 ${ms(l.p999)}  max ${ms(l.max)}`],
    ['errors', errorsText(r.summary.errors)],
    ...r.propagation.map((p): [string, string] => [
      p.name,
      p.seen === 0 ? `seen by none (${p.missing} waited for)` : `p50 ${p.ms.p50} ms  p99 ${p.ms.p99} ms  max ${p.ms.max} ms, seen by ${p.seen}${p.missing > 0 ? `, NOT by ${p.missing}` : ''}${p.staleAfterAck === null ? '' : `, ${p.staleAfterAck} stale answers after the ack`}`,
    ]),
    ...Object.entries(r.facts),
    ['target counted', c === null ? 'n/a (no svc-agent metrics)' : c.targetCounted === null ? `n/a (the target has no ${c.counter})` : `${c.targetCounted} (${c.counter}${c.warmupIncluded ? ', warm-up included' : ''}): ${c.agrees ? 'agrees with' : 'DIFFERS from'} the generator's ${c.generatorCounted}`],
    ['client cpu', `${r.client.cpuPct}%${r.client.limit === null ? '' : ` (${r.client.limit})`}`],
  ];
  const connections = r.settings.connections === null ? '' : `, ${r.settings.connections} connections`;
  return `\n${r.scenario} against ${r.targets.join(', ')}${connections}, ${(r.summary.elapsedMs / 1000).toFixed(1)} s\n${rows.map(([k, v]) => `  ${k.padEnd(Math.max(17, ...rows.map((r) => r[0].length + 2)))}${v}`).join('\n')}\n`;
}
