// `svc-agent loadtest compare a.json b.json [-report diff.html]`: two results side by side (before
// and after an upgrade, or this agent against another), as a table with B/A ratios and, with
// -report, the charts of both runs overlaid.
import { readFile, writeFile } from 'node:fs/promises';
import { ClientError } from '../client/api.js';
import { parseFlags } from '../client/flags.js';
import { renderReport } from './report.js';
import { ms, RESULT_SCHEMA, type LoadtestResult } from './result.js';

export function compareHelp(): string {
  return 'Options of compare:\n\n  -report=<value>\n      Write an HTML report with both runs\' charts overlaid.';
}

export async function runCompare(argv: readonly string[], io: { out(text: string): void }): Promise<number> {
  const files: string[] = [];
  let reportFile: string | undefined;
  let rest = [...argv];
  while (rest.length > 0) {
    const { values, args } = parseFlags(rest, { report: { kind: 'string', doc: '' } });
    if (typeof values.report === 'string') reportFile = values.report;
    if (args.length === 0) break;
    files.push(args[0] as string);
    rest = args.slice(1);
  }
  if (files.length !== 2) throw new ClientError('compare takes two result files: svc-agent loadtest compare <a.json> <b.json> [-report diff.html]');
  const [a, b] = await Promise.all(files.map(readResult)) as [LoadtestResult, LoadtestResult];
  io.out(compareText(a, b, files as [string, string]));
  if (reportFile !== undefined) await writeFile(reportFile, await renderReport([a, b]));
  return 0;
}

async function readResult(file: string): Promise<LoadtestResult> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new ClientError(`Error reading ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ClientError(`${file} is not JSON: expected a result written by svc-agent loadtest -out`);
  }
  const schema = (value as { schema?: unknown } | null)?.schema;
  if (schema === 'svc-agent-loadtest/1') return fromVersion1(value as LoadtestResult & { crossCheck: { generatorAnswered: number; targetCounted: number | null; agrees: boolean | null } });
  if (schema !== RESULT_SCHEMA) throw new ClientError(`${file} is not a ${RESULT_SCHEMA} result (schema ${JSON.stringify(schema ?? null)}): expected a result written by svc-agent loadtest -out`);
  return value as LoadtestResult;
}

/** A version 1 result (authorize and connection-rate only) in version 2's shape. */
function fromVersion1(r: LoadtestResult & { crossCheck: { generatorAnswered: number; targetCounted: number | null; agrees: boolean | null } }): LoadtestResult {
  const c = r.crossCheck;
  return {
    ...r,
    unit: r.scenario === 'connection-rate' ? 'connections/s' : 'req/s',
    propagation: [],
    facts: {},
    crossCheck: { counter: 'svc.connect.authorize.allowed + denied', generatorCounted: c.generatorAnswered, targetCounted: c.targetCounted, agrees: c.agrees, warmupIncluded: true },
  };
}

function compareText(a: LoadtestResult, b: LoadtestResult, files: readonly [string, string]): string {
  const msText = (us: number): string => `${ms(us)} ms`;
  const rows: [string, string, string, number | undefined, number | undefined][] = [
    ['scenario', a.scenario, b.scenario, undefined, undefined],
    ['throughput', `${a.summary.rps.toLocaleString('en-US')} ${a.unit}`, `${b.summary.rps.toLocaleString('en-US')} ${b.unit}`, a.summary.rps, b.summary.rps],
    ['latency p50', msText(a.summary.latencyUs.p50), msText(b.summary.latencyUs.p50), a.summary.latencyUs.p50, b.summary.latencyUs.p50],
    ['latency p99', msText(a.summary.latencyUs.p99), msText(b.summary.latencyUs.p99), a.summary.latencyUs.p99, b.summary.latencyUs.p99],
    ['latency p99.9', msText(a.summary.latencyUs.p999), msText(b.summary.latencyUs.p999), a.summary.latencyUs.p999, b.summary.latencyUs.p999],
    ['latency max', msText(a.summary.latencyUs.max), msText(b.summary.latencyUs.max), a.summary.latencyUs.max, b.summary.latencyUs.max],
    ['errors', String(a.summary.requests - a.summary.ok), String(b.summary.requests - b.summary.ok), undefined, undefined],
  ];
  const width = Math.max(12, ...rows.map((r) => r[1].length)) + 2;
  const lines = rows.map(([label, x, y, nx, ny]) => `  ${label.padEnd(16)}${x.padEnd(width)}${y.padEnd(width)}${nx !== undefined && ny !== undefined && nx > 0 ? `${(ny / nx).toFixed(2)}x` : ''}`);
  return `\n  ${''.padEnd(16)}${'A'.padEnd(width)}${'B'.padEnd(width)}B / A\n${lines.join('\n')}\n\n  A: ${files[0]}\n  B: ${files[1]}\n`;
}
