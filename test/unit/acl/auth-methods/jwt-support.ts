// Keys and JWTs the tests make themselves with node:crypto alone: the signer is not the verifier's
// library (jose, imported by src/acl/auth-methods/jwt.ts only).
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';

export interface TestKey {
  readonly privateKey: KeyObject;
  readonly publicPem: string;
  readonly alg: string;
  /** The public key as a JWKS entry (with `kid` and `alg`). */
  readonly jwk: Record<string, unknown>;
}

export function testKey(kind: 'rsa' | 'ec', kid: string): TestKey {
  const pair =
    kind === 'rsa'
      ? generateKeyPairSync('rsa', { modulusLength: 2048 })
      : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const alg = kind === 'rsa' ? 'RS256' : 'ES256';
  return {
    privateKey: pair.privateKey,
    publicPem: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    alg,
    jwk: { ...pair.publicKey.export({ format: 'jwk' }), kid, alg, use: 'sig' },
  };
}

/** A compact JWS of `claims` signed by `key` (RS256 or ES256); `kid` and `alg` go in its header. */
export function signJwt(
  key: TestKey,
  claims: Record<string, unknown>,
  options: { kid?: string; alg?: string } = {},
): Promise<string> {
  return Promise.resolve(signCompact(key.privateKey, options.alg ?? key.alg, claims, options.kid));
}

export function signCompact(privateKey: KeyObject, alg: string, claims: Record<string, unknown>, kid?: string): string {
  const part = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64url');
  const input = `${part({ alg, ...(kid === undefined ? {} : { kid }) })}.${part(claims)}`;
  const signature = alg.startsWith('ES')
    ? sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' })
    : sign('sha256', Buffer.from(input), privateKey);
  return `${input}.${signature.toString('base64url')}`;
}
