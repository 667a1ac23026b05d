// `svc-agent loadtest compare a.json b.json [-report diff.html] [-force]`: two results side by side
// (before and after an upgrade, or this agent against another), as a table with B/A ratios and,
// with -report, the charts of both runs overlaid. Unlike runs (another scenario, loop mode, rate,
// target count or schema) are refused unless -force, which then says what differs first.
import { readFile, writeFile } from 'node:fs/promises';
import { ClientError } from '../client/api.js';
import { parseFlags } from '../client/flags.js';
import { renderReport } from './report.js';
import { ms, RESULT_SCHEMA, type LoadtestResult } from './result.js';

export function compareHelp(): string {
  return [
    'Options of compare:',
    '',
    '  -report=<value>',
    "      Write an HTML report with both runs' charts overlaid.",
    '  -force',
    '      Compare runs that differ in scenario, loop mode, rate, target count or schema (refused otherwise).',
  ].join('\n');
}

export async function runCompare(argv: readonly string[], io: { out(text: string): void }): Promise<number> {
  const files: string[] = [];
  let reportFile: string | undefined;
  let force = false;
  let rest = [...argv];
  while (rest.length > 0) {
    const { values, args } = parseFlags(rest, {
      report: { kind: 'string', doc: '' },
      force: { kind: 'bool', doc: '' },
    });
    if (typeof values.report === 'string') reportFile = values.report;
    if (values.force === true) force = true;
    if (args.length === 0) break;
    files.push(args[0] as string);
    rest = args.slice(1);
  }
  if (files.length !== 2) {
    throw new ClientError(
      'CLI_LOADTEST_COMPARE',
      'compare takes two result files: svc-agent loadtest compare <a.json> <b.json> [-report diff.html] [-force]',
    );
  }
  const [a, b] = (await Promise.all(files.map(readResult))) as [LoadtestResult, LoadtestResult];
  const differs = differences(a, b);
  if (differs.length > 0 && !force) {
    throw new ClientError(
      'CLI_LOADTEST_COMPARE',
      `compare refuses unlike runs: ${differs.join('; ')} (-force compares them anyway)`,
    );
  }
  const warning = differs.length === 0 ? undefined : `UNLIKE RUNS compared (-force): ${differs.join('; ')}`;
  io.out(`${warning === undefined ? '' : `${warning}\n`}${compareText(a, b, files as [string, string])}`);
  if (reportFile !== undefined) await writeFile(reportFile, await renderReport([a, b], warning));
  return 0;
}

/** What makes two runs unlike: each as `what A vs B`. */
function differences(a: LoadtestResult, b: LoadtestResult): string[] {
  const rateOf = (r: LoadtestResult): string =>
    r.settings.stages !== null && r.settings.stages.length > 1
      ? `stages ${r.settings.stages.map((s) => `${s.ms / 1000}s:${s.rate}${s.to === undefined ? '' : `-${s.to}`}`).join(',')}`
      : r.settings.findMax
        ? 'find-max'
        : r.settings.rate === null
          ? 'none asked'
          : `${r.settings.rate}/s`;
  const pairs: [string, string, string][] = [
    ['scenario', a.scenario, b.scenario],
    ['mode', `${a.settings.mode}`, `${b.settings.mode}`],
    ['rate', rateOf(a), rateOf(b)],
    ['targets', String(a.targets.length), String(b.targets.length)],
    ['schema', a.schema, b.schema],
  ];
  return pairs.filter(([, x, y]) => x !== y).map(([what, x, y]) => `${what} ${x} vs ${y}`);
}

/** Why a result file could not be read, in words. */
const READ_ERRORS: Readonly<Record<string, string>> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EISDIR: 'a directory, not a result file',
};

async function readResult(file: string): Promise<LoadtestResult> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ClientError(
      'CLI_LOADTEST_COMPARE',
      `cannot read ${file}: ${READ_ERRORS[code ?? ''] ?? code ?? String(err)}`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ClientError(
      'CLI_LOADTEST_COMPARE',
      `${file} is not JSON: expected a result written by svc-agent loadtest -out`,
    );
  }
  const schema = (value as { schema?: unknown } | null)?.schema;
  if (schema === 'svc-agent-loadtest/1') return fromVersion3(fromVersion2(fromVersion1(value as Version1)));
  if (schema === 'svc-agent-loadtest/2') return fromVersion3(fromVersion2(value as Version2));
  if (schema === 'svc-agent-loadtest/3') return fromVersion3(value as LoadtestResult);
  if (schema !== RESULT_SCHEMA) {
    throw new ClientError(
      'CLI_LOADTEST_COMPARE',
      `${file} is not a ${RESULT_SCHEMA} result (schema ${JSON.stringify(schema ?? null)}): expected a result written by svc-agent loadtest -out`,
    );
  }
  return value as LoadtestResult;
}

type Version2 = Omit<LoadtestResult, 'summary' | 'settings'> & {
  summary: Omit<LoadtestResult['summary'], 'achievedRps' | 'askedRps' | 'late' | 'dropped' | 'outcomes'> & {
    rps: number;
  };
  settings: Omit<LoadtestResult['settings'], 'stages' | 'findMax'>;
};
type Version1 = Version2 & {
  crossCheck: { generatorAnswered: number; targetCounted: number | null; agrees: boolean | null };
};

/** A version 1 result (authorize and connection-rate only) in version 2's shape. */
function fromVersion1(r: Version1): Version2 {
  const c = r.crossCheck;
  return {
    ...r,
    unit: r.scenario === 'connection-rate' ? 'connections/s' : 'req/s',
    propagation: [],
    facts: {},
    crossCheck: {
      counter: 'svc.connect.authorize.allowed + denied',
      generatorCounted: c.generatorAnswered,
      targetCounted: c.targetCounted,
      agrees: c.agrees,
      warmupIncluded: true,
    },
  };
}

/** A version 2 result in version 3's shape: its rate is what it achieved; late and dropped calls were not counted then (0). */
function fromVersion2(r: Version2): LoadtestResult {
  const { rps, ...summary } = r.summary;
  return {
    ...r,
    settings: { ...r.settings, stages: null, findMax: false },
    summary: { ...summary, achievedRps: rps, askedRps: r.settings.rate, late: 0, dropped: 0, outcomes: {} },
    stages: [],
    findMax: null,
    thresholds: [],
    markers: [],
    series: r.series.map((s) => ({ ...s, late: 0, dropped: 0, outcomes: {} })),
    propagation: r.propagation.map((p) => ({ ...p, includes: null, agentMs: null })),
    client: { ...r.client, cores: 0, machinePct: 0 },
  } as LoadtestResult;
}

/**
 * A version 3 result in version 4's shape: its rates counted up to the last answer (no drain
 * apart, 0), its series points and stages without their own rates (each second's count as its rate).
 */
function fromVersion3(r: LoadtestResult): LoadtestResult {
  return {
    ...r,
    summary: {
      ...r.summary,
      answered: r.summary.answered ?? r.summary.ok,
      asked: r.summary.asked ?? null,
      drain: r.summary.drain ?? { ms: 0, requests: 0, answered: 0 },
    },
    series: r.series.map((p) => ({
      ...p,
      startMs: p.startMs ?? (p.t - 1) * 1000,
      endMs: p.endMs ?? p.t * 1000,
      answered: p.answered ?? p.requests,
      achievedRps: p.achievedRps ?? p.requests,
      askedRps: p.askedRps ?? null,
    })),
    thresholds: r.thresholds.map((t) => ({ ...t, unit: t.unit ?? '' })),
  };
}

const num = (n: number): string => n.toLocaleString('en-US');

function compareText(a: LoadtestResult, b: LoadtestResult, files: readonly [string, string]): string {
  const msText = (us: number): string => `${ms(us)} ms`;
  const asked = (r: LoadtestResult): string =>
    r.summary.askedRps === null ? 'none (closed loop)' : `${num(r.summary.askedRps)}/s`;
  type Row = [string, string, string, number | undefined, number | undefined];
  const latencyRow = (label: string, key: keyof LoadtestResult['summary']['latencyUs']): Row => {
    const [x, y] = [a.summary.latencyUs[key], b.summary.latencyUs[key]];
    return [label, msText(x), msText(y), x, y];
  };
  const rows: Row[] = [
    ['scenario', a.scenario, b.scenario, undefined, undefined],
    ['rate asked', asked(a), asked(b), undefined, undefined],
    [
      'achieved',
      `${num(a.summary.achievedRps)} ${a.unit}`,
      `${num(b.summary.achievedRps)} ${b.unit}`,
      a.summary.achievedRps,
      b.summary.achievedRps,
    ],
    ['dropped', num(a.summary.dropped), num(b.summary.dropped), undefined, undefined],
    latencyRow('latency p50', 'p50'),
    latencyRow('latency p99', 'p99'),
    latencyRow('latency p99.9', 'p999'),
    latencyRow('latency max', 'max'),
    ['errors', num(a.summary.requests - a.summary.ok), num(b.summary.requests - b.summary.ok), undefined, undefined],
  ];
  const width = Math.max(12, ...rows.map((r) => r[1].length)) + 2;
  const lines = rows.map(
    ([label, x, y, nx, ny]) =>
      `  ${label.padEnd(16)}${x.padEnd(width)}${y.padEnd(width)}${nx !== undefined && ny !== undefined && nx > 0 ? `${(ny / nx).toFixed(2)}x` : ''}`,
  );
  return `\n  ${''.padEnd(16)}${'A'.padEnd(width)}${'B'.padEnd(width)}B / A\n${lines.join('\n')}\n\n  A: ${files[0]}\n  B: ${files[1]}\n`;
}
