// The ACL write side as the HTTP layer is handed it: tokens, policies and roles over one store,
// sharing one WriteLock so that no two ACL writes interleave their checks and commits.
import type { Clock } from '../core/clock.js';
import type { StateStore } from '../state/types.js';
import { AclPolicies } from './policies.js';
import { AclRoles } from './roles.js';
import type { TokenSecrets } from './secrets.js';
import { AclTokens } from './tokens.js';
import { WriteLock } from './write-lock.js';

export interface AclDomainOptions {
  /** acl.token_min_expiration_ttl, in milliseconds. */
  readonly minExpirationTtlMs: number;
  /** acl.token_max_expiration_ttl, in milliseconds. */
  readonly maxExpirationTtlMs: number;
  /** Where token secrets live (default: in the row, one machine; secrets.ts). */
  readonly secrets?: TokenSecrets | undefined;
}

export interface AclDomain {
  readonly tokens: AclTokens;
  readonly policies: AclPolicies;
  readonly roles: AclRoles;
}

export function createAclDomain(store: StateStore, clock: Clock, options: AclDomainOptions): AclDomain {
  const lock = new WriteLock();
  return {
    tokens: new AclTokens(store, clock, { ...options, lock }),
    policies: new AclPolicies(store, { lock }),
    roles: new AclRoles(store, { lock }),
  };
}
