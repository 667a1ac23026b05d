// What an etcd failure becomes for the agent's callers: one mapping for every part that talks to
// etcd (the store, the private range, the signing mailbox), so each says the same thing of it.
import { agentError, type AgentError } from '../../core/errors.js';
import { etcdFailure } from './etcd-client.js';

export function etcdError(err: unknown): AgentError {
  switch (etcdFailure(err)) {
    // Known to have applied nothing: not sent, or refused by etcd.
    case 'unavailable':
      return agentError('STATE_NO_LEADER', { cause: err });
    // Sent, and never answered: it may have been applied (docs/decisions.md#write-outcome-unknown).
    case 'outcome-unknown':
      return agentError('STATE_WRITE_OUTCOME_UNKNOWN', { cause: err });
    case 'too-large':
      return agentError('STATE_REQUEST_TOO_LARGE', { cause: err });
    case 'no-space':
      return agentError('STATE_ETCD_NO_SPACE', { cause: err });
    case 'closed':
      return agentError('STORE_CLOSED', { cause: err });
    default:
      return agentError('STATE_ETCD_FAILED', { detail: err instanceof Error ? err.message : String(err), cause: err });
  }
}
