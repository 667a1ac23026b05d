// The etcd contract tests' write: one key, value `x`, in a txn of its own.
import type { EtcdConnection } from '../../src/state/etcd/etcd-client.js';

/** Puts `key` and gives the revision etcd wrote it at. */
export async function putKey(client: EtcdConnection, key: string): Promise<number> {
  const op = { op: 'put' as const, key: Buffer.from(key), value: Buffer.from('x') };
  return (await client.txn({ compares: [], success: [op], failure: [] }, 5_000)).revision;
}
