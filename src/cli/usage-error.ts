// A command-line mistake; the caller prints the message (and the usage) and exits 1. The agent's
// flags and the client commands alike raise the code of their mistake.
import { nearestKey } from '../config/did-you-mean.js';
import { AgentError, renderMessage, type ErrorArgs } from '../core/errors.js';

export type UsageCode =
  | 'CLI_FLAG_UNDEFINED'
  | 'CLI_FLAG_NEEDS_ARGUMENT'
  | 'CLI_EXTRA_ARGUMENTS'
  | 'CLI_UNKNOWN_COMMAND'
  | 'CLI_FLAG_VALUE'
  | 'CLI_FLAG_BOOL'
  | 'CLI_FLAG_MISSING'
  | 'CLI_FLAG_CONFLICT'
  | 'CLI_FORMAT_UNKNOWN'
  | 'CLI_MISSING_ARGUMENT'
  | 'CLI_EMPTY_ARGUMENT'
  | 'CLI_TOO_MANY_ARGUMENTS';

export class UsageError extends AgentError {
  constructor(message: string, code: UsageCode) {
    super(code, message);
  }
}

/** The usage error `code`, its message rendered from the catalogue. */
export function usageError<C extends UsageCode>(code: C, ...[params]: ErrorArgs<C>): UsageError {
  return new UsageError(renderMessage(code, params as Readonly<Record<string, unknown>> | undefined), code);
}

/** A flag the command does not have, naming the one probably meant. */
export function unknownFlag(name: string, known: Iterable<string>): UsageError {
  const near = nearestKey(name, known);
  return usageError('CLI_FLAG_UNDEFINED', {
    flag: name,
    suggestion: near === undefined ? '' : ` (did you mean -${near}?)`,
  });
}
