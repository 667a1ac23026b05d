// Whether the state backend can be reached right now. Components whose behaviour changes while the
// cluster store is down (the ACL down policy, the CA's key sweep) take this instead of the whole store.
import type { Clock } from '../core/clock.js';
import type { StoreHealth } from './types.js';

export type { BackendHealth } from './types.js';

/** The embedded store lives in this process: it is never out of reach. */
export const ALWAYS_CONNECTED: StoreHealth = Object.freeze({ connected: true, lastContact: 0 });

/** Leader contact as the HTTP headers report it (KnownLeader, LastContact). */
export interface BackendContact {
  readonly knownLeader: boolean;
  readonly lastContactMs: number;
}

/**
 * Leader contact that follows the store's own exchanges with its backend: for a store opened by the
 * embedder (no leadership probe of its own), and the embedded store (always known, contact 0).
 */
export function backendContact(health: StoreHealth, clock: Clock): BackendContact {
  return {
    get knownLeader() {
      return health.connected;
    },
    get lastContactMs() {
      return health.connected ? 0 : Math.max(0, clock.now() - health.lastContact);
    },
  };
}
