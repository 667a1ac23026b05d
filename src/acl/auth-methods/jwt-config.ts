// The `jwt` auth method's Config: decoded as Consul's mapstructure decoder reads it (field names
// matched case-insensitively, unknown keys refused) and checked as its go-sso validator checks it,
// texts included (docs/decisions.md#auth-methods). OIDC discovery is refused: this agent fetches
// keys from a JWKS URL or uses static PEM keys. The JWKS URL is fetched by the validator
// (jwt-validator.ts), since that check needs the network.
import { parseDuration } from '../../core/duration.js';
import { agentError, type AgentError } from '../../core/errors.js';
import { parsePublicKeyPem } from './keys.js';

export interface JwtConfig {
  readonly JWTValidationPubKeys: readonly string[];
  readonly JWKSURL: string;
  readonly JWKSCACert: string;
  readonly OIDCDiscoveryURL: string;
  readonly OIDCDiscoveryCACert: string;
  readonly BoundIssuer: string;
  readonly BoundAudiences: readonly string[];
  /** Claim (a name, or a JSON pointer when it starts with '/') → the key it is selectable as (`value.<key>`). */
  readonly ClaimMappings: Readonly<Record<string, string>>;
  /** Claim → the key of its list (`list.<key>`). */
  readonly ListClaimMappings: Readonly<Record<string, string>>;
  readonly JWTSupportedAlgs: readonly string[];
  /** Milliseconds, as configured: 0 takes the default, a negative value switches the leeway off. */
  readonly ExpirationLeewayMs: number;
  readonly NotBeforeLeewayMs: number;
  readonly ClockSkewLeewayMs: number;
}

const STRING_FIELDS = ['JWKSURL', 'JWKSCACert', 'OIDCDiscoveryURL', 'OIDCDiscoveryCACert', 'BoundIssuer'] as const;
const LIST_FIELDS = ['JWTValidationPubKeys', 'BoundAudiences', 'JWTSupportedAlgs'] as const;
const MAP_FIELDS = ['ClaimMappings', 'ListClaimMappings'] as const;
const DURATION_FIELDS = ['ExpirationLeeway', 'NotBeforeLeeway', 'ClockSkewLeeway'] as const;
const ALL_FIELDS = [...STRING_FIELDS, ...LIST_FIELDS, ...MAP_FIELDS, ...DURATION_FIELDS];
const CANONICAL = new Map(ALL_FIELDS.map((name) => [name.toLowerCase(), name]));

/** go-oidc's algorithms, the ones Consul's validator accepts in JWTSupportedAlgs. */
export const SUPPORTED_ALGS: readonly string[] = [
  'RS256',
  'RS384',
  'RS512',
  'ES256',
  'ES384',
  'ES512',
  'PS256',
  'PS384',
  'PS512',
];

function invalid(detail: string): AgentError {
  return agentError('ACL_AUTH_METHOD_INVALID', { detail });
}

function decodeError(detail: string): AgentError {
  return invalid(`error decoding config: 1 error(s) decoding:\n\n* ${detail}`);
}

/** Decodes and checks a jwt Config (all but fetching the JWKS URL); throws Consul's text. */
export function parseJwtConfig(raw: Readonly<Record<string, unknown>>): JwtConfig {
  const fields = new Map<string, unknown>();
  const unknown: string[] = [];
  for (const [key, value] of Object.entries(raw)) {
    const name = CANONICAL.get(key.toLowerCase());
    if (name === undefined) unknown.push(key);
    else fields.set(name, value);
  }
  if (unknown.length > 0) throw decodeError(`'' has invalid keys: ${unknown.sort().join(', ')}`);
  const str = (name: (typeof STRING_FIELDS)[number]): string => {
    const v = fields.get(name);
    if (v === undefined || v === null) return '';
    if (typeof v === 'string') return v;
    if (typeof v === 'number' || typeof v === 'boolean') return String(v);
    throw decodeError(`'${name}' expected type 'string', got unconvertible type '${goType(v)}'`);
  };
  const list = (name: (typeof LIST_FIELDS)[number]): string[] => {
    const v = fields.get(name);
    if (v === undefined || v === null) return [];
    // Weakly typed: a single string is a list of one.
    const items = Array.isArray(v) ? (v as unknown[]) : [v];
    return items.map((item, i) => {
      if (typeof item !== 'string') {
        throw decodeError(`'${name}[${i}]' expected type 'string', got unconvertible type '${goType(item)}'`);
      }
      return item;
    });
  };
  const map = (name: (typeof MAP_FIELDS)[number]): Record<string, string> => {
    const v = fields.get(name);
    if (v === undefined || v === null) return {};
    if (typeof v !== 'object' || Array.isArray(v)) {
      throw decodeError(`'${name}' expected a map, got '${goKind(v)}'`);
    }
    const out: Record<string, string> = {};
    for (const [k, item] of Object.entries(v as Record<string, unknown>)) {
      if (typeof item !== 'string') {
        throw decodeError(`'${name}[${k}]' expected type 'string', got unconvertible type '${goType(item)}'`);
      }
      out[k] = item;
    }
    return out;
  };
  const duration = (name: (typeof DURATION_FIELDS)[number]): number => {
    const v = fields.get(name);
    if (v === undefined || v === null) return 0;
    // Nanoseconds, as Consul's decoder reads a time.Duration; a Go duration string is taken too.
    if (typeof v === 'number' && Number.isInteger(v)) return v / 1e6;
    if (typeof v === 'string') {
      const ms = parseDuration(v);
      if (ms !== undefined) return ms;
      throw decodeError(
        `cannot parse '${name}' as int: strconv.ParseInt: parsing ${JSON.stringify(v)}: invalid syntax`,
      );
    }
    throw decodeError(`'${name}' expected type 'time.Duration', got unconvertible type '${goType(v)}'`);
  };
  const config: JwtConfig = {
    JWTValidationPubKeys: list('JWTValidationPubKeys'),
    JWKSURL: str('JWKSURL'),
    JWKSCACert: str('JWKSCACert'),
    OIDCDiscoveryURL: str('OIDCDiscoveryURL'),
    OIDCDiscoveryCACert: str('OIDCDiscoveryCACert'),
    BoundIssuer: str('BoundIssuer'),
    BoundAudiences: list('BoundAudiences'),
    ClaimMappings: map('ClaimMappings'),
    ListClaimMappings: map('ListClaimMappings'),
    JWTSupportedAlgs: list('JWTSupportedAlgs'),
    ExpirationLeewayMs: duration('ExpirationLeeway'),
    NotBeforeLeewayMs: duration('NotBeforeLeeway'),
    ClockSkewLeewayMs: duration('ClockSkewLeeway'),
  };
  checkJwtConfig(config);
  return config;
}

/** go-sso's Config.Validate for type jwt, in its order (the JWKS fetch aside). */
function checkJwtConfig(c: JwtConfig): void {
  const sources = [c.OIDCDiscoveryURL !== '', c.JWTValidationPubKeys.length > 0, c.JWKSURL !== ''].filter(Boolean);
  if (sources.length !== 1) {
    throw invalid(`exactly one of 'JWTValidationPubKeys', 'JWKSURL', or 'OIDCDiscoveryURL' must be set for type "jwt"`);
  }
  if (c.JWKSURL === '' && c.JWKSCACert !== '') throw invalid(`'JWKSCACert' should not be set unless 'JWKSURL' is set`);
  if (c.JWKSURL !== '' && !/^https?:\/\//i.test(c.JWKSURL)) {
    throw invalid(`error checking JWKSURL: fetching keys oidc: get keys failed: unsupported protocol scheme`);
  }
  c.JWTValidationPubKeys.forEach((pem, i) => {
    if (parsePublicKeyPem(pem) === undefined) {
      throw invalid(
        `error parsing public key JWTValidationPubKeys[${i}]: data does not contain any valid RSA, ECDSA, or ED25519 public keys`,
      );
    }
  });
  if (c.OIDCDiscoveryURL !== '') {
    throw invalid(
      'error checking OIDCDiscoveryURL: OIDC discovery is not supported by this agent; set JWKSURL to the provider\'s "jwks_uri" instead',
    );
  }
  if (c.OIDCDiscoveryCACert !== '') {
    throw invalid(`'OIDCDiscoveryCACert' should not be set unless 'OIDCDiscoveryURL' is set`);
  }
  for (const alg of c.JWTSupportedAlgs) {
    if (!SUPPORTED_ALGS.includes(alg)) throw invalid(`Invalid supported algorithm: ${alg}`);
  }
  for (const [field, mappings] of [
    ['ClaimMappings', c.ClaimMappings],
    ['ListClaimMappings', c.ListClaimMappings],
  ] as const) {
    const targets = new Set<string>();
    for (const target of Object.values(mappings)) {
      if (targets.has(target)) throw invalid(`${field} contains multiple mappings for key ${JSON.stringify(target)}`);
      targets.add(target);
    }
  }
}

/** Go's %T of a decoded JSON value. */
function goType(v: unknown): string {
  if (Array.isArray(v)) return '[]interface {}';
  if (typeof v === 'number') return 'float64';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'string') return 'string';
  return 'map[string]interface {}';
}

function goKind(v: unknown): string {
  if (Array.isArray(v)) return 'slice';
  if (typeof v === 'number') return 'float64';
  if (typeof v === 'boolean') return 'bool';
  return 'string';
}
