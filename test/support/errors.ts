// Runs a function that must throw an AgentError and hands the error back for its code and text.
import { expect } from 'vitest';
import { ERROR_CATALOGUE, type ErrorCode } from '../../src/core/error-catalogue.js';
import { AgentError } from '../../src/core/errors.js';

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
