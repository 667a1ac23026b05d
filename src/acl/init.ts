// What an ACL-enabled agent needs in its store before serving: the built-in global-management
// policy, the anonymous token, and the configured initial management token, which also uses up
// the one-time bootstrap (as in Consul). Every write is guarded, so starting twice changes nothing.
import { createHash } from 'node:crypto';
import type { Clock } from '../core/clock.js';
import { generateId } from '../core/ids.js';
import type { StateStore, WriteOp } from '../state/types.js';
import {
  ANONYMOUS_ACCESSOR_ID,
  ANONYMOUS_SECRET,
  GLOBAL_MANAGEMENT_POLICY_ID,
  globalManagementPolicy,
} from './builtin.js';
import { ACL_META, ACL_POLICIES, ACL_TOKENS, BOOTSTRAP_KEY, type StoredToken } from './model.js';

export interface AclInitOptions {
  readonly initialManagement: string | undefined;
}

export async function initAclState(store: StateStore, options: AclInitOptions, clock: Clock): Promise<void> {
  const ops: WriteOp[] = [];
  if (store.get(ACL_POLICIES, GLOBAL_MANAGEMENT_POLICY_ID) === undefined) {
    ops.push({ op: 'set', table: ACL_POLICIES, key: GLOBAL_MANAGEMENT_POLICY_ID, value: globalManagementPolicy(), ifIndex: 0 });
  }
  const now = new Date(clock.now()).toISOString();
  if (store.get(ACL_TOKENS, ANONYMOUS_ACCESSOR_ID) === undefined) {
    const anonymous = newToken(ANONYMOUS_ACCESSOR_ID, ANONYMOUS_SECRET, 'Anonymous Token', [], now);
    ops.push({ op: 'set', table: ACL_TOKENS, key: ANONYMOUS_ACCESSOR_ID, value: anonymous, ifIndex: 0 });
  }
  const secret = options.initialManagement;
  if (secret && !store.list<StoredToken>(ACL_TOKENS, '').some((row) => row.value.SecretID === secret)) {
    const accessor = generateId();
    const token = newToken(accessor, secret, 'Initial Management Token', [{ ID: GLOBAL_MANAGEMENT_POLICY_ID }], now);
    ops.push({ op: 'set', table: ACL_TOKENS, key: accessor, value: token, ifIndex: 0 });
    if (store.get(ACL_META, BOOTSTRAP_KEY) === undefined) {
      ops.push({ op: 'set', table: ACL_META, key: BOOTSTRAP_KEY, value: { AccessorID: accessor }, ifIndex: 0 });
    }
  }
  if (ops.length > 0) await store.commit(ops);
}

/** A token with every field in place; `Hash` covers what decides its permissions. */
export function newToken(
  accessorId: string,
  secretId: string,
  description: string,
  policies: StoredToken['Policies'],
  createTime: string,
  extra: Partial<Pick<StoredToken, 'ServiceIdentities' | 'NodeIdentities' | 'Local' | 'ExpirationTime' | 'Namespace'>> = {},
): StoredToken {
  const token = {
    AccessorID: accessorId,
    SecretID: secretId,
    Description: description,
    Policies: policies,
    ServiceIdentities: extra.ServiceIdentities ?? [],
    NodeIdentities: extra.NodeIdentities ?? [],
    Local: extra.Local ?? false,
    ...(extra.ExpirationTime === undefined ? {} : { ExpirationTime: extra.ExpirationTime }),
    CreateTime: createTime,
    Hash: '',
    Namespace: extra.Namespace ?? 'default',
  };
  return { ...token, Hash: tokenHash(token) };
}

export function tokenHash(token: Omit<StoredToken, 'Hash'> | StoredToken): string {
  const h = createHash('sha256');
  h.update(token.Description);
  h.update(String(token.Local));
  for (const p of token.Policies) h.update(`policy:${p.ID}`);
  for (const s of token.ServiceIdentities) h.update(`service:${s.ServiceName}:${(s.Datacenters ?? []).join(',')}`);
  for (const n of token.NodeIdentities) h.update(`node:${n.NodeName}:${n.Datacenter}`);
  h.update(`ns:${token.Namespace}`);
  return h.digest('base64');
}
