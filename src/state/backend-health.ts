// Whether the state backend can be reached right now. Components whose behaviour changes while the
// cluster store is down (the ACL down policy) take this instead of the whole store.
import type { Clock } from '../core/clock.js';

export interface BackendHealth {
  /** False while the cluster store (etcd) cannot be reached; reads then come from a stale view. */
  readonly connected: boolean;
}

/** The embedded store lives in this process: it is never out of reach. */
export const ALWAYS_CONNECTED: BackendHealth = Object.freeze({ connected: true });

/** The store itself when it reports its reachability (the etcd store does), else always connected. */
export function backendHealthOf(store: object): BackendHealth {
  return typeof (store as Partial<BackendHealth>).connected === 'boolean' ? (store as BackendHealth) : ALWAYS_CONNECTED;
}

/** Leader contact as the HTTP headers report it (KnownLeader, LastContact). */
export interface BackendContact {
  readonly knownLeader: boolean;
  readonly lastContactMs: number;
}

/**
 * A cluster store opened by the embedder (no leadership probe of its own): KnownLeader and
 * LastContact follow the store's own exchanges with etcd. Undefined for the embedded store.
 */
export function backendContactOf(store: object, clock: Clock): BackendContact | undefined {
  const s = store as Partial<{ readonly connected: boolean; readonly lastContact: number }>;
  if (typeof s.connected !== 'boolean') return undefined;
  return {
    get knownLeader() {
      return s.connected === true;
    },
    get lastContactMs() {
      return s.connected === true ? 0 : Math.max(0, clock.now() - (s.lastContact ?? 0));
    },
  };
}
