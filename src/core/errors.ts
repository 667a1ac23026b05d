// The one error type of the agent. Code raises `agentError(code, params)`: the code names an entry
// of the catalogue (src/core/error-catalogue.ts), which gives its kind and renders its message;
// only the HTTP layer maps a kind to a status.
import {
  ERROR_CATALOGUE,
  type ErrorCode,
  type ErrorKind,
  type ErrorSpec,
  type PlaceholderOf,
  type TemplateValue,
} from './error-catalogue.js';

export type { CodeTaking, ErrorCode, ErrorKind, TemplateValue } from './error-catalogue.js';

export class AgentError extends Error {
  override readonly name = 'AgentError';
  readonly code: ErrorCode;
  readonly kind: ErrorKind;

  /** An error whose message is already rendered (a subclass, or one rebuilt from a worker's data); the kind is the catalogue's. */
  constructor(code: ErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.kind = ERROR_CATALOGUE[code].kind;
  }
}

/** What a raise may add besides its template's parameters. */
export interface ErrorDetails {
  readonly cause?: unknown;
}

export type ErrorParams<C extends ErrorCode> = { readonly [K in PlaceholderOf<C>]: TemplateValue } & ErrorDetails;

/** A code without parameters takes only optional details; any other code needs its parameters. */
export type ErrorArgs<C extends ErrorCode> = [PlaceholderOf<C>] extends [never]
  ? [details?: ErrorDetails]
  : [params: ErrorParams<C>];

/** The error for `code`, its message rendered from the catalogue's template with `params`. */
export function agentError<C extends ErrorCode>(code: C, ...[params]: ErrorArgs<C>): AgentError {
  const message = renderMessage(code, params as Readonly<Record<string, unknown>> | undefined);
  return params?.cause === undefined
    ? new AgentError(code, message)
    : new AgentError(code, message, { cause: params.cause });
}

// A template compiled once into alternating literal text and parameters, on its first use.
type Part = string | { readonly name: string; readonly quoted: boolean };
const compiled = new Map<ErrorCode, readonly Part[]>();
const PLACEHOLDER = /\{([A-Za-z]+)(:q)?\}/g;

function compile(template: string): readonly Part[] {
  const parts: Part[] = [];
  let last = 0;
  for (const m of template.matchAll(PLACEHOLDER)) {
    if (m.index > last) parts.push(template.slice(last, m.index));
    parts.push({ name: m[1] as string, quoted: m[2] !== undefined });
    last = m.index + m[0].length;
  }
  if (last < template.length) parts.push(template.slice(last));
  return parts;
}

/** The catalogue's message for `code` with `params` inserted (exported for the catalogue's tests and docs). */
export function renderMessage(code: ErrorCode, params?: Readonly<Record<string, unknown>>): string {
  let parts = compiled.get(code);
  if (parts === undefined) {
    parts = compile(ERROR_CATALOGUE[code].message);
    compiled.set(code, parts);
  }
  let out = '';
  for (const part of parts) {
    if (typeof part === 'string') out += part;
    else {
      const value = String(params?.[part.name]);
      out += part.quoted ? JSON.stringify(value) : value;
    }
  }
  return out;
}

export const isAgentError = (err: unknown): err is AgentError => err instanceof AgentError;

/** An error whose cause the component that raised it logs once (the catalogue's `logged`): others need not. */
export function loggedAtSource(err: unknown): boolean {
  return isAgentError(err) && (ERROR_CATALOGUE[err.code] as ErrorSpec).logged === true;
}
