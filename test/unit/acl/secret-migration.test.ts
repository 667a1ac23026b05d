// Token rows written before docs/decisions.md D23 held their SecretID: moveSecretsOutOfRows keeps each
// secret first and then rewrites the row with the hash, guarded by the row's index, so two runs at
// once (two servers starting) rewrite each row once and a row in today's shape is left alone.
import { describe, expect, it } from 'vitest';
import { ACL_TOKENS, type StoredToken } from '../../../src/acl/model.js';
import { moveSecretsOutOfRows } from '../../../src/acl/secret-migration.js';
import { SECRETS_IN_ROW, secretHash, type TokenSecrets } from '../../../src/acl/secrets.js';
import { FakeClock } from '../../../src/core/clock.js';
import { silentLogger } from '../../../src/core/log.js';
import { openEmbeddedStore } from '../../../src/state/embedded/index.js';
import type { StateStore } from '../../../src/state/types.js';

const OLD = (accessor: string, secret: string): StoredToken => ({
  AccessorID: accessor,
  SecretID: secret,
  Description: 'old',
  Policies: [],
  ServiceIdentities: [],
  NodeIdentities: [],
  Local: false,
  CreateTime: '2026-01-01T00:00:00.000Z',
  Hash: 'h',
  Namespace: 'default',
});

/** A server's custody as serverSecrets keeps it: the first record of an accessor stands. */
function custody(): TokenSecrets & { readonly kept: Map<string, string>; keeps: number } {
  const kept = new Map<string, string>();
  return {
    inRow: false,
    kept,
    keeps: 0,
    keep(accessor, secret) {
      this.keeps++;
      if (!kept.has(accessor)) kept.set(accessor, secret);
      return Promise.resolve();
    },
    reveal: () => Promise.resolve(new Map()),
  };
}

async function storeWith(rows: StoredToken[]): Promise<StateStore> {
  const store = await openEmbeddedStore({ log: silentLogger, clock: new FakeClock(0) });
  await store.commit(rows.map((value) => ({ op: 'set', table: ACL_TOKENS, key: value.AccessorID, value })));
  return store;
}

describe('moving token secrets out of the shared view', () => {
  it('keeps each secret and leaves its hash in the row; a row already hashed is left alone', async () => {
    const { SecretID: _, ...today } = OLD('b', 's-b');
    const hashed: StoredToken = { ...today, SecretHash: secretHash('s-b') };
    const store = await storeWith([OLD('a', 's-a'), hashed]);
    const before = store.keyIndex(ACL_TOKENS, 'b');
    const secrets = custody();
    expect(await moveSecretsOutOfRows(store, secrets, { log: silentLogger })).toBe(1);
    const a = store.get<StoredToken>(ACL_TOKENS, 'a')?.value;
    expect(a).toEqual({ ...hashed, AccessorID: 'a', SecretHash: secretHash('s-a') });
    expect(a?.SecretID).toBeUndefined();
    expect([...secrets.kept]).toEqual([['a', 's-a']]);
    expect(store.keyIndex(ACL_TOKENS, 'b')).toBe(before);
    // Again (the next start): nothing left to move.
    expect(await moveSecretsOutOfRows(store, secrets, { log: silentLogger })).toBe(0);
    expect(secrets.keeps).toBe(1);
  });

  it('two runs at once rewrite each row once', async () => {
    const store = await storeWith([OLD('a', 's-a'), OLD('c', 's-c')]);
    const secrets = custody();
    const moved = await Promise.all([
      moveSecretsOutOfRows(store, secrets, { log: silentLogger }),
      moveSecretsOutOfRows(store, secrets, { log: silentLogger }),
    ]);
    expect(moved[0] + moved[1]).toBe(2);
    for (const key of ['a', 'c']) expect(store.get<StoredToken>(ACL_TOKENS, key)?.value.SecretID).toBeUndefined();
    expect(Object.fromEntries(secrets.kept)).toEqual({ a: 's-a', c: 's-c' });
  });

  it('on one machine, where rows hold their secrets, moves nothing', async () => {
    const store = await storeWith([OLD('a', 's-a')]);
    expect(await moveSecretsOutOfRows(store, SECRETS_IN_ROW, { log: silentLogger })).toBe(0);
    expect(store.get<StoredToken>(ACL_TOKENS, 'a')?.value.SecretID).toBe('s-a');
  });

  it('a secret that cannot be kept leaves its row as it was, and the call does not reject', async () => {
    const store = await storeWith([OLD('a', 's-a')]);
    const failing: TokenSecrets = { ...custody(), keep: () => Promise.reject(new Error('no leader')) };
    expect(await moveSecretsOutOfRows(store, failing, { log: silentLogger })).toBe(0);
    expect(store.get<StoredToken>(ACL_TOKENS, 'a')?.value.SecretID).toBe('s-a');
  });
});
