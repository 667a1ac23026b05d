// Zod builders for single config values. Every failure reads "expected X, got Y" so an operator
// sees what was wanted and what arrived; validate.ts prefixes the dotted key.
import { isIP } from 'node:net';
import { z } from 'zod';
import { parseDuration } from '../core/duration.js';
import { isUuid } from '../core/ids.js';

/** Renders a config value for an error message: strings quoted, containers named, not dumped. */
export function show(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'an array';
  if (value !== null && typeof value === 'object') return 'an object';
  return JSON.stringify(value);
}

/** Secrets (tokens, keys) must not reach logs through an error message, so only their shape is told. */
function showShape(value: unknown): string {
  if (typeof value === 'string') return `a ${value.length}-character string`;
  if (value === null) return 'null';
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}

type Input = { readonly input?: unknown };

const expecting = (what: string, render: (value: unknown) => string = show) => ({
  error: (issue: Input) => `expected ${what}, got ${render(issue.input)}`,
});

/** `"a"`, `"a" or "b"`, `one of "a", "b", "c"`: how a choice reads in a message. */
export function listChoices(values: readonly string[]): string {
  const quoted = values.map((v) => JSON.stringify(v));
  if (quoted.length <= 2) return quoted.join(' or ');
  return `one of ${quoted.join(', ')}`;
}

export const bool = () => z.boolean(expecting('true or false'));

export const text = () => z.string(expecting('a non-empty string')).min(1, expecting('a non-empty string'));

export const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, expecting(listChoices(values)));

/** An integer in [min, max]; `max` omitted means unbounded above. */
export function int(min: number, max?: number) {
  const what = max === undefined ? `an integer of at least ${min}` : `an integer from ${min} to ${max}`;
  const e = expecting(what);
  const base = z.number(e).int(e).min(min, e);
  return max === undefined ? base : base.max(max, e);
}

export const nonNegativeNumber = () =>
  z.number(expecting('a number of at least 0')).min(0, expecting('a number of at least 0'));

/**
 * A Go duration string ("30s", "72h") converted to milliseconds. Strings only, as in Consul's
 * JSON config: a bare number would be ambiguous between seconds and nanoseconds.
 */
export function duration(bound: 'positive' | 'non-negative') {
  return z.string(expecting('a duration string such as "30s"')).transform((value, ctx) => {
    const ms = parseDuration(value);
    if (ms === undefined) {
      ctx.addIssue({ code: 'custom', message: `invalid duration ${JSON.stringify(value)}` });
      return z.NEVER;
    }
    if (ms < 0 || (ms === 0 && bound === 'positive')) {
      ctx.addIssue({ code: 'custom', message: `expected a ${bound} duration, got ${JSON.stringify(value)}` });
      return z.NEVER;
    }
    return ms;
  });
}

const UUID_TEXT = 'a UUID (8-4-4-4-12 hex digits)';

/** A UUID-shaped string; Consul stores node IDs lower case, so it is folded here. */
export const uuid = () =>
  z
    .string(expecting(UUID_TEXT))
    .refine(isUuid, expecting(UUID_TEXT))
    .transform((v) => v.toLowerCase());

export const secretText = () =>
  z.string(expecting('a non-empty string', showShape)).min(1, expecting('a non-empty string', showShape));

/** PEM material may be a private key, so like the other secrets it is described, never echoed. */
export const pem = () =>
  z
    .string(expecting('a PEM-encoded string', showShape))
    .refine((v) => /-----BEGIN [A-Z0-9 ]+-----/.test(v), expecting('a PEM-encoded string', showShape));

/** etcd client URLs: a list of `http://host:port` or `https://host:port`, as etcd's own clients take them. */
export const urlList = () =>
  z.array(z.string(), expecting('a list of URLs')).transform((values, ctx) => {
    for (const value of values) {
      let url: URL | undefined;
      try {
        url = new URL(value);
      } catch {
        url = undefined;
      }
      if (url === undefined || !/^https?:$/.test(url.protocol) || url.hostname === '' || url.pathname.length > 1) {
        ctx.addIssue({
          code: 'custom',
          message: `expected http:// or https:// URLs such as "http://127.0.0.1:2379", got ${JSON.stringify(value)}`,
        });
        return z.NEVER;
      }
    }
    return values;
  });

/** An etcd key prefix: absolute, so meshes sharing one etcd cannot overlap by accident. */
export const keyPrefix = () =>
  z
    .string(expecting('a key prefix starting with "/"'))
    .refine((v) => v.startsWith('/') && v.length > 1, expecting('a key prefix starting with "/"'));

export const ipAddress = () =>
  z.string(expecting('an IP address')).refine((v) => isIP(v) !== 0, expecting('an IP address'));

/** A SPIFFE trust domain (docs/decisions.md D9): DNS-like, lower-cased as SPIFFE requires. */
export const trustDomain = () =>
  z.string(expecting('a non-empty string')).transform((value, ctx) => {
    const lower = value.toLowerCase();
    if (!/^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/.test(lower) || lower.length > 255) {
      ctx.addIssue({
        code: 'custom',
        message: `expected a trust domain (letters, digits, "-", "_", dot-separated), got ${JSON.stringify(value)}`,
      });
      return z.NEVER;
    }
    return lower;
  });

/** Consul lower-cases the datacenter before checking it, so "DC1" is accepted as "dc1". */
export const datacenterName = () =>
  z.string(expecting('a non-empty string')).transform((value, ctx) => {
    const lower = value.toLowerCase();
    if (!/^[a-z0-9_-]+$/.test(lower)) {
      ctx.addIssue({
        code: 'custom',
        message: `expected only lowercase alphanumerics, "-" or "_", got ${JSON.stringify(value)}`,
      });
      return z.NEVER;
    }
    return lower;
  });

const LOG_LEVELS = {
  trace: 'trace',
  debug: 'debug',
  info: 'info',
  warn: 'warn',
  error: 'error',
  err: 'error',
} as const;
type LogLevelName = (typeof LOG_LEVELS)[keyof typeof LOG_LEVELS];

/** Consul spells levels in any case and accepts "err" (its historical name) for error. */
export const logLevel = () =>
  z.string(expecting('a log level')).transform((value, ctx): LogLevelName => {
    const name = value.toLowerCase();
    // hasOwn, not a bare lookup: "constructor" must not resolve through the prototype.
    if (!Object.hasOwn(LOG_LEVELS, name)) {
      const names = listChoices(['trace', 'debug', 'info', 'warn', 'error']);
      ctx.addIssue({ code: 'custom', message: `expected ${names}, got ${JSON.stringify(value)}` });
      return z.NEVER;
    }
    return LOG_LEVELS[name as keyof typeof LOG_LEVELS];
  });
