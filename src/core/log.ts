// Structured logging. pino is imported here and nowhere else; domain code depends on the small
// Logger interface so that tests can hand in a recording logger.
import { pino } from 'pino';

export interface Logger {
  trace(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error';

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

export function createLogger(level: LogLevel, destination?: NodeJS.WritableStream): Logger {
  const options = { level, base: { component: 'agent' }, redact: { paths: REDACT, censor: '[redacted]' } };
  return destination ? pino(options, destination) : pino(options);
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
};
