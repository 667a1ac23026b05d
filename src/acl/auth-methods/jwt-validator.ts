// The `jwt` auth method's validator (Consul's ssoauth Validator over go-sso): built once per method
// version from its Config, it turns a bearer token into the login identity or Consul's error text.
// Keys are the static PEM keys, or the JWKS URL's (fetched and kept by jwks.ts, checked once when
// the method is written, as Consul's validator fetches it then).
import type { JsonWebKey } from 'node:crypto';
import type { Clock } from '../../core/clock.js';
import { agentError } from '../../core/errors.js';
import { blankIdentity, claimsError, identityFromClaims, type LoginIdentity } from './claims.js';
import { JWKS_DEFAULTS, JwksKeys, type JwksFetch, type JwksOptions } from './jwks.js';
import { parseJwtConfig, SUPPORTED_ALGS, type JwtConfig } from './jwt-config.js';
import { parsePublicKeyPem } from './keys.js';
import { jwsHeader, verifySignature } from './jwt.js';

export interface ValidatorDeps {
  readonly clock: Clock;
  readonly fetch: JwksFetch;
  readonly jwks?: JwksOptions | undefined;
}

/** Without JWTSupportedAlgs, what go-jose verifies with an RSA, ECDSA or Ed25519 key. */
const DEFAULT_ALGS: readonly string[] = [...SUPPORTED_ALGS, 'EdDSA', 'Ed25519'];

/** A refused login: the text Consul answers (docs/errors.md, ACL_LOGIN_REFUSED). */
function refused(detail: string): Error {
  return agentError('ACL_LOGIN_REFUSED', { detail });
}

export class JwtValidator {
  private readonly algs: readonly string[];
  private readonly staticKeys: readonly JsonWebKey[];
  private readonly jwks: JwksKeys | undefined;

  private constructor(
    readonly config: JwtConfig,
    private readonly deps: ValidatorDeps,
  ) {
    this.algs = config.JWTSupportedAlgs.length > 0 ? config.JWTSupportedAlgs : DEFAULT_ALGS;
    this.staticKeys = config.JWTValidationPubKeys.map((pem) => parsePublicKeyPem(pem) as JsonWebKey);
    this.jwks =
      config.JWKSURL === ''
        ? undefined
        : new JwksKeys(config.JWKSURL, config.JWKSCACert, deps.fetch, deps.clock, deps.jwks ?? JWKS_DEFAULTS);
  }

  /** Checks `rawConfig` as Consul's NewValidator does (no network): throws ACL_AUTH_METHOD_INVALID. */
  static offline(rawConfig: Readonly<Record<string, unknown>>, deps: ValidatorDeps): JwtValidator {
    return new JwtValidator(parseJwtConfig(rawConfig), deps);
  }

  /** As `offline`, then fetches the JWKS URL once, so an unreachable one is refused when written. */
  static async checked(rawConfig: Readonly<Record<string, unknown>>, deps: ValidatorDeps): Promise<JwtValidator> {
    const validator = JwtValidator.offline(rawConfig, deps);
    if (validator.jwks !== undefined) {
      try {
        await validator.jwks.current();
      } catch (err) {
        throw agentError('ACL_AUTH_METHOD_INVALID', {
          detail: `error checking JWKSURL: fetching keys ${(err as Error).message}`,
        });
      }
    }
    return validator;
  }

  /** How many times the JWKS URL was fetched (0 for static keys). */
  get jwksFetches(): number {
    return this.jwks?.fetches ?? 0;
  }

  newIdentity(): LoginIdentity {
    return blankIdentity(this.config);
  }

  /** Consul's ClaimsFromJWT then identityFromClaims; throws ACL_LOGIN_REFUSED with Consul's text. */
  async validateLogin(token: string): Promise<LoginIdentity> {
    if (token === '') throw refused('missing jwt');
    const payload = await this.verified(token);
    let claims: unknown;
    try {
      claims = JSON.parse(Buffer.from(payload).toString('utf8'));
    } catch (err) {
      throw refused(`failed to unmarshal claims: ${(err as Error).message}`);
    }
    if (claims === null || typeof claims !== 'object' || Array.isArray(claims)) {
      throw refused('failed to unmarshal claims: json: cannot unmarshal non-object into Go value of type jwt.Claims');
    }
    const record = claims as Record<string, unknown>;
    const problem = claimsError(record, this.config, this.deps.clock.now());
    if (problem !== undefined) throw refused(problem);
    const identity = identityFromClaims(record, this.config);
    if ('error' in identity) throw refused(identity.error);
    return identity;
  }

  private async verified(token: string): Promise<Uint8Array> {
    let alg: string;
    try {
      alg = jwsHeader(token).alg;
    } catch (err) {
      throw refused(`error parsing token: ${(err as Error).message}`);
    }
    // Consul leaves JWTSupportedAlgs unchecked for this type; here it binds (docs/decisions.md#auth-methods).
    if (!this.algs.includes(alg)) {
      throw refused(
        `error verifying token: oidc: id token signed with unsupported algorithm, expected ${goList(this.algs)} got ${JSON.stringify(alg)}`,
      );
    }
    if (this.jwks === undefined) {
      const payload = await verifySignature(token, this.staticKeys, this.algs);
      if (payload === undefined) throw refused('no known key successfully validated the token signature');
      return payload;
    }
    const fail = (err: unknown): never => {
      throw refused(`error verifying token: fetching keys ${(err as Error).message}`);
    };
    const kept = await this.jwks.current().catch(fail);
    const payload = await verifySignature(token, kept, this.algs);
    if (payload !== undefined) return payload;
    // A key the kept set lacks: the provider may have rotated; fetch again (at most once per cooldown).
    const fresh = await this.jwks.refresh()?.catch(fail);
    const retried = fresh === undefined ? undefined : await verifySignature(token, fresh, this.algs);
    if (retried === undefined) throw refused('error verifying token: failed to verify id token signature');
    return retried;
  }
}

/** Go's %q of a []string: ["RS256" "ES256"]. */
function goList(items: readonly string[]): string {
  return `[${items.map((i) => JSON.stringify(i)).join(' ')}]`;
}
