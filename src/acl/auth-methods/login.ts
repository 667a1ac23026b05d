// POST /v1/acl/login and /v1/acl/logout without HTTP (docs/decisions.md#auth-methods), as
// Consul's ACL.Login and ACL.Logout: the bearer token validated by its method, the matching
// binding rules turned into a token's identities, roles and policies, and the token written through
// AclTokens (its one login entry point) with the method's name, MaxTokenTTL and locality. A login
// that binds nothing writes nothing. Logout deletes the caller's token, only if a login made it.
import { agentError } from '../../core/errors.js';
import type { StateStore } from '../../state/types.js';
import { ACL_TOKENS, type StoredToken } from '../model.js';
import { findPolicyByName } from '../policies.js';
import { findRoleByName } from '../roles.js';
import type { AclTokens, NewToken } from '../tokens.js';
import { writeRaced } from '../write-lock.js';
import type { AclAuthMethods } from './auth-methods.js';
import { bind, noBindings } from './binder.js';
import type { AclBindingRules } from './binding-rules.js';

export interface LoginInput {
  readonly AuthMethod?: string | undefined;
  readonly BearerToken?: string | undefined;
  readonly Meta?: Readonly<Record<string, string>> | undefined;
}

/** Who asks to log out: the resolved identity of the request's token. */
export interface LogoutCaller {
  readonly accessorId: string;
  readonly anonymous: boolean;
}

export const LOGIN_DESCRIPTION = 'token created via login';

export class AclLogin {
  constructor(
    private readonly store: StateStore,
    private readonly tokens: AclTokens,
    private readonly methods: AclAuthMethods,
    private readonly rules: AclBindingRules,
    /** The agent's datacenter: node identities are bound in it. */
    private readonly datacenter: string,
  ) {}

  async login(input: LoginInput): Promise<NewToken> {
    const name = input.AuthMethod ?? '';
    const method = this.methods.read(name);
    if (method === undefined) throw agentError('ACL_LOGIN_NO_AUTH_METHOD', { name });
    const identity = await this.methods.validator(method).validateLogin(input.BearerToken ?? '');
    const bindings = bind(
      this.rules.list(name).map((row) => row.value),
      identity,
      {
        roleId: (role) => findRoleByName(this.store, role)?.value.ID,
        policyId: (policy) => findPolicyByName(this.store, policy)?.value.ID,
      },
      this.datacenter,
    );
    if (noBindings(bindings)) throw agentError('ACL_LOGIN_NO_BINDING');
    // The method may have gone while the bearer token was checked: then no token either.
    if (this.methods.read(name) === undefined) throw agentError('ACL_LOGIN_NO_AUTH_METHOD', { name });
    const ttl = method.value.MaxTokenTTLMs;
    return this.tokens.createFromLogin({
      Description: loginDescription(input.Meta ?? {}),
      // Login tokens are local to this datacenter unless the method says global (Consul's TokenLocality).
      Local: method.value.TokenLocality !== 'global',
      AuthMethod: name,
      ...(ttl > 0 ? { ExpirationTTL: ttl } : {}),
      ServiceIdentities: bindings.ServiceIdentities,
      NodeIdentities: bindings.NodeIdentities,
      Roles: bindings.Roles,
      Policies: bindings.Policies,
      TemplatedPolicies: bindings.TemplatedPolicies,
    });
  }

  /** Deletes the caller's token; refused unless a login made it. */
  async logout(caller: LogoutCaller): Promise<void> {
    if (caller.anonymous || caller.accessorId === '') throw agentError('ACL_LOGOUT_NO_TOKEN');
    const row = this.store.get<StoredToken>(ACL_TOKENS, caller.accessorId);
    if (row === undefined) throw agentError('ACL_NOT_FOUND');
    if (!row.value.AuthMethod) throw agentError('ACL_LOGOUT_NOT_LOGIN');
    const result = await this.store.commit([
      { op: 'delete', table: ACL_TOKENS, key: row.key, ifIndex: row.modifyIndex },
    ]);
    if (!result.ok) throw writeRaced();
  }
}

/** Consul's description: the prefix, then `: ` and the Meta as Go's json.Marshal writes a map (keys sorted, HTML escaped). */
export function loginDescription(meta: Readonly<Record<string, string>>): string {
  const keys = Object.keys(meta).sort();
  if (keys.length === 0) return LOGIN_DESCRIPTION;
  const sorted = Object.fromEntries(keys.map((k) => [k, meta[k]]));
  const json = JSON.stringify(sorted).replace(
    /[<>&\u2028\u2029]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return `${LOGIN_DESCRIPTION}: ${json}`;
}
