// What an ACL-enabled agent needs in its store before serving: the built-in global-management
// policy, the anonymous token, and the configured initial management token, which also uses up
// the one-time bootstrap (as in Consul). Every write is guarded, so starting twice changes nothing.
// In a cluster each agent records the initial management secret with the servers (secrets.ts),
// whoever wrote its row, so a server can show it whichever agent started first.
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
import { SECRETS_IN_ROW, secretHash, tokenSecretHash, type TokenSecrets } from './secrets.js';
import { hashTemplated } from './templated.js';

export interface AclInitOptions {
  readonly initialManagement: string | undefined;
  /** Where secrets live (default: in the row, one machine). */
  readonly secrets?: TokenSecrets | undefined;
  /** Hears that the initial management secret could not be recorded with a server (a client agent with none up). */
  readonly onKeepFailed?: ((err: unknown) => void) | undefined;
}

export async function initAclState(store: StateStore, options: AclInitOptions, clock: Clock): Promise<void> {
  const secrets = options.secrets ?? SECRETS_IN_ROW;
  const field = (secret: string): SecretField => secretField(secret, secrets.inRow);
  const ops: WriteOp[] = [];
  if (store.get(ACL_POLICIES, GLOBAL_MANAGEMENT_POLICY_ID) === undefined) {
    ops.push({
      op: 'set',
      table: ACL_POLICIES,
      key: GLOBAL_MANAGEMENT_POLICY_ID,
      value: globalManagementPolicy(),
      ifIndex: 0,
    });
  }
  const now = new Date(clock.now()).toISOString();
  if (store.get(ACL_TOKENS, ANONYMOUS_ACCESSOR_ID) === undefined) {
    const anonymous = newToken(ANONYMOUS_ACCESSOR_ID, field(ANONYMOUS_SECRET), 'Anonymous Token', [], now);
    ops.push({ op: 'set', table: ACL_TOKENS, key: ANONYMOUS_ACCESSOR_ID, value: anonymous, ifIndex: 0 });
  }
  const secret = options.initialManagement;
  const hash = secret ? secretHash(secret) : '';
  const existing = secret
    ? store.list<StoredToken>(ACL_TOKENS, '').find((row) => tokenSecretHash(row.value) === hash)
    : undefined;
  let management = existing === undefined ? undefined : { accessor: existing.key, index: existing.modifyIndex };
  if (secret && existing === undefined) {
    const accessor = generateId();
    const token = newToken(
      accessor,
      field(secret),
      'Initial Management Token',
      [{ ID: GLOBAL_MANAGEMENT_POLICY_ID }],
      now,
    );
    ops.push({ op: 'set', table: ACL_TOKENS, key: accessor, value: token, ifIndex: 0 });
    if (store.get(ACL_META, BOOTSTRAP_KEY) === undefined) {
      ops.push({ op: 'set', table: ACL_META, key: BOOTSTRAP_KEY, value: { AccessorID: accessor }, ifIndex: 0 });
    }
    management = { accessor, index: 0 };
  }
  if (ops.length > 0) {
    const result = await store.commit(ops);
    if (management?.index === 0) management = result.ok ? { ...management, index: result.index } : undefined;
  }
  // Not awaited: a client agent started before any server must not wait for one.
  if (secret && management !== undefined && !secrets.inRow) {
    secrets.keep(management.accessor, secret, management.index).catch((err: unknown) => options.onKeepFailed?.(err));
  }
}

/** How a row carries its secret: the secret itself, or its hash (secrets.ts). */
export type SecretField = Pick<StoredToken, 'SecretID' | 'SecretHash'>;

export function secretField(secret: string, inRow: boolean): SecretField {
  return inRow ? { SecretID: secret } : { SecretHash: secretHash(secret) };
}

/** A token with every field in place; `Hash` covers what decides its permissions. */
export function newToken(
  accessorId: string,
  secret: SecretField,
  description: string,
  policies: StoredToken['Policies'],
  createTime: string,
  extra: Partial<
    Pick<
      StoredToken,
      'ServiceIdentities' | 'NodeIdentities' | 'Roles' | 'TemplatedPolicies' | 'Local' | 'ExpirationTime' | 'Namespace'
    >
  > = {},
): StoredToken {
  const token = {
    AccessorID: accessorId,
    ...secret,
    Description: description,
    Policies: policies,
    ServiceIdentities: extra.ServiceIdentities ?? [],
    NodeIdentities: extra.NodeIdentities ?? [],
    ...(extra.Roles === undefined || extra.Roles.length === 0 ? {} : { Roles: extra.Roles }),
    ...(extra.TemplatedPolicies === undefined || extra.TemplatedPolicies.length === 0
      ? {}
      : { TemplatedPolicies: extra.TemplatedPolicies }),
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
  // Only tokens that link roles or templated policies hash them: older hashes stay as they were.
  for (const r of token.Roles ?? []) h.update(`role:${r.ID}`);
  hashTemplated(h, token.TemplatedPolicies ?? []);
  h.update(`ns:${token.Namespace}`);
  return h.digest('base64');
}
