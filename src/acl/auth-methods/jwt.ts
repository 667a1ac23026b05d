// A JWT's signature checked against candidate keys: the one file that imports `jose`. Claims are
// not judged here (claims.ts does, as Consul's go-sso does); this answers only "which payload did
// one of these keys sign". The token's `alg` must be one the method allows (a PEM or JWKS key
// never verifies an HMAC or `none` token), and a key with a `kid` is tried only for that `kid`.
import type { JsonWebKey } from 'node:crypto';
import { compactVerify, decodeProtectedHeader, importJWK, type JWK } from 'jose';

/** What the verifier needs of a token's header. */
export interface JwsHeader {
  readonly alg: string;
  readonly kid: string | undefined;
}

/** The protected header; throws with go-jose's kind of text when the token is not a compact JWS. */
export function jwsHeader(token: string): JwsHeader {
  if (token.split('.').length !== 3) throw new Error('go-jose/go-jose: compact JWS format must have three parts');
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(token);
  } catch (err) {
    throw new Error(`go-jose/go-jose: ${(err as Error).message}`, { cause: err });
  }
  return {
    alg: typeof header.alg === 'string' ? header.alg : '',
    kid: typeof header.kid === 'string' ? header.kid : undefined,
  };
}

type VerifyKey = Exclude<Awaited<ReturnType<typeof importJWK>>, Uint8Array>;

// Imported keys, once per (key, algorithm): verifying stays a hash and a signature check.
const imported = new WeakMap<JsonWebKey, Map<string, Promise<VerifyKey | undefined>>>();

function importKey(jwk: JsonWebKey, alg: string): Promise<VerifyKey | undefined> {
  let byAlg = imported.get(jwk);
  if (byAlg === undefined) {
    byAlg = new Map();
    imported.set(jwk, byAlg);
  }
  let key = byAlg.get(alg);
  if (key === undefined) {
    // A key of another type than the algorithm's (an EC key for RS256) does not import: not a candidate.
    key = importJWK({ ...(jwk as JWK), alg }, alg).then(
      (k) => (k instanceof Uint8Array ? undefined : k),
      () => undefined,
    );
    byAlg.set(alg, key);
  }
  return key;
}

/**
 * The payload signed by one of `keys`, or undefined when none verifies it (or its algorithm is not
 * in `algs`). Throws only for a token that is not a compact JWS.
 */
export async function verifySignature(
  token: string,
  keys: readonly JsonWebKey[],
  algs: readonly string[],
): Promise<Uint8Array | undefined> {
  const header = jwsHeader(token);
  if (!algs.includes(header.alg)) return undefined;
  for (const jwk of keys) {
    if (header.kid !== undefined && typeof jwk.kid === 'string' && jwk.kid !== header.kid) continue;
    if (typeof jwk.alg === 'string' && jwk.alg !== header.alg) continue;
    const key = await importKey(jwk, header.alg);
    if (key === undefined) continue;
    try {
      const { payload } = await compactVerify(token, key, { algorithms: [header.alg] });
      return payload;
    } catch {
      // Not this key: try the next.
    }
  }
  return undefined;
}
