// What a verified JWT's claims mean for a login, as Consul's go-sso judges them: the time claims
// with their leeways, the bound issuer and audiences (validateClaims), then the mapped claims as the
// identity a binding rule selects on and interpolates (identityFromClaims). Pure: time is passed in.
import type { JwtConfig } from './jwt-config.js';

/** go-sso's default leeway for a missing exp or nbf: 150 s. */
const DEFAULT_CLAIM_LEEWAY_S = 150;
/** go-jose's jwt.DefaultLeeway, the default clock skew: 1 minute. */
const DEFAULT_CLOCK_SKEW_S = 60;

/** go-jose's texts, which Consul's error carries behind "error validating claims: ". */
const JOSE = 'go-jose/go-jose/jwt: validation failed';
const ERR_ISSUER = `${JOSE}, invalid issuer claim (iss)`;
const ERR_NOT_YET = `${JOSE}, token not valid yet (nbf)`;
const ERR_EXPIRED = `${JOSE}, token is expired (exp)`;
const ERR_FUTURE = 'go-jose/go-jose/jwt: validation field, token issued in the future (iat)';

/** The identity a login presents to binding rules (Consul's authmethod.Identity). */
export interface LoginIdentity {
  /** What a Selector sees: `value.<key>` and `list.<key>`. */
  readonly selectable: { readonly value: Record<string, string>; readonly list: Record<string, string[]> };
  /** What a BindName interpolates: `value.<key>` for every mapped claim ('' when absent). */
  readonly projected: Readonly<Record<string, string>>;
}

/** A leeway in whole seconds as go-sso reads it: negative is none, 0 the default. */
function leewaySeconds(ms: number, fallback: number): number {
  if (ms < 0) return 0;
  if (ms === 0) return fallback;
  return Math.trunc(ms / 1000);
}

/** A NumericDate claim in whole seconds; 0 when absent. */
function numericDate(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? Math.trunc(value) : 0;
}

function audience(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string');
  return [];
}

/**
 * go-sso's verifyVanillaJWT after the signature: undefined when the claims hold at `nowMs`, else
 * Consul's error text.
 */
export function claimsError(
  claims: Readonly<Record<string, unknown>>,
  config: JwtConfig,
  nowMs: number,
): string | undefined {
  const iat = numericDate(claims.iat);
  let exp = numericDate(claims.exp);
  let nbf = numericDate(claims.nbf);
  if (iat === 0 && exp === 0 && nbf === 0) return 'no issue time, notbefore, or expiration time encoded in token';
  if (exp === 0) exp = Math.max(iat, nbf) + leewaySeconds(config.ExpirationLeewayMs, DEFAULT_CLAIM_LEEWAY_S);
  if (nbf === 0) nbf = iat !== 0 ? iat : exp - leewaySeconds(config.NotBeforeLeewayMs, DEFAULT_CLAIM_LEEWAY_S);
  const skewMs =
    config.ClockSkewLeewayMs < 0
      ? 0
      : config.ClockSkewLeewayMs === 0
        ? DEFAULT_CLOCK_SKEW_S * 1000
        : config.ClockSkewLeewayMs;
  const fail = (detail: string): string => `error validating claims: ${detail}`;
  if (config.BoundIssuer !== '' && claims.iss !== config.BoundIssuer) return fail(ERR_ISSUER);
  if (nowMs + skewMs < nbf * 1000) return fail(ERR_NOT_YET);
  if (nowMs - skewMs > exp * 1000) return fail(ERR_EXPIRED);
  if (iat !== 0 && nowMs + skewMs < iat * 1000) return fail(ERR_FUTURE);
  const aud = audience(claims.aud);
  if (config.BoundAudiences.length === 0) {
    if (aud.length > 0) return fail('audience claim found in JWT but no audiences are bound');
  } else if (!config.BoundAudiences.some((bound) => aud.includes(bound))) {
    return fail('aud claim does not match any bound audience');
  }
  return undefined;
}

/** A claim by name, or by JSON pointer when it starts with '/' (pointerstructure's Get). */
function claim(claims: Readonly<Record<string, unknown>>, source: string): unknown {
  if (!source.startsWith('/')) return claims[source];
  let at: unknown = claims;
  for (const raw of source.slice(1).split('/')) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(at)) {
      const i = Number(part);
      if (!Number.isInteger(i) || i < 0 || i >= at.length) return undefined;
      at = at[i];
    } else if (at !== null && typeof at === 'object' && Object.hasOwn(at, part)) {
      at = (at as Record<string, unknown>)[part];
    } else {
      return undefined;
    }
  }
  return at;
}

/** go-sso's stringifyMetadataValue: strings as they are, booleans, numbers truncated to integers. */
function stringify(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'number') return String(Math.trunc(value));
  return undefined;
}

function goTypeName(value: unknown): string {
  if (Array.isArray(value)) return '[]interface {}';
  return 'map[string]interface {}';
}

/** The error text of a claim that cannot be mapped (Consul's), or the identity. */
export function identityFromClaims(
  claims: Readonly<Record<string, unknown>>,
  config: JwtConfig,
): LoginIdentity | { readonly error: string } {
  const value: Record<string, string> = {};
  const projected: Record<string, string> = {};
  for (const target of Object.values(config.ClaimMappings)) projected[`value.${target}`] = '';
  for (const [source, target] of Object.entries(config.ClaimMappings)) {
    const raw = claim(claims, source);
    if (raw === undefined || raw === null) continue;
    const text = stringify(raw);
    if (text === undefined) {
      return { error: `error converting claim '${source}' to string from unknown type ${goTypeName(raw)}` };
    }
    value[target] = text;
    projected[`value.${target}`] = text;
  }
  const list: Record<string, string[]> = {};
  for (const [source, target] of Object.entries(config.ListClaimMappings)) {
    const raw = claim(claims, source);
    if (raw === undefined || raw === null) continue;
    const items = Array.isArray(raw) ? (raw as unknown[]) : stringify(raw) === undefined ? undefined : [raw];
    if (items === undefined)
      return { error: `${JSON.stringify(source)} list claim could not be converted to string list` };
    const out: string[] = [];
    for (const item of items) {
      const text = stringify(item);
      if (text === undefined) {
        return {
          error: `value ${JSON.stringify(item)} in ${JSON.stringify(source)} list claim could not be parsed as string`,
        };
      }
      if (text !== '') out.push(text);
    }
    list[target] = out;
  }
  return { selectable: { value, list }, projected };
}

/** The identity of no claims, for checking a rule against the method's mappings when it is written. */
export function blankIdentity(config: JwtConfig): LoginIdentity {
  const value: Record<string, string> = {};
  const list: Record<string, string[]> = {};
  const projected: Record<string, string> = {};
  for (const target of Object.values(config.ClaimMappings)) {
    value[target] = '';
    projected[`value.${target}`] = '';
  }
  for (const target of Object.values(config.ListClaimMappings)) list[target] = [];
  return { selectable: { value, list }, projected };
}
