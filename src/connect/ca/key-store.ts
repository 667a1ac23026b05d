// Where the CA keeps its private material (a root's key, and what the operator supplied), apart
// from the shared view that every agent reads. A single agent keeps it in its own store's
// `connect-ca` table, written in the same commit as the root it belongs to (TableKeyStore); a
// cluster keeps it in etcd outside the watched range, readable by server agents only
// (cluster-key-store.ts, docs/cluster-security.md).
import type { StateStore, WriteOp } from '../../state/types.js';
import { CA_TABLE, PROVIDER_KEY, type StoredProvider } from './model.js';

/** Material written ahead of the commit that publishes its root. */
export interface StagedKey {
  /** Ops to add to the publishing commit (the table store writes the key in that very commit). */
  readonly ops: readonly WriteOp[];
  /** The publishing commit failed (another server won): drop what was staged, if this call wrote it. */
  discard(): Promise<void>;
}

export interface CaKeyStore {
  /** The private material of root `rootId`; undefined when none is stored for it. */
  load(rootId: string): Promise<StoredProvider | undefined>;
  /** Makes `material` loadable by the time the commit publishing its root is applied. */
  stage(material: StoredProvider): Promise<StagedKey>;
  /** The root was pruned: its key is no longer needed. */
  remove(rootId: string): Promise<void>;
  /**
   * Removes keys staged for roots never published (a server that died between staging a key and
   * committing its root) that existed at `seenAt` (the previous sweep's `revision`; 0: none yet).
   */
  sweep(
    published: ReadonlySet<string>,
    seenAt: number,
  ): Promise<{ readonly removed: number; readonly revision: number }>;
}

const NOTHING_STAGED = (): Promise<void> => Promise.resolve();

/** The single agent's key store: the `provider` row of the `connect-ca` table, as before the cluster. */
export class TableKeyStore implements CaKeyStore {
  constructor(private readonly store: StateStore) {}

  load(rootId: string): Promise<StoredProvider | undefined> {
    const row = this.store.get<StoredProvider>(CA_TABLE, PROVIDER_KEY);
    return Promise.resolve(row?.value.RootID === rootId ? row.value : undefined);
  }

  stage(material: StoredProvider): Promise<StagedKey> {
    return Promise.resolve({
      ops: [{ op: 'set', table: CA_TABLE, key: PROVIDER_KEY, value: material }],
      discard: NOTHING_STAGED,
    });
  }

  sweep(): Promise<{ readonly removed: number; readonly revision: number }> {
    // The key is staged in the root's own commit here: it cannot outlive a root that was never published.
    return Promise.resolve({ removed: 0, revision: 0 });
  }

  remove(): Promise<void> {
    // One row, always the active root's: a pruned root's key was overwritten at its rotation.
    return Promise.resolve();
  }
}
