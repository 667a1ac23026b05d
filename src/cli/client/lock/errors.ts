// The lock's errors, worded as Consul's Go client words them (api/api.go's unexpected answer,
// api.IsRetryableError, and the `fmt.Errorf("<what>: %v", err)` wrapping of command/lock/lock.go).
import { AgentError, isAgentError } from '../../../core/errors.js';

/** An answer the lock did not expect, in the words of Consul's Go client. */
export class StatusError extends AgentError {
  constructor(
    readonly status: number,
    body: string,
  ) {
    super('CLI_UNEXPECTED_ANSWER', `Unexpected response code: ${status} (${body.trim()})`);
  }
}

/** api.IsRetryableError: a request that reached no agent, or its 500. */
export const retryable = (err: unknown): boolean =>
  err instanceof StatusError ? err.status === 500 : isAgentError(err) && err.code === 'CLI_CONNECT_FAILED';

export const text = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** `err` said as Go's `fmt.Errorf("<what>: %v", err)`. */
export const wrapped = (what: string, err: unknown): Error => new Error(`${what}: ${text(err)}`);

/** `work`, its failure said as Go's `fmt.Errorf("<what>: %v", err)`. */
export const labelled = <T>(what: string, work: Promise<T>): Promise<T> =>
  work.catch((err: unknown) => {
    throw wrapped(what, err);
  });
