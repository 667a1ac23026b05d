// ACL auth methods without HTTP (docs/decisions.md#auth-methods): Consul's AuthMethodSet (an
// upsert by name), read, list and delete, with its validation order and texts, and the validator
// of each method version, kept until the method changes. Deleting a method deletes its binding
// rules and the tokens its logins made, in one commit, as Consul's state store does. User mistakes
// are 4xx (docs/decisions.md D3). Writes run one at a time (WriteLock), each commit guarded.
import type { Clock } from '../../core/clock.js';
import { formatDuration } from '../../core/duration.js';
import { agentError } from '../../core/errors.js';
import type { Row, StateStore, WriteOp } from '../../state/types.js';
import { ACL_TOKENS, type StoredToken } from '../model.js';
import { WriteLock, writeRaced } from '../write-lock.js';
import { fetchJwks, type JwksFetch, type JwksOptions } from './jwks.js';
import { JwtValidator } from './jwt-validator.js';
import {
  ACL_AUTH_METHODS,
  ACL_BINDING_RULES,
  AUTH_METHOD_TYPES,
  type StoredAuthMethod,
  type StoredBindingRule,
} from './model.js';

/** An auth method write's body, decoded; as in Go, an empty string or zero means "not given". */
export interface AuthMethodInput {
  readonly Name?: string | undefined;
  readonly Type?: string | undefined;
  readonly DisplayName?: string | undefined;
  readonly Description?: string | undefined;
  /** Milliseconds. */
  readonly MaxTokenTTL?: number | undefined;
  readonly TokenLocality?: string | undefined;
  readonly Config?: Readonly<Record<string, unknown>> | undefined;
}

export interface AuthMethodsOptions {
  /** acl.token_min_expiration_ttl and …max…, in milliseconds: MaxTokenTTL must lie between. */
  readonly minExpirationTtlMs: number;
  readonly maxExpirationTtlMs: number;
  readonly clock: Clock;
  /** How a JWKS URL is fetched (default: node's http and https). */
  readonly fetch?: JwksFetch | undefined;
  readonly jwks?: JwksOptions | undefined;
  /** Shared with the binding rules (binding-rules.ts), so a method's delete and a rule's write do not interleave. */
  readonly lock?: WriteLock | undefined;
}

// Consul's validAuthMethod.
const METHOD_NAME = /^[A-Za-z0-9\-_]{1,128}$/;

export class AclAuthMethods {
  readonly lock: WriteLock;
  private readonly validators = new Map<string, { readonly index: number; readonly validator: JwtValidator }>();
  private readonly fetch: JwksFetch;

  constructor(
    private readonly store: StateStore,
    private readonly options: AuthMethodsOptions,
  ) {
    this.lock = options.lock ?? new WriteLock();
    this.fetch = options.fetch ?? fetchJwks;
  }

  read(name: string): Row<StoredAuthMethod> | undefined {
    return this.store.get<StoredAuthMethod>(ACL_AUTH_METHODS, name);
  }

  /** Every method, sorted by name. */
  list(): Row<StoredAuthMethod>[] {
    return this.store.list<StoredAuthMethod>(ACL_AUTH_METHODS, '');
  }

  /**
   * The validator of this method version: built from its Config when first asked (the Config was
   * checked when written) and kept until the method's row changes, with its fetched JWKS.
   */
  validator(row: Row<StoredAuthMethod>): JwtValidator {
    const kept = this.validators.get(row.key);
    if (kept !== undefined && kept.index === row.modifyIndex) return kept.validator;
    const validator = JwtValidator.offline(row.value.Config, this.validatorDeps());
    this.validators.set(row.key, { index: row.modifyIndex, validator });
    return validator;
  }

  /** PUT /v1/acl/auth-method and /v1/acl/auth-method/:name (the URL's name already merged in). */
  upsert(input: AuthMethodInput): Promise<Row<StoredAuthMethod>> {
    return this.lock.run(async () => {
      const name = input.Name ?? '';
      if (name === '') throw agentError('ACL_AUTH_METHOD_INVALID', { detail: 'no Name is set' });
      if (!METHOD_NAME.test(name)) {
        throw agentError('ACL_AUTH_METHOD_INVALID', {
          detail: "invalid Name. Only alphanumeric characters, '-' and '_' are allowed",
        });
      }
      const existing = this.read(name);
      let type = input.Type ?? '';
      if (existing !== undefined) {
        if (type === '') type = existing.value.Type;
        else if (type !== existing.value.Type) throw agentError('ACL_AUTH_METHOD_TYPE_IMMUTABLE');
      }
      if (!(AUTH_METHOD_TYPES as readonly string[]).includes(type)) {
        throw agentError('ACL_AUTH_METHOD_INVALID', {
          detail: `Type should be one of: [${AUTH_METHOD_TYPES.join(' ')}]`,
        });
      }
      const ttl = input.MaxTokenTTL ?? 0;
      const { minExpirationTtlMs: min, maxExpirationTtlMs: max } = this.options;
      if (ttl !== 0) {
        if (ttl > max)
          throw agentError('ACL_AUTH_METHOD_TTL_TOO_LONG', { ttl: formatDuration(ttl), max: formatDuration(max) });
        if (ttl < min)
          throw agentError('ACL_AUTH_METHOD_TTL_TOO_SHORT', { ttl: formatDuration(ttl), min: formatDuration(min) });
      }
      const locality = input.TokenLocality ?? '';
      // This agent's datacenter is the primary one, so 'global' is allowed as Consul allows it there.
      if (locality !== '' && locality !== 'local' && locality !== 'global') {
        throw agentError('ACL_AUTH_METHOD_INVALID', { detail: "TokenLocality should be one of 'local' or 'global'" });
      }
      const config = input.Config ?? {};
      await JwtValidator.checked(config, this.validatorDeps());
      const method: StoredAuthMethod = {
        Name: name,
        Type: type,
        DisplayName: input.DisplayName ?? '',
        Description: input.Description ?? '',
        MaxTokenTTLMs: ttl,
        TokenLocality: locality,
        Config: config,
      };
      const ifIndex = existing?.modifyIndex ?? 0;
      const result = await this.store.commit([
        { op: 'set', table: ACL_AUTH_METHODS, key: name, value: method, ifIndex },
      ]);
      if (!result.ok) throw writeRaced();
      const row = this.read(name);
      if (row === undefined) throw writeRaced();
      return row;
    });
  }

  /** DELETE /v1/acl/auth-method/:name: with its binding rules and login tokens; a missing one is no error. */
  delete(name: string): Promise<void> {
    return this.lock.run(async () => {
      const row = this.read(name);
      if (row === undefined) return;
      const ops: WriteOp[] = [{ op: 'delete', table: ACL_AUTH_METHODS, key: name, ifIndex: row.modifyIndex }];
      for (const rule of this.store.list<StoredBindingRule>(ACL_BINDING_RULES, '')) {
        if (rule.value.AuthMethod === name) {
          ops.push({ op: 'delete', table: ACL_BINDING_RULES, key: rule.key, ifIndex: rule.modifyIndex });
        }
      }
      for (const token of this.store.list<StoredToken>(ACL_TOKENS, '')) {
        if (token.value.AuthMethod === name) {
          ops.push({ op: 'delete', table: ACL_TOKENS, key: token.key, ifIndex: token.modifyIndex });
        }
      }
      const result = await this.store.commit(ops);
      if (!result.ok) throw writeRaced();
      this.validators.delete(name);
    });
  }

  private validatorDeps() {
    return { clock: this.options.clock, fetch: this.fetch, jwks: this.options.jwks };
  }
}
