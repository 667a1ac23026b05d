// Errors asserted by code: the AgentError a call throws or rejects with (its code and text), and
// the answer an HTTP client receives for a code (plain text carries no code: the status its kind
// maps to and the message its template renders).
import { expect } from 'vitest';
import { ERROR_CATALOGUE, type ErrorCode } from '../../src/core/error-catalogue.js';
import { AgentError, renderMessage, type ErrorArgs } from '../../src/core/errors.js';
import { STATUS_BY_KIND } from '../../src/http/reply.js';

/** `[status, body]` of the reply for an error the domain builds (a denial names its token and resource). */
export function answerOfError(err: AgentError): [number, string] {
  return [STATUS_BY_KIND[checkedKind(err).kind], err.message];
}

/** `[status, body]` of the reply for `code` with `params`, as `failure()` helpers of the integration tests read it. */
export function answerOf<C extends ErrorCode>(code: C, ...[params]: ErrorArgs<C>): [number, string] {
  return [
    STATUS_BY_KIND[ERROR_CATALOGUE[code].kind],
    renderMessage(code, params as Readonly<Record<string, unknown>> | undefined),
  ];
}

/** The code and message of the AgentError a promise rejects with; its kind must be its code's. */
export async function agentRejectionOf(promise: Promise<unknown>): Promise<[ErrorCode, string]> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof AgentError) return [checkedKind(err).code, err.message];
    throw err;
  }
  throw new Error('expected a rejection');
}

export function agentErrorOf(fn: () => unknown): AgentError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AgentError) return checkedKind(err);
    throw err;
  }
  throw new Error('expected an AgentError');
}

/** A raise site that still passes its own kind must agree with the catalogue. */
function checkedKind(err: AgentError): AgentError {
  expect(err.kind, `kind of ${err.code}`).toBe(ERROR_CATALOGUE[err.code].kind);
  return err;
}
