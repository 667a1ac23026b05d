// The agent's sessions and KV locks: every agent reads them from its view and applies KV lock
// operations; where the role keeps leases (a lone agent, a cluster server) it also runs session
// writes and the reaper that ends sessions and frees their keys (docs/decisions.md#sessions).
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import type { SessionLeases } from '../sessions/leases.js';
import { KvLocks } from '../sessions/locks.js';
import { SessionReaper } from '../sessions/reaper.js';
import { Sessions } from '../sessions/sessions.js';
import type { Role } from './role.js';

export interface SessionParts {
  readonly locks: KvLocks;
  /** Undefined on a client agent: a server runs its session writes. */
  readonly sessions: Sessions | undefined;
  /** Where TTL sessions' leases live (a restored snapshot's sessions get new ones); undefined on a client agent. */
  readonly leases: SessionLeases | undefined;
  close(): void;
}

export function openSessions(
  role: Role,
  o: { readonly clock: Clock; readonly log: Logger; readonly nodeName: string; readonly selfRegistered: Promise<void> },
): SessionParts {
  const store = role.store;
  const locks = new KvLocks(store, o.clock);
  let sessions: Sessions | undefined;
  const leases = role.sessionLeases((lease) => sessions?.leaseExpired(lease));
  if (leases === undefined) return { locks, sessions: undefined, leases: undefined, close: () => undefined };
  sessions = new Sessions({ store, leases, locks, log: o.log, nodeName: o.nodeName });
  sessions.adoptLeases();
  const reaper = new SessionReaper(store, sessions, locks, o.clock, o.log);
  // A session on this agent's node is judged once the node is back in the catalog.
  let closed = false;
  void o.selfRegistered.then(() => {
    if (!closed) reaper.start();
  });
  return {
    locks,
    sessions,
    leases,
    close() {
      closed = true;
      reaper.close();
      leases.close();
    },
  };
}
