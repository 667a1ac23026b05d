// Structured logging. pino is imported here and nowhere else; domain code depends on the small
// Logger interface so that tests can hand in a recording logger. Lines go out as JSON (`-log-json`,
// library use) or in Consul's text format (`2026-11-24T10:00:00.000Z [INFO]  agent: msg: k=v`),
// and the level of every logger made from the root changes at once on reload. An error logged
// under `err` is one line, its message; its stack (and its causes') only at debug and trace, as
// an operator needs what went wrong and where, and a developer turns the stack on.
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
): RootLogger {
  const shape = format === 'json' ? (line: string) => line : formatTextLine;
  let fileFailing = false;
  const stream = {
    write(line: string): void {
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
  const family = new Family(level);
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

/** Every pino logger made from one root, so that a level change reaches the children too. */
class Family {
  private readonly members: WeakRef<PinoLogger>[] = [];

  constructor(public level: LogLevel) {}

  add(logger: PinoLogger): PinoLogger {
    logger.level = this.level;
    this.members.push(new WeakRef(logger));
    return logger;
  }

  setLevel(level: LogLevel): void {
    this.level = level;
    for (let i = this.members.length - 1; i >= 0; i--) {
      const logger = this.members[i]?.deref();
      if (logger === undefined) this.members.splice(i, 1);
      else logger.level = level;
    }
  }
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

class Root extends Scoped implements RootLogger {
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
