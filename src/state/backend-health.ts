// Whether the state backend can be reached right now. Components whose behaviour changes while the
// cluster store is down (the ACL down policy) take this instead of the whole store.

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
