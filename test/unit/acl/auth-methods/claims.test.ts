// The claims of a verified JWT as Consul's go-sso judges them: time claims with leeways and clock
// skew, bound issuer and audiences, and claim mappings into the identity binding rules see.
import { describe, expect, it } from 'vitest';
import { blankIdentity, claimsError, identityFromClaims } from '../../../../src/acl/auth-methods/claims.js';
import { parseJwtConfig } from '../../../../src/acl/auth-methods/jwt-config.js';
import { testKey } from './jwt-support.js';

const KEY = testKey('ec', 'k1');
const NOW_S = 1_700_000_000;
const NOW = NOW_S * 1000;

const config = (extra: Record<string, unknown> = {}) =>
  parseJwtConfig({ JWTValidationPubKeys: [KEY.publicPem], ...extra });

describe('claimsError', () => {
  const base = config({ BoundIssuer: 'https://issuer', BoundAudiences: ['svc'] });
  const good = { iss: 'https://issuer', aud: 'svc', iat: NOW_S - 10, exp: NOW_S + 600 };

  it('accepts good claims, and an audience list holding a bound one', () => {
    expect(claimsError(good, base, NOW)).toBeUndefined();
    expect(claimsError({ ...good, aud: ['other', 'svc'] }, base, NOW)).toBeUndefined();
  });

  it("refuses with Consul's texts", () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ ...good, iss: 'https://evil' }, 'go-jose/go-jose/jwt: validation failed, invalid issuer claim (iss)'],
      [{ ...good, exp: NOW_S - 61 }, 'go-jose/go-jose/jwt: validation failed, token is expired (exp)'],
      [{ ...good, nbf: NOW_S + 61 }, 'go-jose/go-jose/jwt: validation failed, token not valid yet (nbf)'],
      [{ ...good, iat: NOW_S + 61 }, 'go-jose/go-jose/jwt: validation failed, token not valid yet (nbf)'],
      [{ ...good, aud: 'other' }, 'aud claim does not match any bound audience'],
      [{ ...good, aud: undefined }, 'aud claim does not match any bound audience'],
    ];
    for (const [claims, text] of cases) expect(claimsError(claims, base, NOW)).toBe(`error validating claims: ${text}`);
    expect(claimsError({ iss: 'https://issuer', aud: 'svc' }, base, NOW)).toBe(
      'no issue time, notbefore, or expiration time encoded in token',
    );
  });

  it('allows the default clock skew of 60 s, a configured one, and none when negative', () => {
    expect(claimsError({ ...good, exp: NOW_S - 59 }, base, NOW)).toBeUndefined();
    const wide = config({ BoundIssuer: 'https://issuer', BoundAudiences: ['svc'], ClockSkewLeeway: '5m' });
    expect(claimsError({ ...good, exp: NOW_S - 290 }, wide, NOW)).toBeUndefined();
    const none = config({ BoundIssuer: 'https://issuer', BoundAudiences: ['svc'], ClockSkewLeeway: -1 });
    expect(claimsError({ ...good, exp: NOW_S - 1 }, none, NOW)).toMatch(/token is expired/);
  });

  it('gives a token without exp 150 s after its issue by default, and ExpirationLeeway otherwise', () => {
    const noExp = { iss: 'https://issuer', aud: 'svc', iat: NOW_S - 100 };
    expect(claimsError(noExp, base, NOW)).toBeUndefined();
    expect(claimsError({ ...noExp, iat: NOW_S - 150 - 61 }, base, NOW)).toMatch(/token is expired/);
    const short = config({ BoundIssuer: 'https://issuer', BoundAudiences: ['svc'], ExpirationLeeway: 10_000_000_000 });
    expect(claimsError({ ...noExp, iat: NOW_S - 71 }, short, NOW)).toMatch(/token is expired/);
  });

  it('refuses an audience when none is bound', () => {
    expect(claimsError({ ...good, iss: undefined }, config(), NOW)).toBe(
      'error validating claims: audience claim found in JWT but no audiences are bound',
    );
    expect(claimsError({ exp: NOW_S + 60 }, config(), NOW)).toBeUndefined();
  });
});

describe('identityFromClaims', () => {
  const mapped = config({
    ClaimMappings: { sub: 'name', '/ns/team': 'team', admin: 'admin', uid: 'uid', missing: 'gone' },
    ListClaimMappings: { groups: 'groups', role: 'roles' },
  });

  it('maps names and JSON pointers, stringifies booleans and truncates numbers, lists drop empty strings', () => {
    const identity = identityFromClaims(
      { sub: 'Web', ns: { team: 'pay' }, admin: true, uid: 42.9, groups: ['a', '', 7], role: 'solo' },
      mapped,
    );
    expect(identity).toEqual({
      selectable: {
        value: { name: 'Web', team: 'pay', admin: 'true', uid: '42' },
        list: { groups: ['a', '7'], roles: ['solo'] },
      },
      projected: {
        'value.name': 'Web',
        'value.team': 'pay',
        'value.admin': 'true',
        'value.uid': '42',
        'value.gone': '',
      },
    });
  });

  it("refuses a claim it cannot make a string, in Consul's words", () => {
    expect(identityFromClaims({ sub: { a: 1 } }, mapped)).toEqual({
      error: "error converting claim 'sub' to string from unknown type map[string]interface {}",
    });
    expect(identityFromClaims({ groups: [{}] }, mapped)).toEqual({
      error: 'value {} in "groups" list claim could not be parsed as string',
    });
  });

  it('a blank identity has every mapped key empty', () => {
    expect(blankIdentity(mapped).selectable.value).toEqual({ name: '', team: '', admin: '', uid: '', gone: '' });
    expect(Object.keys(blankIdentity(mapped).projected)).toHaveLength(5);
  });
});

describe('parseJwtConfig', () => {
  const refused = (raw: Record<string, unknown>): string => {
    try {
      parseJwtConfig(raw);
    } catch (err) {
      return (err as Error).message;
    }
    return 'accepted';
  };

  it("refuses what Consul's jwt validator refuses, with its texts", () => {
    expect(refused({})).toBe(
      `Invalid Auth Method: exactly one of 'JWTValidationPubKeys', 'JWKSURL', or 'OIDCDiscoveryURL' must be set for type "jwt"`,
    );
    expect(refused({ JWTValidationPubKeys: [KEY.publicPem], JWKSURL: 'http://127.0.0.1/jwks' })).toMatch(
      /exactly one of/,
    );
    expect(refused({ JWTValidationPubKeys: ['nope'] })).toBe(
      'Invalid Auth Method: error parsing public key JWTValidationPubKeys[0]: data does not contain any valid RSA, ECDSA, or ED25519 public keys',
    );
    expect(refused({ JWTValidationPubKeys: [KEY.publicPem], JWKSCACert: 'x' })).toBe(
      "Invalid Auth Method: 'JWKSCACert' should not be set unless 'JWKSURL' is set",
    );
    expect(refused({ JWTValidationPubKeys: [KEY.publicPem], JWTSupportedAlgs: ['HS256'] })).toBe(
      'Invalid Auth Method: Invalid supported algorithm: HS256',
    );
    expect(refused({ JWTValidationPubKeys: [KEY.publicPem], ClaimMappings: { a: 'x', b: 'x' } })).toBe(
      'Invalid Auth Method: ClaimMappings contains multiple mappings for key "x"',
    );
    expect(refused({ JWTValidationPubKeys: [KEY.publicPem], Bogus: 1 })).toBe(
      "Invalid Auth Method: error decoding config: 1 error(s) decoding:\n\n* '' has invalid keys: Bogus",
    );
    expect(refused({ OIDCDiscoveryURL: 'https://accounts.example' })).toMatch(
      /^Invalid Auth Method: error checking OIDCDiscoveryURL: OIDC discovery is not supported/,
    );
    expect(refused({ jwtvalidationpubkeys: KEY.publicPem })).toBe('accepted');
  });
});
