// Prints a bench's result as a compact aligned table and writes it, with the run's settings and
// environment, to .bench-out/<name>.json for later comparison.
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { BENCH_OUT } from './paths.js';

export type Cell = string | number | undefined;

/** Fixed-width table; numbers right-aligned, text left-aligned, missing cells as '-'. */
export function formatTable(headers: readonly string[], rows: readonly (readonly Cell[])[]): string {
  const text = rows.map((row) => headers.map((_, i) => cellText(row[i])));
  const widths = headers.map((h, i) => Math.max(h.length, ...text.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[], numeric: (i: number) => boolean): string =>
    cells
      .map((c, i) => (numeric(i) ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  const isNumeric = (i: number): boolean => rows.some((r) => typeof r[i] === 'number');
  return [
    line(headers, isNumeric),
    line(
      widths.map((w) => '-'.repeat(w)),
      () => false,
    ),
    ...text.map((r) => line(r, isNumeric)),
  ].join('\n');
}

function cellText(cell: Cell): string {
  if (cell === undefined || (typeof cell === 'number' && !Number.isFinite(cell))) return '-';
  if (typeof cell === 'string') return cell;
  if (Number.isInteger(cell)) return cell.toLocaleString('en-US');
  if (Math.abs(cell) >= 100) return Math.round(cell).toLocaleString('en-US');
  // Three significant digits, but no exponent for float dust like 1e-11 (shown as 0).
  return Math.abs(cell) >= 1 ? cell.toPrecision(3) : String(Number(cell.toFixed(3)));
}

/** Rounds for JSON so the files diff cleanly: integers from 100, 3 significant digits from 1, else 4 decimals. */
export function round(n: number): number {
  if (!Number.isFinite(n)) return n;
  if (Math.abs(n) >= 100) return Math.round(n);
  return Math.abs(n) >= 1 ? Number(n.toPrecision(3)) : Number(n.toFixed(4));
}

/** Writes `.bench-out/<name>.json` with the environment attached; returns the path. */
export async function writeJson(name: string, data: Record<string, unknown>): Promise<string> {
  await mkdir(BENCH_OUT, { recursive: true });
  const path = join(BENCH_OUT, `${name}.json`);
  const env = {
    node: process.version,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    platform: process.platform,
  };
  await writeFile(path, `${JSON.stringify({ name, date: new Date().toISOString(), env, ...data }, null, 2)}\n`);
  return path;
}

/** The first `lines` lines of an error message (a child's stack trace is long and repeats). */
export function brief(message: string, lines = 4): string {
  const all = message.split('\n').filter((l) => l.trim() !== '');
  return all.length <= lines ? all.join('\n') : `${all.slice(0, lines).join('\n')}\n  ...`;
}
