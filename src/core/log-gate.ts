// Repeated failures of one kind, logged once per cause: the first of a run at its level, each
// repeat at debug only (counted), and one info line when the run ends (its cause cleared, or it
// stopped recurring): "request failed (repeated 1,132 times over 5m0s)". Each cause runs on its
// own, so two causes taking turns (an outage's timeouts and refusals) make two lines, not one a turn.
// An etcd outage fails every request, retry and poll the same way for minutes; an operator needs
// when it began, what it was, when it ended and how much it cost, not a line per attempt.
import type { Clock, TimerHandle } from './clock.js';
import { formatDuration } from './duration.js';
import { isAgentError } from './errors.js';
import type { Logger } from './log.js';

/** `debug` for a cause another component logs already (loggedAtSource): its count goes to debug too. */
export type GateLevel = 'debug' | 'info' | 'warn' | 'error';

export interface LogGateOptions {
  readonly log: Logger;
  readonly clock: Clock;
  /**
   * A run that has not recurred for this long ends by itself (for failures whose end nothing
   * reports, such as failed answers); without it a run ends only by clear().
   */
  readonly quietMs?: number | undefined;
  /** Runs held at once; the oldest ends when one more starts (causes named by error text are unbounded). */
  readonly maxCauses?: number | undefined;
}

interface Run {
  readonly level: GateLevel;
  readonly fields: object;
  readonly msg: string;
  readonly firstAt: number;
  lastAt: number;
  repeats: number;
}

const DEFAULT_MAX_CAUSES = 64;

export class LogGate {
  private readonly runs = new Map<string, Run>();
  private timer: TimerHandle | undefined;

  constructor(private readonly o: LogGateOptions) {}

  /** Whether some cause is failing now (a run is open). */
  get failing(): boolean {
    return this.runs.size > 0;
  }

  /**
   * One failure of `cause` (a stable name: an error code, never its text with keys or tokens in it):
   * logged at `level` if it starts a run, else counted and logged at debug. True when it was logged
   * at `level`.
   */
  fail(cause: string, level: GateLevel, fields: object, msg: string): boolean {
    const now = this.o.clock.now();
    const run = this.runs.get(cause);
    if (run !== undefined) {
      run.repeats++;
      run.lastAt = now;
      this.o.log.debug({ ...fields, repeat: run.repeats }, msg);
      return false;
    }
    if (this.runs.size >= (this.o.maxCauses ?? DEFAULT_MAX_CAUSES)) this.end(this.runs.keys().next().value as string);
    this.runs.set(cause, { level, fields, msg, firstAt: now, lastAt: now, repeats: 0 });
    this.o.log[level](fields, msg);
    this.armQuiet(now);
    return true;
  }

  /** `cause`'s run ended (every run's, without one): its repeats, if any, are logged with their count. */
  clear(cause?: string): void {
    if (this.runs.size === 0) return;
    if (cause !== undefined) this.end(cause);
    else for (const open of [...this.runs.keys()]) this.end(open);
    if (this.runs.size === 0) this.disarm();
  }

  /** Ends every run (its count logged) and the quiet timer: the source is closing. */
  close(): void {
    this.clear();
    this.disarm();
  }

  private end(cause: string): void {
    const run = this.runs.get(cause);
    if (run === undefined) return;
    this.runs.delete(cause);
    if (run.repeats === 0) return;
    this.o.log[run.level === 'debug' ? 'debug' : 'info'](
      { ...run.fields, repeated: run.repeats },
      `${run.msg} (${repeatedText(run.repeats, run.lastAt - run.firstAt)})`,
    );
  }

  /** One timer for every run: it ends those quiet for quietMs and is set again for the next due. */
  private armQuiet(now: number): void {
    const quietMs = this.o.quietMs;
    if (quietMs === undefined || this.timer !== undefined) return;
    let due = Infinity;
    for (const run of this.runs.values()) due = Math.min(due, run.lastAt + quietMs);
    if (due === Infinity) return;
    this.timer = this.o.clock.setTimer(Math.max(0, due - now), () => {
      this.timer = undefined;
      const at = this.o.clock.now();
      for (const [cause, run] of [...this.runs]) if (at - run.lastAt >= quietMs) this.end(cause);
      this.armQuiet(at);
    });
  }

  private disarm(): void {
    this.timer?.cancel();
    this.timer = undefined;
  }
}

/** "repeated 1,132 times over 5m0s": the count after the first, and the time from the first to the last. */
export function repeatedText(repeats: number, spanMs: number): string {
  const times = repeats === 1 ? 'once' : `${repeats.toLocaleString('en-US')} times`;
  return `repeated ${times} over ${spanText(spanMs)}`;
}

/** How long something lasted, as Go prints a duration: to the second from one second on ("5m0s", "250ms"). */
export function spanText(ms: number): string {
  return formatDuration(ms >= 1_000 ? Math.round(ms / 1_000) * 1_000 : Math.round(ms));
}

/**
 * A failure's cause for a gate: an AgentError's code, else its class and code (etcd's and Node's
 * errors carry one). Never the message: it may name a key, and it varies within one cause.
 */
export function causeOf(err: unknown): string {
  if (isAgentError(err)) return err.code;
  if (!(err instanceof Error)) return typeof err;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' || typeof code === 'number'
    ? `${err.constructor.name}:${code}`
    : err.constructor.name;
}
