// Reads wrk's text report (run with --latency): requests/s, the latency distribution, errors.
// Pure, so a wrk upgrade that changes the report shows up as a clear parse error.

export interface WrkReport {
  requests: number;
  rps: number;
  /** Percentile (50, 75, 90, 99) -> milliseconds. */
  latencyMs: Map<number, number>;
  /** Socket errors by kind; wrk counts each server-side close as a read error. */
  errors: { connect: number; read: number; write: number; timeout: number };
  non2xx: number;
}

// wrk prints times with the largest unit that keeps the number >= 1: us, ms, s, m, h.
const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

function toMs(value: string, unit: string): number {
  const scale = UNIT_MS[unit];
  if (scale === undefined) throw new Error(`wrk: unknown time unit ${unit}`);
  return Number(value) * scale;
}

export function parseWrkOutput(text: string): WrkReport {
  const rps = /^Requests\/sec:\s+([\d.]+)\s*$/m.exec(text)?.[1];
  const requests = /^\s*(\d+) requests in /m.exec(text)?.[1];
  if (rps === undefined || requests === undefined) throw new Error(`wrk: no summary in output:\n${text}`);

  const latencyMs = new Map<number, number>();
  for (const m of text.matchAll(/^\s+(\d+(?:\.\d+)?)%\s+([\d.]+)(us|ms|s|m|h)\s*$/gm)) {
    const [, pct, value, unit] = m;
    if (pct !== undefined && value !== undefined && unit !== undefined) latencyMs.set(Number(pct), toMs(value, unit));
  }
  if (!latencyMs.has(50) || !latencyMs.has(99))
    throw new Error(`wrk: no latency distribution (run with --latency):\n${text}`);

  // "Socket errors: connect 0, read 0, write 0, timeout 0" appears only when one is non-zero.
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text);
  const errors = {
    connect: Number(socket?.[1] ?? 0),
    read: Number(socket?.[2] ?? 0),
    write: Number(socket?.[3] ?? 0),
    timeout: Number(socket?.[4] ?? 0),
  };
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(text)?.[1] ?? 0);

  return { requests: Number(requests), rps: Number(rps), latencyMs, errors, non2xx };
}
