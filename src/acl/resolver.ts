// Token secret → Identity. Compiled authorizers are cached (bounded, lru-cache) and the whole
// cache is dropped the moment the token, policy or role table's index moves, so a deleted token or
// an edited policy or role takes effect on the very next request. What a token's links grant is
// grants.ts's. A secret is found by its SHA-256, hashed
// once per cache miss: the rows hold the hash in a cluster (secrets.ts), and a match of a 256-bit
// digest needs no second compare. A hit hashes nothing: the cache is keyed by the presented secret.
// While the cluster store is unreachable, the down policy decides (docs/decisions.md, "Cluster:
// fail-open"). Guarded by bench/micro/acl-resolve.ts and bench/micro/authorize-token.ts.
import { LRUCache } from 'lru-cache';
import type { Clock } from '../core/clock.js';
import { ALWAYS_CONNECTED, type BackendHealth } from '../state/backend-health.js';
import type { StateStore } from '../state/types.js';
import { allowAllAuthorizer, compileAuthorizer } from './authorizer.js';
import { ANONYMOUS_ACCESSOR_ID } from './builtin.js';
import { aclNotFound } from './errors.js';
import { grantedRules, storeGrantSource, type GrantSource } from './grants.js';
import { UNRESOLVED_IDENTITY, type Identity } from './identity.js';
import { ACL_POLICIES, ACL_ROLES, ACL_TOKENS, type StoredToken } from './model.js';
import { secretHash, tokenSecretHash } from './secrets.js';

/** Consul's `acl.down_policy` values; see docs/decisions.md, "Cluster: fail-open". */
export type AclDownPolicy = 'extend-cache' | 'async-cache' | 'allow' | 'deny';

export interface ResolverOptions {
  readonly enabled: boolean;
  readonly defaultPolicy: 'allow' | 'deny';
  readonly datacenter: string;
  /** What tokens resolve to while `health` says the store is unreachable (default extend-cache). */
  readonly downPolicy?: AclDownPolicy;
  /** Reachability of the cluster store (default: always reachable, as the embedded store). */
  readonly health?: BackendHealth;
  /** Upper bound on cached identities (docs/decisions.md D7: every cache is bounded). */
  readonly maxCached?: number;
  /** Tokens the agent resolves itself before the store, as Consul's resolveLocallyManagedToken (the agent recovery token). */
  readonly localTokens?: (secret: string) => Identity | undefined;
}

interface Cached {
  readonly identity: Identity;
  /** Epoch ms after which the token is expired; Infinity when it never expires. */
  readonly expiresAt: number;
}

export const ACLS_DISABLED_IDENTITY: Identity = Object.freeze({
  authorizer: allowAllAuthorizer,
  accessorId: '',
  anonymous: false,
  namespace: 'default',
});

export class AclResolver {
  private readonly cache: LRUCache<string, Cached>;
  private tokensIndex = -1;
  private policiesIndex = -1;
  private rolesIndex = -1;
  private readonly grants: GrantSource;
  private bySecretDigest = new Map<string, StoredToken>();
  private readonly health: BackendHealth;
  /** Set for `allow` and `deny` only: the extend-cache policies keep resolving from the view. */
  private readonly downOverride: 'allow' | 'deny' | undefined;

  constructor(
    private readonly store: StateStore,
    private readonly options: ResolverOptions,
    private readonly clock: Clock,
  ) {
    this.cache = new LRUCache({ max: options.maxCached ?? 10_000 });
    this.grants = storeGrantSource(store);
    this.health = options.health ?? ALWAYS_CONNECTED;
    const down = options.downPolicy ?? 'extend-cache';
    this.downOverride = down === 'allow' || down === 'deny' ? down : undefined;
  }

  /** Tokens resolved and kept (the cache is bounded by maxCached). */
  get cachedTokens(): number {
    return this.cache.size;
  }

  get enabled(): boolean {
    return this.options.enabled;
  }

  /** The identity a secret acts as; throws `ACL not found` for an unknown or expired token. */
  resolve(secret: string): Identity {
    if (!this.options.enabled) return ACLS_DISABLED_IDENTITY;
    const local = this.options.localTokens?.(secret);
    if (local !== undefined) return local;
    if (this.downOverride !== undefined && !this.health.connected) return this.downIdentity(secret);
    this.syncWithStore();
    const cached = this.cache.get(secret);
    if (cached !== undefined) {
      if (cached.expiresAt > this.clock.now()) return cached.identity;
      this.cache.delete(secret);
      throw aclNotFound();
    }
    const token = this.findBySecret(secret);
    if (token === undefined) throw aclNotFound();
    const expiresAt = token.ExpirationTime === undefined ? Infinity : Date.parse(token.ExpirationTime);
    if (expiresAt <= this.clock.now()) throw aclNotFound();
    const identity = this.identityOf(token, secret);
    this.cache.set(secret, { identity, expiresAt });
    return identity;
  }

  /** The stored token a secret belongs to (for /v1/acl/token/self); undefined when unknown. */
  tokenForSecret(secret: string): StoredToken | undefined {
    this.syncWithStore();
    return this.findBySecret(secret);
  }

  /**
   * The identity under the `allow` or `deny` down policy, never cached: the view may be stale, so
   * it only names the token (for denial messages); the decision is the policy's.
   */
  private downIdentity(secret: string): Identity {
    const authorizer = this.downOverride === 'allow' ? allowAllAuthorizer : UNRESOLVED_IDENTITY.authorizer;
    this.syncWithStore();
    const token = this.findBySecret(secret);
    return Object.freeze({
      authorizer,
      accessorId: token?.AccessorID ?? '',
      anonymous: token?.AccessorID === ANONYMOUS_ACCESSOR_ID,
      namespace: token?.Namespace ?? 'default',
      secret,
    });
  }

  private identityOf(token: StoredToken, secret: string): Identity {
    const authorizer = compileAuthorizer({
      policies: grantedRules(token, this.grants, this.options.datacenter),
      datacenter: this.options.datacenter,
      defaultPolicy: this.options.defaultPolicy,
    });
    return Object.freeze({
      authorizer,
      accessorId: token.AccessorID,
      anonymous: token.AccessorID === ANONYMOUS_ACCESSOR_ID,
      namespace: token.Namespace,
      secret,
    });
  }

  /** Drops every cached identity when a token, policy or role changed since the cache was filled. */
  private syncWithStore(): void {
    const tokensIndex = this.store.tableIndex(ACL_TOKENS);
    const policiesIndex = this.store.tableIndex(ACL_POLICIES);
    const rolesIndex = this.store.tableIndex(ACL_ROLES);
    if (tokensIndex === this.tokensIndex && policiesIndex === this.policiesIndex && rolesIndex === this.rolesIndex)
      return;
    this.cache.clear();
    if (tokensIndex !== this.tokensIndex) {
      const bySecret = new Map<string, StoredToken>();
      for (const row of this.store.list<StoredToken>(ACL_TOKENS, ''))
        bySecret.set(tokenSecretHash(row.value), row.value);
      this.bySecretDigest = bySecret;
    }
    this.tokensIndex = tokensIndex;
    this.policiesIndex = policiesIndex;
    this.rolesIndex = rolesIndex;
  }

  private findBySecret(secret: string): StoredToken | undefined {
    return this.bySecretDigest.get(secretHash(secret));
  }
}
