// ACL token operations without HTTP (docs/decisions.md#acl-api): bootstrap, create, read, update,
// clone, delete and list, with Consul's validation order and texts (its TokenWriter). Every user
// mistake is a 4xx (docs/decisions.md D3): 400 for validation, 404 for a missing token, 409 for an
// ID in use. Writes run one at a time through the shared WriteLock, so check-then-commit is atomic.
// Where a secret lives is the TokenSecrets' (secrets.ts): in the row on one machine; in a cluster
// the row holds its hash and a new secret is recorded with the servers once its row is committed.
import { LRUCache } from 'lru-cache';
import type { Clock } from '../core/clock.js';
import { formatDuration } from '../core/duration.js';
import { agentError } from '../core/errors.js';
import { generateId, isUuid } from '../core/ids.js';
import { DEFAULT_NAMESPACE, isValidNamespace } from '../core/namespace.js';
import type { Row, StateStore, WriteOp } from '../state/types.js';
import { ANONYMOUS_ACCESSOR_ID, ANONYMOUS_SECRET, GLOBAL_MANAGEMENT_POLICY_ID, RESERVED_ID_PREFIX } from './builtin.js';
import { newToken, secretField, type SecretField } from './init.js';
import { limitToken } from './limits.js';
import {
  ACL_META,
  ACL_POLICIES,
  ACL_ROLES,
  ACL_TOKENS,
  BOOTSTRAP_KEY,
  type PolicyLink,
  type RoleLink,
  type StoredPolicy,
  type StoredRole,
  type StoredToken,
} from './model.js';
import { findPolicyByName } from './policies.js';
import { bootstrapJson, tokenJson, tokenStubJson, type LinkNames, type PolicyNameOf } from './render.js';
import {
  nodeIdentities,
  serviceIdentities,
  type IdentityFailure,
  type LinkInput,
  type NodeIdentityInput,
  type ServiceIdentityInput,
} from './link-inputs.js';
import { findRoleByName } from './roles.js';
import { normalizeTemplatedPolicies, type TemplatedPolicyInput } from './templated.js';
import { SECRETS_IN_ROW, secretHash, tokenSecretHash, type TokenSecrets } from './secrets.js';
import { WriteLock, writeRaced } from './write-lock.js';

/** A token write's body, decoded. As in Go, an empty string or zero means "not given". */
export interface TokenInput {
  readonly AccessorID?: string | undefined;
  readonly SecretID?: string | undefined;
  readonly Description?: string | undefined;
  readonly Policies?: readonly LinkInput[] | undefined;
  readonly Roles?: readonly LinkInput[] | undefined;
  readonly ServiceIdentities?: readonly ServiceIdentityInput[] | undefined;
  readonly NodeIdentities?: readonly NodeIdentityInput[] | undefined;
  readonly TemplatedPolicies?: readonly TemplatedPolicyInput[] | undefined;
  readonly Local?: boolean | undefined;
  readonly AuthMethod?: string | undefined;
  /** Epoch milliseconds. */
  readonly ExpirationTime?: number | undefined;
  /** Milliseconds (a Go duration); turned into ExpirationTime at create and never stored. */
  readonly ExpirationTTL?: number | undefined;
  /** docs/decisions.md D2; when empty, the create's `namespace` default applies. */
  readonly Namespace?: string | undefined;
}

export interface TokenFilter {
  /** A policy ID: only tokens linked to it. */
  readonly policy?: string | undefined;
  readonly role?: string | undefined;
  readonly authMethod?: string | undefined;
  readonly serviceName?: string | undefined;
  /** Only tokens of this namespace; `*` or absent for all. */
  readonly namespace?: string | undefined;
}

export interface AclTokensOptions {
  /** Consul's acl.token_min_expiration_ttl (default 1m). */
  readonly minExpirationTtlMs: number;
  /** Consul's acl.token_max_expiration_ttl (default 24h). */
  readonly maxExpirationTtlMs: number;
  /** Shared with AclPolicies so that every ACL write is serialized. */
  readonly lock?: WriteLock;
  /** Where secrets live (default: in the row, one machine). */
  readonly secrets?: TokenSecrets | undefined;
}

/** A token row with its secret when known (one machine's row, a new token, or one a server revealed). */
export type ShownToken = Row<StoredToken> & { readonly secret?: string | undefined };

/** A token just written, with the secret its answer shows. */
export type NewToken = Row<StoredToken> & { readonly secret: string };

/** Who asks to see secrets: its own is known without asking a server. */
export interface SecretCaller {
  readonly accessorId: string;
  readonly secret?: string | undefined;
}

/** The IDs in use: a new AccessorID or SecretID may be neither an AccessorID nor any token's secret. */
interface UsedIds {
  readonly accessors: ReadonlySet<string>;
  readonly secretHashes: ReadonlySet<string>;
}

/** Bounded as every cache (docs/decisions.md D7): a cluster's token count, with room. */
const SHOWN_SECRETS_MAX = 10_000;
/** How long a secret no server has recorded stays `<hidden>` before a read asks again (an initial management token a server records at its start). */
const UNRECORDED_RECHECK_MS = 10_000;

export const BOOTSTRAP_DESCRIPTION = 'Bootstrap Token (Global Management)';

export class AclTokens {
  private readonly lock: WriteLock;
  private readonly secrets: TokenSecrets;
  /** Secrets servers showed this agent (for acl:write callers; '' for none recorded), so that a parked read renders at once. */
  private readonly shown: LRUCache<string, string>;

  constructor(
    private readonly store: StateStore,
    private readonly clock: Clock,
    private readonly options: AclTokensOptions,
  ) {
    this.lock = options.lock ?? new WriteLock();
    this.secrets = options.secrets ?? SECRETS_IN_ROW;
    this.shown = new LRUCache({ max: SHOWN_SECRETS_MAX, perf: { now: () => clock.now() } });
  }

  /** The current name of a policy, for filling in links on read. */
  readonly policyName: PolicyNameOf = (id) => this.store.get<StoredPolicy>(ACL_POLICIES, id)?.value.Name;

  /** The current name of a role, for filling in links on read. */
  readonly roleName: PolicyNameOf = (id) => this.store.get<StoredRole>(ACL_ROLES, id)?.value.Name;

  private readonly names: LinkNames = { policy: this.policyName, role: this.roleName };

  /** The token JSON; `revealSecret` is false for a caller without acl:write (`<hidden>`, as when the secret is unknown). */
  view(row: ShownToken, revealSecret: boolean, caller?: SecretCaller): Record<string, unknown> {
    return tokenJson(row, this.names, revealSecret ? this.shownSecret(row, caller) : undefined);
  }

  stub(row: ShownToken, revealSecret: boolean, caller?: SecretCaller): Record<string, unknown> {
    return tokenStubJson(row, this.names, revealSecret ? this.shownSecret(row, caller) : undefined);
  }

  bootstrapView(token: NewToken): Record<string, unknown> {
    return bootstrapJson(token, this.names, token.secret);
  }

  private shownSecret(row: ShownToken, caller?: SecretCaller): string | undefined {
    return row.secret ?? this.knownSecret(row, caller);
  }

  /**
   * The secret a row holds (one machine), that its caller presented, or that a server showed this
   * agent before (a secret never changes); undefined when a server must be asked.
   */
  knownSecret(row: Row<StoredToken>, caller?: SecretCaller): string | undefined {
    if (row.value.SecretID !== undefined) return row.value.SecretID;
    if (row.key === ANONYMOUS_ACCESSOR_ID) return ANONYMOUS_SECRET;
    if (caller !== undefined && row.key === caller.accessorId && caller.secret !== undefined) return caller.secret;
    return this.shown.get(row.key) || undefined;
  }

  /**
   * These rows with their secrets, for a caller with acl:write: from the rows on one machine, else
   * from the servers (asked once for all). A secret no server recorded stays unknown (`<hidden>`).
   */
  async withSecrets(rows: readonly Row<StoredToken>[], caller: SecretCaller): Promise<ShownToken[]> {
    const ask = rows.filter((row) => this.knownSecret(row, caller) === undefined).map((row) => row.key);
    const revealed = ask.length === 0 ? new Map<string, string>() : await this.secrets.reveal(ask, caller.secret ?? '');
    for (const accessor of ask) {
      const secret = revealed.get(accessor);
      // One no server recorded yet is remembered as '' for a while (shown `<hidden>`): reads park rather than ask again.
      if (secret === undefined) this.shown.set(accessor, '', { ttl: UNRECORDED_RECHECK_MS });
      else this.shown.set(accessor, secret);
    }
    return rows.map((row) => ({ ...row, secret: this.knownSecret(row, caller) ?? revealed.get(row.key) }));
  }

  /** Whether answering these rows with secrets needs a server first (a cluster, secrets this agent was never shown). */
  needsSecrets(rows: readonly Row<StoredToken>[], caller: SecretCaller): boolean {
    return rows.some((row) => this.knownSecret(row, caller) === undefined && !this.shown.has(row.key));
  }

  /** The one-time bootstrap: a global-management token, optionally with the caller's SecretID. */
  bootstrap(bootstrapSecret?: string): Promise<NewToken> {
    return this.lock.run(async () => {
      this.rejectBootstrapDone();
      const used = this.usedIds();
      if (bootstrapSecret) checkNewId('SecretID', bootstrapSecret, used);
      const accessor = freshId(used);
      const secret = bootstrapSecret || freshId(used);
      const token = newToken(
        accessor,
        this.secretField(secret),
        BOOTSTRAP_DESCRIPTION,
        [{ ID: GLOBAL_MANAGEMENT_POLICY_ID }],
        this.nowIso(),
      );
      const result = await this.store.commit([
        { op: 'set', table: ACL_TOKENS, key: accessor, value: token, ifIndex: 0 },
        { op: 'set', table: ACL_META, key: BOOTSTRAP_KEY, value: { AccessorID: accessor }, ifIndex: 0 },
      ]);
      if (!result.ok) {
        this.rejectBootstrapDone();
        throw writeRaced();
      }
      await this.keepOrUndo(accessor, secret, result.index, [
        { op: 'delete', table: ACL_META, key: BOOTSTRAP_KEY, ifIndex: result.index },
      ]);
      return { ...this.stored(accessor), secret };
    });
  }

  /** The token with this AccessorID; undefined when there is none or it has expired. */
  read(accessorId: string): Row<StoredToken> | undefined {
    const row = this.store.get<StoredToken>(ACL_TOKENS, accessorId);
    return row === undefined || this.expired(row.value) ? undefined : row;
  }

  /** Unexpired tokens, sorted by AccessorID, narrowed by at most one of policy/role/authmethod/service. */
  list(filter: TokenFilter = {}): Row<StoredToken>[] {
    AclTokens.checkFilter(filter);
    const namespace = filter.namespace && filter.namespace !== '*' ? filter.namespace : undefined;
    return this.store.list<StoredToken>(ACL_TOKENS, '').filter((row) => {
      const token = row.value;
      if (this.expired(token)) return false;
      if (namespace !== undefined && token.Namespace !== namespace) return false;
      if (filter.policy && !token.Policies.some((p) => p.ID === filter.policy)) return false;
      if (filter.role && !(token.Roles ?? []).some((r) => r.ID === filter.role)) return false;
      if (filter.serviceName && !token.ServiceIdentities.some((s) => s.ServiceName === filter.serviceName))
        return false;
      if (filter.authMethod && token.AuthMethod !== filter.authMethod) return false;
      return true;
    });
  }

  /** Throws for a filter Consul refuses: more than one of policy, role, serviceName, authmethod. */
  static checkFilter(filter: TokenFilter): void {
    const narrowing = [filter.policy, filter.role, filter.authMethod, filter.serviceName].filter((f) => f);
    if (narrowing.length > 1) {
      throw agentError('ACL_TOKEN_FILTER_CONFLICT');
    }
  }

  /** PUT /v1/acl/token. `namespace` applies when the body names none (docs/decisions.md D2). */
  create(input: TokenInput, namespace: string = DEFAULT_NAMESPACE): Promise<NewToken> {
    return this.lock.run(() => this.createLocked(input, namespace));
  }

  /** POST /v1/acl/login's token (src/acl/auth-methods/login.ts): the one write that may set AuthMethod. */
  createFromLogin(input: TokenInput, namespace: string = DEFAULT_NAMESPACE): Promise<NewToken> {
    return this.lock.run(() => this.createLocked(input, namespace, true));
  }

  /** PUT /v1/acl/token/:accessor: replaces the token's links and description. */
  update(accessorId: string, input: TokenInput): Promise<Row<StoredToken>> {
    return this.lock.run(async () => {
      const bodyAccessor = input.AccessorID || accessorId;
      if (bodyAccessor !== accessorId) throw agentError('ACL_TOKEN_ID_MISMATCH');
      if (!isUuid(accessorId)) throw agentError('ACL_TOKEN_ACCESSOR_NOT_UUID');
      const row = this.read(accessorId);
      if (row === undefined) throw agentError('ACL_TOKEN_NOT_FOUND', { accessorId });
      const existing = row.value;
      if (input.SecretID && secretHash(input.SecretID) !== tokenSecretHash(existing)) {
        throw agentError('ACL_TOKEN_SECRET_CHANGE');
      }
      if ((input.Local ?? false) !== existing.Local) throw agentError('ACL_TOKEN_LOCAL_CHANGE', { accessorId });
      if (input.AuthMethod && input.AuthMethod !== existing.AuthMethod) {
        throw agentError('ACL_TOKEN_AUTH_METHOD_CHANGE', { accessorId });
      }
      if (input.ExpirationTTL) throw agentError('ACL_TOKEN_EXPIRATION_CHANGE', { accessorId });
      if (input.ExpirationTime !== undefined) {
        if (existing.ExpirationTime === undefined || Date.parse(existing.ExpirationTime) !== input.ExpirationTime) {
          throw agentError('ACL_TOKEN_EXPIRATION_CHANGE', { accessorId });
        }
      }
      if (input.Namespace && input.Namespace !== existing.Namespace) {
        throw agentError('ACL_TOKEN_NAMESPACE_CHANGE', { accessorId });
      }
      const token = withAuthMethod(
        existing.AuthMethod,
        this.assemble(input, {
          accessor: existing.AccessorID,
          secret:
            existing.SecretID === undefined
              ? { SecretHash: tokenSecretHash(existing) }
              : { SecretID: existing.SecretID },
          description: input.Description ?? '',
          local: existing.Local,
          createTime: existing.CreateTime,
          expirationTime: existing.ExpirationTime,
          namespace: existing.Namespace,
        }),
      );
      await this.commit([{ op: 'set', table: ACL_TOKENS, key: accessorId, value: token, ifIndex: row.modifyIndex }]);
      return this.stored(accessorId);
    });
  }

  /** PUT /v1/acl/token/:accessor/clone: new IDs, the same links; `description` replaces a non-empty one. */
  clone(accessorId: string, description?: string): Promise<NewToken> {
    return this.lock.run(() => {
      const row = this.read(accessorId);
      if (row === undefined) throw agentError('ACL_TOKEN_CLONE_NOT_FOUND');
      const source = row.value;
      // Links to deleted policies are not shown on read, so the clone does not carry them either.
      const policies = source.Policies.filter((p) => this.policyName(p.ID) !== undefined);
      const roles = (source.Roles ?? []).filter((r) => this.roleName(r.ID) !== undefined);
      return this.createLocked(
        {
          Description: description || source.Description,
          Policies: policies,
          Roles: roles,
          TemplatedPolicies: source.TemplatedPolicies,
          ServiceIdentities: source.ServiceIdentities,
          NodeIdentities: source.NodeIdentities,
          Local: source.Local,
          ExpirationTime: source.ExpirationTime === undefined ? undefined : Date.parse(source.ExpirationTime),
          Namespace: source.Namespace,
        },
        source.Namespace,
      );
    });
  }

  /** DELETE /v1/acl/token/:accessor; `callerAccessorId` is the requesting token's own accessor. */
  delete(accessorId: string, callerAccessorId: string): Promise<void> {
    return this.lock.run(async () => {
      if (!isUuid(accessorId)) throw agentError('ACL_TOKEN_DELETE_BAD_ID');
      if (accessorId === ANONYMOUS_ACCESSOR_ID) throw agentError('ACL_TOKEN_DELETE_ANONYMOUS');
      // An expired token can still be deleted.
      const row = this.store.get<StoredToken>(ACL_TOKENS, accessorId);
      if (row === undefined) throw agentError('ACL_TOKEN_DELETE_NOT_FOUND');
      if (row.value.AccessorID === callerAccessorId) {
        throw agentError('ACL_TOKEN_DELETE_SELF');
      }
      await this.commit([{ op: 'delete', table: ACL_TOKENS, key: accessorId, ifIndex: row.modifyIndex }]);
    });
  }

  private async createLocked(input: TokenInput, namespace: string, fromLogin = false): Promise<NewToken> {
    const used = this.usedIds();
    let accessor = input.AccessorID ?? '';
    if (accessor === '') accessor = freshId(used);
    else checkNewId('AccessorID', accessor, used);
    let secret = input.SecretID ?? '';
    if (secret === '') secret = freshId(used, accessor);
    else {
      checkNewId('SecretID', secret, used);
      if (secret === accessor) throw agentError('ACL_TOKEN_ID_IN_USE', { field: 'SecretID' });
    }
    const now = this.clock.now();
    const expiration = this.expirationAtCreate(input, now);
    if (input.AuthMethod && !fromLogin) throw agentError('ACL_TOKEN_AUTH_METHOD');
    const token = withAuthMethod(
      fromLogin ? input.AuthMethod : undefined,
      this.assemble(input, {
        accessor,
        secret: this.secretField(secret),
        description: input.Description ?? '',
        local: input.Local ?? false,
        createTime: new Date(now).toISOString(),
        expirationTime: expiration === undefined ? undefined : new Date(expiration).toISOString(),
        namespace: input.Namespace || namespace,
      }),
    );
    const result = await this.store.commit([{ op: 'set', table: ACL_TOKENS, key: accessor, value: token, ifIndex: 0 }]);
    if (!result.ok) throw writeRaced();
    await this.keepOrUndo(accessor, secret, result.index, []);
    this.shown.set(accessor, secret);
    return { ...this.stored(accessor), secret };
  }

  private secretField(secret: string): SecretField {
    return secretField(secret, this.secrets.inRow);
  }

  /**
   * Records a new secret with the servers; when none can, the token (and `alsoUndo`) goes again, so
   * that no token exists whose secret no server could ever show, and the write fails.
   */
  private async keepOrUndo(
    accessor: string,
    secret: string,
    index: number,
    alsoUndo: readonly WriteOp[],
  ): Promise<void> {
    try {
      await this.secrets.keep(accessor, secret, index);
    } catch (err) {
      await this.store
        .commit([{ op: 'delete', table: ACL_TOKENS, key: accessor, ifIndex: index }, ...alsoUndo])
        .catch(() => undefined);
      throw err;
    }
  }

  /** ExpirationTTL becomes ExpirationTime; the result must lie within the configured bounds. */
  private expirationAtCreate(input: TokenInput, createdMs: number): number | undefined {
    const ttl = input.ExpirationTTL ?? 0;
    let expires = input.ExpirationTime;
    if (ttl < 0) throw agentError('ACL_TOKEN_TTL_NEGATIVE', { ttl: formatDuration(ttl) });
    if (ttl > 0) {
      if (expires !== undefined) throw agentError('ACL_TOKEN_TTL_AND_TIME');
      expires = createdMs + ttl;
    }
    if (expires === undefined) return undefined;
    if (expires < createdMs) throw agentError('ACL_TOKEN_EXPIRES_BEFORE_CREATE');
    const expiresIn = expires - createdMs;
    const { minExpirationTtlMs: min, maxExpirationTtlMs: max } = this.options;
    if (expiresIn > max) {
      throw agentError('ACL_TOKEN_EXPIRES_TOO_LATE', {
        max: formatDuration(max),
        expiresIn: formatDuration(expiresIn),
      });
    }
    if (expiresIn < min) {
      throw agentError('ACL_TOKEN_EXPIRES_TOO_SOON', {
        min: formatDuration(min),
        expiresIn: formatDuration(expiresIn),
      });
    }
    return expires;
  }

  /** Consul's write(): roles, then policies, then service, node identities and templated policies; then the hash. */
  private assemble(
    input: TokenInput,
    fields: {
      accessor: string;
      secret: SecretField;
      description: string;
      local: boolean;
      createTime: string;
      expirationTime: string | undefined;
      namespace: string;
    },
  ): StoredToken {
    // Our size limits first (docs/decisions.md#size-limits): a long list is refused before it is walked.
    limitToken({ ...input, Description: fields.description });
    const roles = this.roleLinks(input.Roles ?? []);
    const policies = this.policyLinks(input.Policies ?? []);
    const services = serviceIdentities(input.ServiceIdentities ?? [], fields.local, tokenIdentityFailure);
    const nodes = nodeIdentities(input.NodeIdentities ?? [], tokenIdentityFailure);
    const templated = normalizeTemplatedPolicies(input.TemplatedPolicies ?? [], 'token', fields.local);
    if (!isValidNamespace(fields.namespace)) throw agentError('NAMESPACE_INVALID', { name: fields.namespace });
    return newToken(fields.accessor, fields.secret, fields.description, policies, fields.createTime, {
      ServiceIdentities: services,
      NodeIdentities: nodes,
      ...(roles.length > 0 ? { Roles: roles } : {}),
      ...(templated.length > 0 ? { TemplatedPolicies: templated } : {}),
      Local: fields.local,
      Namespace: fields.namespace,
      ...(fields.expirationTime === undefined ? {} : { ExpirationTime: fields.expirationTime }),
    });
  }

  /** Role links by name become links by ID (a role may be renamed later); duplicates go. */
  private roleLinks(links: readonly LinkInput[]): RoleLink[] {
    const out: RoleLink[] = [];
    const seen = new Set<string>();
    for (const link of links) {
      let id = link.ID ?? '';
      if (id === '') {
        const name = link.Name ?? '';
        const role = findRoleByName(this.store, name);
        if (role === undefined) throw agentError('ACL_TOKEN_NO_ROLE_NAME', { name });
        id = role.value.ID;
      } else if (this.store.get(ACL_ROLES, id) === undefined) {
        throw agentError('ACL_TOKEN_NO_ROLE_ID', { id });
      }
      if (!seen.has(id)) {
        seen.add(id);
        out.push({ ID: id });
      }
    }
    return out;
  }

  /** Links by name become links by ID (a policy may be renamed later); duplicates go. */
  private policyLinks(links: readonly LinkInput[]): PolicyLink[] {
    const out: PolicyLink[] = [];
    const seen = new Set<string>();
    for (const link of links) {
      let id = link.ID ?? '';
      if (id === '') {
        const name = link.Name ?? '';
        const policy = findPolicyByName(this.store, name);
        if (policy === undefined) throw agentError('ACL_TOKEN_NO_POLICY_NAME', { name });
        id = policy.value.ID;
      } else if (this.store.get(ACL_POLICIES, id) === undefined) {
        throw agentError('ACL_TOKEN_NO_POLICY_ID', { id });
      }
      if (!seen.has(id)) {
        seen.add(id);
        out.push({ ID: id });
      }
    }
    return out;
  }

  private rejectBootstrapDone(): void {
    const marker = this.store.get(ACL_META, BOOTSTRAP_KEY);
    if (marker !== undefined) throw agentError('ACL_BOOTSTRAP_DONE', { resetIndex: marker.modifyIndex });
  }

  /** Every AccessorID and secret (by its hash) in use: a new ID may be neither (Consul checks both tables). */
  private usedIds(): UsedIds {
    const accessors = new Set<string>();
    const secretHashes = new Set<string>();
    for (const row of this.store.list<StoredToken>(ACL_TOKENS, '')) {
      accessors.add(row.value.AccessorID);
      secretHashes.add(tokenSecretHash(row.value));
    }
    return { accessors, secretHashes };
  }

  private expired(token: StoredToken): boolean {
    // The resolver's rule: a token is unusable from its ExpirationTime on.
    return token.ExpirationTime !== undefined && Date.parse(token.ExpirationTime) <= this.clock.now();
  }

  private nowIso(): string {
    return new Date(this.clock.now()).toISOString();
  }

  private async commit(ops: readonly WriteOp[]): Promise<void> {
    const result = await this.store.commit(ops);
    if (!result.ok) throw writeRaced();
  }

  private stored(accessorId: string): Row<StoredToken> {
    const row = this.store.get<StoredToken>(ACL_TOKENS, accessorId);
    if (row === undefined) throw agentError('ACL_TOKEN_LOST');
    return row;
  }
}

/** A login token keeps the auth method that made it (its hash covers permissions only, so it is unchanged). */
function withAuthMethod(authMethod: string | undefined, token: StoredToken): StoredToken {
  return authMethod ? { ...token, AuthMethod: authMethod } : token;
}

function inUse(id: string, used: UsedIds): boolean {
  return used.accessors.has(id) || used.secretHashes.has(secretHash(id));
}

/** A new random ID that is not reserved and not in use as an AccessorID or SecretID. */
function freshId(used: UsedIds, alsoAvoid?: string): string {
  for (;;) {
    const id = generateId();
    if (!id.startsWith(RESERVED_ID_PREFIX) && !inUse(id, used) && id !== alsoAvoid) return id;
  }
}

/** Consul's validateTokenID, then the in-use check. */
function checkNewId(field: 'AccessorID' | 'SecretID', id: string, used: UsedIds): void {
  if (id.startsWith(RESERVED_ID_PREFIX)) {
    throw agentError('ACL_TOKEN_ID_RESERVED', { field, prefix: RESERVED_ID_PREFIX });
  }
  if (!isUuid(id)) throw agentError('ACL_TOKEN_ID_NOT_UUID', { field });
  if (inUse(id, used)) throw agentError('ACL_TOKEN_ID_IN_USE', { field });
}

/** Consul's token texts for a bad identity (its role texts are roles.ts's). */
const tokenIdentityFailure: IdentityFailure = (problem, name) => {
  switch (problem) {
    case 'service-no-name':
      return agentError('ACL_TOKEN_SERVICE_IDENTITY_NO_NAME');
    case 'service-datacenters-on-local':
      return agentError('ACL_TOKEN_SERVICE_IDENTITY_LOCAL_DCS', { name });
    case 'service-name':
      return agentError('ACL_TOKEN_SERVICE_IDENTITY_NAME', { name });
    case 'node-no-name':
      return agentError('ACL_TOKEN_NODE_IDENTITY_NO_NAME');
    case 'node-no-datacenter':
      return agentError('ACL_TOKEN_NODE_IDENTITY_NO_DC');
    case 'node-name':
      return agentError('ACL_TOKEN_NODE_IDENTITY_NAME');
  }
};
