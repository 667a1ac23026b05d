// Runs a function that must throw an AgentError and hands the error back for its code and text.
import { AgentError } from '../../src/core/errors.js';

/** The AgentError a promise rejects with, as [kind, message]. */
export async function agentRejectionOf(promise: Promise<unknown>): Promise<[string, string]> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof AgentError) return [err.kind, err.message];
    throw err;
  }
  throw new Error('expected a rejection');
}

export function agentErrorOf(fn: () => unknown): AgentError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AgentError) return err;
    throw err;
  }
  throw new Error('expected an AgentError');
}
