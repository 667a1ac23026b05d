// One ACL write at a time. A write validates against the current store (is this SecretID in use,
// does this policy name exist) and then commits; with the WAL, a commit is applied only once it
// is durable, so two writes running side by side could both pass their checks. Running them one
// after another makes check-then-commit atomic for everything written through this lock.
import { agentError, type AgentError } from '../core/errors.js';

export class WriteLock {
  private tail: Promise<unknown> = Promise.resolve();

  /** Runs `fn` once every write queued before it has settled; resolves or rejects with it. */
  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.tail.then(fn);
    this.tail = result.catch(() => undefined);
    return result;
  }
}

/** A guarded commit failed: something outside the lock changed the row in between. */
export function writeRaced(): AgentError {
  return agentError('ACL_WRITE_RACE');
}
