// Transport-agnostic request outcomes: method checks, OPTIONS, unmatched paths, and the mapping of
// thrown errors to replies. The uWS adapter calls these; unit tests call them directly.
import { backgroundClock } from '../core/clock.js';
import { agentError, isAgentError, loggedAtSource } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { LogGate } from '../core/log-gate.js';
import { STATUS_BY_KIND, errorTextReply, textReply, type Reply } from './reply.js';
import type { CompiledRoute } from './routes.js';

/** The reply for a method the route does not declare: OPTIONS → 200, anything else → 405. */
export function methodReply(route: CompiledRoute, method: string): Reply {
  const allow = ['Allow', route.allow] as const;
  if (method === 'OPTIONS') return { status: 200, headers: [allow] };
  return errorTextReply(agentError('HTTP_METHOD_NOT_ALLOWED', { method }), [allow]);
}

/** Consul's root handler: `/` answers, unclean paths redirect, anything else is a 404. */
export function unmatchedPathReply(path: string, rawQuery: string, method: string): Reply {
  if (path === '/') return textReply(200, 'Svc Agent: UI disabled. The HTTP API is served under /v1/.\n');
  const clean = cleanPath(path);
  if (clean !== path) return redirectReply(rawQuery === '' ? clean : `${clean}?${rawQuery}`, method);
  return errorTextReply(agentError(path.includes('/v1/') ? 'HTTP_UNKNOWN_ENDPOINT' : 'HTTP_NOT_API_PATH'));
}

/** Go's ServeMux redirect, with its HTML body on GET and HEAD. */
export function redirectReply(location: string, method: string): Reply {
  const headers = [['Location', location]] as const;
  if (method !== 'GET' && method !== 'HEAD') return { status: 301, headers };
  return {
    status: 301,
    body: `<a href="${htmlEscape(location)}">Moved Permanently</a>.\n\n`,
    contentType: 'text/html; charset=utf-8',
    headers,
  };
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&#34;', "'": '&#39;' };

/** Go's net/http htmlEscape: the path is the client's, echoed into an HTML body. */
function htmlEscape(s: string): string {
  return s.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c] as string);
}

/** Go's path.Clean, keeping a trailing slash as ServeMux does. */
export function cleanPath(path: string): string {
  const out: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') out.pop();
    else out.push(segment);
  }
  let clean = `/${out.join('/')}`;
  if (path.endsWith('/') && clean !== '/') clean += '/';
  return clean;
}

/**
 * A cause of failed answers that has not recurred for this long has ended, and its count is logged:
 * nothing else says when requests stop failing. Long enough that a client retrying every few
 * seconds through an outage makes one run, short enough that its count follows the outage's end.
 */
export const FAILED_ANSWERS_QUIET_MS = 30_000;

/** The failed answers logged through each logger: a run of one cause is one line and a count (src/core/log-gate.ts). */
const failedAnswerGates = new WeakMap<Logger, LogGate>();

/** The gate of `log`'s failed answers, made on first use; its timers keep no process alive. */
function failedAnswers(log: Logger): LogGate {
  let gate = failedAnswerGates.get(log);
  if (gate === undefined) {
    gate = new LogGate({ log, clock: backgroundClock, quietMs: FAILED_ANSWERS_QUIET_MS });
    failedAnswerGates.set(log, gate);
  }
  return gate;
}

/** A 5xx is logged once per code while requests keep failing with it (an outage fails each of them). */
export function errorReply(err: unknown, log: Logger, path: string): Reply {
  if (isAgentError(err)) {
    const status = STATUS_BY_KIND[err.kind];
    if (status >= 500 && !loggedAtSource(err))
      failedAnswers(log).fail(err.code, 'error', { err, path }, 'request failed');
    return errorTextReply(err);
  }
  // A fault not foreseen: each distinct one is a cause of its own (the text names no cause outside this map).
  const cause =
    err instanceof Error ? `unexpected ${err.constructor.name}: ${err.message.slice(0, 200)}` : 'unexpected';
  failedAnswers(log).fail(cause, 'error', { err, path }, 'unexpected error');
  const detail = err instanceof Error && err.message ? err.message : 'An unexpected error occurred';
  return errorTextReply(agentError('INTERNAL_UNEXPECTED', { detail }));
}

/** Decodes the rest of a prefix route's path (a KV key, a name); undefined when malformed. */
export function decodePathRest(raw: string): string | undefined {
  if (!raw.includes('%')) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
}
