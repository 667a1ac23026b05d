// The cluster's CA key store: each root's private material at `ca/keys/<rootId>` of a private range
// (in etcd, `<prefix>private/`, outside the view every agent watches: docs/cluster-security.md).
// Only server agents open it; a key is written before the commit that publishes its root, so a
// server that sees the root can load it.
import type { CaKeyStore, StagedKey } from './key-store.js';
import type { StoredProvider } from './model.js';

const KEYS = 'ca/keys/';
const keyPath = (rootId: string): string => `${KEYS}${rootId}`;

/** Keys only server agents may read, outside the shared view; declared here, opened by src/cluster/. */
export interface PrivateRange {
  /** The JSON value at `path`, or undefined. */
  get<V>(path: string): Promise<V | undefined>;
  /** Writes it unless the key exists; true if this call created it. */
  create(path: string, value: unknown): Promise<boolean>;
  delete(path: string): Promise<void>;
  /** Every key under `path` with the revision that created it, and the revision read at. */
  list(path: string): Promise<{
    readonly revision: number;
    readonly keys: { readonly path: string; readonly createRevision: number }[];
  }>;
}

export class ClusterKeyStore implements CaKeyStore {
  constructor(private readonly range: PrivateRange) {}

  load(rootId: string): Promise<StoredProvider | undefined> {
    return this.range.get<StoredProvider>(keyPath(rootId));
  }

  async stage(material: StoredProvider): Promise<StagedKey> {
    // An existing key under this root ID is the same key (the ID is the certificate's hash).
    const created = await this.range.create(keyPath(material.RootID), material);
    return { ops: [], discard: () => (created ? this.range.delete(keyPath(material.RootID)) : Promise.resolve()) };
  }

  remove(rootId: string): Promise<void> {
    return this.range.delete(keyPath(rootId));
  }

  async sweep(
    published: ReadonlySet<string>,
    seenAt: number,
  ): Promise<{ readonly removed: number; readonly revision: number }> {
    const { revision, keys } = await this.range.list(KEYS);
    let removed = 0;
    for (const { path, createRevision } of keys) {
      if (published.has(path.slice(KEYS.length)) || createRevision > seenAt) continue;
      await this.range.delete(path);
      removed++;
    }
    return { removed, revision };
  }
}
