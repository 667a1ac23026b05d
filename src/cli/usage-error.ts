// A command-line mistake; the caller prints the message (and the usage) and exits 1.
import { AgentError } from '../core/errors.js';

export class UsageError extends AgentError {
  constructor(message: string) {
    super('CLI_USAGE', message);
  }
}
