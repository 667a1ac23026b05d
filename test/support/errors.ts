// Runs a function that must throw an AgentError and hands the error back for its code and text.
import { AgentError } from '../../src/core/errors.js';

export function agentErrorOf(fn: () => unknown): AgentError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AgentError) return err;
    throw err;
  }
  throw new Error('expected an AgentError');
}
