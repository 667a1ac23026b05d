// Go's time.Duration text form ("300ms", "1h30m", "-1.5s"), which Consul uses for `wait` and
// every duration in its config. A bare number other than "0" is not a duration.

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;

/** Parses a Go duration into milliseconds (fractional below 1 ms); undefined when malformed. */
export function parseDuration(text: string): number | undefined {
  let s = text;
  let sign = 1;
  if (s.startsWith('-') || s.startsWith('+')) {
    if (s[0] === '-') sign = -1;
    s = s.slice(1);
  }
  if (s === '0') return 0;
  if (s === '') return undefined;
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < s.length) {
    const start = PART.lastIndex;
    const m = PART.exec(s);
    if (!m || m.index !== start) return undefined;
    total += Number(m[1]) * (UNIT_MS[m[2] as string] as number);
  }
  return sign * total;
}

/** Formats milliseconds the way Go prints a Duration ("72h0m0s", "1m30s", "500ms", "1.5µs", "0s"). */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  const sign = ms < 0 ? '-' : '';
  let rest = Math.abs(ms);
  if (rest < 1e-3) return `${sign}${Math.round(rest * 1e6)}ns`;
  if (rest < 1) return `${sign}${trimNumber(rest * 1000)}µs`;
  if (rest < 1000) return `${sign}${trimNumber(rest)}ms`;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  const s = `${trimNumber(rest / 1000)}s`;
  if (h > 0) return `${sign}${h}h${m}m${s}`;
  if (m > 0) return `${sign}${m}m${s}`;
  return `${sign}${s}`;
}

function trimNumber(n: number): string {
  return String(Number(n.toFixed(9)));
}

/** Go's time.ParseDuration error for `text` ("time: missing unit in duration \"15\"" and the like). */
export function durationError(text: string): string {
  const quoted = JSON.stringify(text);
  let s = text.replace(/^[-+]/, '');
  if (s === '') return `time: invalid duration ${quoted}`;
  while (s !== '') {
    const number = /^(\d+(?:\.\d*)?|\.\d+)/.exec(s);
    if (number === null) return `time: invalid duration ${quoted}`;
    s = s.slice(number[0].length);
    const unit = /^[^\d.]*/.exec(s)?.[0] ?? '';
    if (unit === '') return `time: missing unit in duration ${quoted}`;
    if (!(unit in UNIT_MS)) return `time: unknown unit ${JSON.stringify(unit)} in duration ${quoted}`;
    s = s.slice(unit.length);
  }
  return `time: invalid duration ${quoted}`;
}
