// The loadtest flags that carry a duration or a rate, read and refused with one wording.
import { ClientError } from '../client/api.js';
import { parseDuration } from '../../core/duration.js';
import type { Stage } from '../../loadgen/pacer.js';

/** A duration flag in ms (`10s`, `2m`), or `fallback` when absent. */
export function durationFlag(flag: string, value: unknown, fallback: number, example: string): number {
  if (value === undefined) return fallback;
  const ms = parseDuration(String(value));
  if (ms === undefined || ms < 0)
    throw new ClientError(
      'CLI_LOADTEST_FLAG',
      `invalid value ${JSON.stringify(value)} for flag -${flag}: expected a duration such as ${example}`,
    );
  return ms;
}

/** A per-second rate flag (`5000/s` or `5000`), or undefined when absent; `what` and `example` word the refusal. */
export function rateFlag(flag: string, value: unknown, what: string, example: string): number | undefined {
  if (value === undefined) return undefined;
  const rate = Number(/^(\d+(?:\.\d+)?)(?:\/s)?$/.exec(String(value))?.[1] ?? NaN);
  if (!(rate > 0))
    throw new ClientError(
      'CLI_LOADTEST_FLAG',
      `invalid value ${JSON.stringify(value)} for flag -${flag}: expected ${what} per second, such as ${example}`,
    );
  return rate;
}

/**
 * `-stages 10s:1000,30s:1000-20000,10s:0`: an open loop's stages, each a duration and calls per
 * second: one rate (a hold; 0 is a pause) or two (a ramp from the first to the second).
 */
export function stagesFlag(value: unknown): Stage[] | undefined {
  if (value === undefined) return undefined;
  const refuse = (): never => {
    throw new ClientError(
      'CLI_LOADTEST_FLAG',
      `invalid value ${JSON.stringify(value)} for flag -stages: expected duration:rate or duration:from-to stages, such as 10s:1000,30s:1000-20000,10s:0`,
    );
  };
  const stages = String(value)
    .split(',')
    .map((step) => {
      const [duration, rate, extra] = step.split(':');
      if (duration === undefined || rate === undefined || extra !== undefined) return refuse();
      const ms = parseDuration(duration.trim());
      const m = /^(\d+(?:\.\d+)?)(?:\/s)?(?:-(\d+(?:\.\d+)?)(?:\/s)?)?$/.exec(rate.trim());
      if (ms === undefined || !(ms > 0) || m === null) return refuse();
      const from = Number(m[1]);
      return m[2] === undefined ? { ms, rate: from } : { ms, rate: from, to: Number(m[2]) };
    });
  if (stages.every((s) => s.rate === 0 && (s.to ?? 0) === 0)) refuse();
  return stages;
}
