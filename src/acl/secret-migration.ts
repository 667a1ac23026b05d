// Token rows written before docs/decisions.md D23 held their SecretID in the shared view, which client
// agents read. A server agent moves each such secret where only servers read (secrets.ts) and rewrites
// its row with the SecretHash, at every start: a row already in today's shape is left alone, and each
// rewrite is guarded by the row's index, so two servers starting at once rewrite it once.
import type { Logger } from '../core/log.js';
import type { StateStore } from '../state/types.js';
import { ACL_TOKENS, type StoredToken } from './model.js';
import { secretHash, type TokenSecrets } from './secrets.js';

export interface SecretMigrationOptions {
  readonly log: Logger;
}

/** A row rewritten under a concurrent token write (an older server in a rolling upgrade) is read again this often. */
const ATTEMPTS_PER_ROW = 3;

/**
 * Moves the secrets out of the view's token rows; resolves to how many rows this call rewrote. It
 * never rejects: with etcd out of reach the rows wait for the next server start, and a warning says so.
 */
export async function moveSecretsOutOfRows(
  store: StateStore,
  secrets: TokenSecrets,
  options: SecretMigrationOptions,
): Promise<number> {
  if (secrets.inRow) return 0;
  try {
    return await moveAll(store, secrets, options);
  } catch (err) {
    options.log.warn({ err }, 'token rows in the shared view still hold secrets: the next server start moves them');
    return 0;
  }
}

async function moveAll(store: StateStore, secrets: TokenSecrets, options: SecretMigrationOptions): Promise<number> {
  let moved = 0;
  for (const { key } of store.list<StoredToken>(ACL_TOKENS, '').filter((r) => r.value.SecretID !== undefined)) {
    for (let attempt = 0; attempt < ATTEMPTS_PER_ROW; attempt++) {
      const row = store.get<StoredToken>(ACL_TOKENS, key);
      const secret = row?.value.SecretID;
      if (row === undefined || secret === undefined) break;
      // The secret is kept before the row stops holding it, so a server can always show it.
      await secrets.keep(key, secret, row.modifyIndex);
      const { SecretID: _, AccessorID, ...rest } = row.value;
      const value: StoredToken = { AccessorID, SecretHash: secretHash(secret), ...rest };
      const result = await store.commit([{ op: 'set', table: ACL_TOKENS, key, value, ifIndex: row.modifyIndex }]);
      if (result.ok) {
        moved++;
        break;
      }
    }
  }
  // etcd serves a key's old revisions to whoever may read it, until it compacts them; the agent does
  // not compact (etcd's history may be other meshes' and tools' too): the operator does.
  if (moved > 0) {
    const index = store.index;
    options.log.warn(
      { rows: moved, index },
      `token secrets moved out of the shared view; etcd's history below revision ${index} still holds them: ` +
        `compact it (etcdctl compact ${index}), docs/cluster-security.md`,
    );
  }
  return moved;
}
