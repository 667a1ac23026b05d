// Structured logging. pino is imported here and nowhere else; domain code depends on the small
// Logger interface so that tests can hand in a recording logger. Lines go out as JSON (`-log-json`,
// library use) or in Consul's text format (`2026-11-24T10:00:00.000Z [INFO]  agent: msg: k=v`),
// and the level of every logger made from the root changes at once on reload. An error logged
// under `err` is one line, its message; its stack (and its causes') only at debug and trace, as
// an operator needs what went wrong and where, and a developer turns the stack on. A tap (GET
// /v1/agent/monitor) gets the lines of its own level, below the agent's too, as Consul's monitor:
// while one is open the loggers write at its level and the console and file keep the agent's.
import { pino, type Logger as PinoLogger } from 'pino';
import { describeFsError, errorText } from './error-text.js';
import { formatTextLine } from './log-text.js';

export interface Logger {
  trace(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  /** A logger that adds `bindings` to each line; a `component` binding replaces the parent's. */
  child(bindings: Record<string, unknown>): Logger;
  /** Whether a line at this level would be written (to skip building it otherwise). */
  isLevelEnabled?(level: LogLevel): boolean;
}

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error';
export type LogFormat = 'text' | 'json';

/** The logger an application makes once: its level can change while it runs. */
export interface RootLogger extends Logger {
  readonly level: LogLevel;
  setLevel(level: LogLevel): void;
}

/** Every line logged through a root logger, at a level of the reader's choosing (GET /v1/agent/monitor). */
export interface LogTap {
  /**
   * Calls `fn` with each line at `level` or above (pino's JSON text, newline-terminated), whatever
   * the agent's own level, from inside the call that logged it; returns the remove.
   */
  tap(level: LogLevel, fn: (json: string) => void): () => void;
}

/** pino's number of each level. */
const LEVEL_RANK: Readonly<Record<LogLevel, number>> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50 };
const LEVEL_AT = '{"level":"'.length;

/** The rank of a line pino wrote: its first key is `level` (the formatter below), read without parsing the line; `fatal` ranks above error. */
function lineRank(json: string): number {
  const name = json.slice(LEVEL_AT, json.indexOf('"', LEVEL_AT));
  return Object.hasOwn(LEVEL_RANK, name) ? LEVEL_RANK[name as LogLevel] : 60;
}

/** Paths whose values never reach a log line: ACL secrets and key material. */
const REDACT = [
  'token',
  '*.token',
  'secretId',
  '*.secretId',
  'SecretID',
  '*.SecretID',
  'privateKey',
  '*.privateKey',
  'PrivateKey',
  '*.PrivateKey',
  'PrivateKeyPEM',
  '*.PrivateKeyPEM',
  'headers.authorization',
  'headers["x-svc-token"]',
  'headers["x-consul-token"]',
  'acl.tokens.*',
  'config.acl.tokens.*',
];

/**
 * JSON lines carry `level` as its name, `time` as an ISO timestamp and one `component`; text lines
 * are Consul's format. `destination` defaults to stdout.
 */
export function createLogger(
  level: LogLevel,
  destination: NodeJS.WritableStream = process.stdout,
  format: LogFormat = 'json',
  file?: { write(line: string): void },
): RootLogger & LogTap {
  const shape = format === 'json' ? (line: string) => line : formatTextLine;
  let fileFailing = false;
  const family = new Family(level);
  const stream = {
    write(line: string): void {
      const taps = family.taps;
      if (taps.length > 0) {
        const rank = lineRank(line);
        for (const tap of taps) if (rank >= tap.rank) tap.fn(line);
        // Written at a tap's level, below the agent's: the console and the file do not show it.
        if (rank < LEVEL_RANK[family.level]) return;
      }
      const out = shape(line);
      destination.write(out);
      if (file === undefined) return;
      // A log file that cannot be written (disk full, say) must not fail the call that logged: the
      // line still went to the console, and the first failure of a run is said there, once.
      try {
        file.write(out);
        fileFailing = false;
      } catch (err) {
        if (fileFailing) return;
        fileFailing = true;
        const entry = {
          level: 'error',
          time: new Date().toISOString(),
          component: 'agent',
          msg: 'cannot write to log_file; lines go to the console only',
          err: { message: describeFsError(err) },
        };
        destination.write(shape(`${JSON.stringify(entry)}\n`));
      }
    },
  };
  const base = pino(
    {
      level,
      base: null, // no pid or hostname: the start-up line says where the agent runs
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      serializers: { err: (err: unknown) => errorFields(err, family.level === 'debug' || family.level === 'trace') },
      redact: { paths: REDACT, censor: '[redacted]' },
    },
    stream as NodeJS.WritableStream,
  );
  return new Root(family, base);
}

/** What a line shows of an error: its message with its causes' reasons and its code; its stacks only when asked. */
function errorFields(err: unknown, withStack: boolean): unknown {
  if (!(err instanceof Error)) return err;
  const code = (err as { code?: unknown }).code;
  return {
    type: err.name,
    message: errorText(err),
    ...(typeof code === 'string' || typeof code === 'number' ? { code } : {}),
    ...(withStack ? { stack: stackWithCauses(err) } : {}),
  };
}

function stackWithCauses(err: Error): string {
  let text = err.stack ?? `${err.name}: ${err.message}`;
  for (let cause = err.cause, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth++) {
    text += `\ncaused by: ${cause.stack ?? cause.message}`;
  }
  return text;
}

interface Tap {
  readonly rank: number;
  readonly fn: (json: string) => void;
}

/**
 * Every pino logger made from one root, so that a level change reaches the children too. They
 * write at the lowest of the agent's level (`level`) and its taps' levels.
 */
class Family {
  private readonly members: WeakRef<PinoLogger>[] = [];
  /** Replaced, not changed, on each add or remove: a write in progress keeps the array it began with. */
  taps: readonly Tap[] = [];
  private effective: LogLevel;

  constructor(public level: LogLevel) {
    this.effective = level;
  }

  add(logger: PinoLogger): PinoLogger {
    logger.level = this.effective;
    this.members.push(new WeakRef(logger));
    return logger;
  }

  setLevel(level: LogLevel): void {
    this.level = level;
    this.apply();
  }

  tap(level: LogLevel, fn: (json: string) => void): () => void {
    const tap: Tap = { rank: LEVEL_RANK[level], fn };
    this.taps = [...this.taps, tap];
    this.apply();
    return () => {
      if (!this.taps.includes(tap)) return;
      this.taps = this.taps.filter((t) => t !== tap);
      this.apply();
    };
  }

  private apply(): void {
    let effective = this.level;
    for (const tap of this.taps) if (tap.rank < LEVEL_RANK[effective]) effective = rankName(tap.rank);
    this.effective = effective;
    for (let i = this.members.length - 1; i >= 0; i--) {
      const logger = this.members[i]?.deref();
      if (logger === undefined) this.members.splice(i, 1);
      else logger.level = effective;
    }
  }
}

function rankName(rank: number): LogLevel {
  return (Object.keys(LEVEL_RANK) as LogLevel[]).find((name) => LEVEL_RANK[name] === rank) ?? 'info';
}

class Scoped implements Logger {
  constructor(
    protected readonly family: Family,
    /** The pino root without bindings: a child with its own component starts from here. */
    protected readonly base: PinoLogger,
    protected readonly logger: PinoLogger,
    private readonly bindings: Record<string, unknown>,
  ) {}

  trace(obj: object, msg?: string): void {
    this.logger.trace(obj, msg);
  }
  debug(obj: object, msg?: string): void {
    this.logger.debug(obj, msg);
  }
  info(obj: object, msg?: string): void {
    this.logger.info(obj, msg);
  }
  warn(obj: object, msg?: string): void {
    this.logger.warn(obj, msg);
  }
  error(obj: object, msg?: string): void {
    this.logger.error(obj, msg);
  }

  isLevelEnabled(level: LogLevel): boolean {
    return this.logger.isLevelEnabled(level);
  }

  child(bindings: Record<string, unknown>): Logger {
    // pino would write a second `component` key; the child's replaces its parent's instead.
    const merged = { ...this.bindings, ...bindings };
    return new Scoped(this.family, this.base, this.family.add(this.base.child(merged)), merged);
  }
}

class Root extends Scoped implements RootLogger, LogTap {
  constructor(family: Family, base: PinoLogger) {
    family.add(base);
    const bindings = { component: 'agent' };
    super(family, base, family.add(base.child(bindings)), bindings);
  }

  get level(): LogLevel {
    return this.family.level;
  }

  setLevel(level: LogLevel): void {
    this.family.setLevel(level);
  }

  tap(level: LogLevel, fn: (json: string) => void): () => void {
    return this.family.tap(level, fn);
  }
}

/** A logger that drops everything; for library embedding and tests that do not read logs. */
export const silentLogger: Logger = {
  trace() {},
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silentLogger;
  },
  isLevelEnabled() {
    return false;
  },
};
