// Where a server CA keeps its key and takes its serials: in its own store (a single agent: the key
// in the `connect-ca` table, serials counted in memory), or shared with the cluster's other
// servers (the key in a range only servers read, serials taken by guarded commits).
import type { StateStore } from '../../state/types.js';
import { TableKeyStore, type CaKeyStore } from './key-store.js';
import { LocalSerials, SharedSerials, type SerialAllocator } from './serial-allocator.js';

export interface CaCustody {
  readonly keys: CaKeyStore;
  readonly serials: SerialAllocator;
}

/** A single agent's: its store is its own. */
export function localCustody(store: StateStore): CaCustody {
  return { keys: new TableKeyStore(store), serials: new LocalSerials(store) };
}

/** A cluster server's: `keys` outside the shared view (cluster-key-store.ts), serials guarded against other servers. */
export function sharedCustody(store: StateStore, keys: CaKeyStore): CaCustody {
  return { keys, serials: new SharedSerials(store) };
}
