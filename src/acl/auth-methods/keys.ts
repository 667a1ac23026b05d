// Static validation keys (the jwt method's JWTValidationPubKeys): a PEM public key or certificate
// holding an RSA, ECDSA or Ed25519 key, as go-sso's parsePublicKeyPEM takes them, turned into the
// JWK the verifier (jwt.ts) matches against a token's algorithm.
import { createPublicKey, X509Certificate, type JsonWebKey, type KeyObject } from 'node:crypto';

const KEY_TYPES = new Set(['rsa', 'rsa-pss', 'ec', 'ed25519']);

/** The key as a JWK; undefined when the PEM holds no RSA, ECDSA or Ed25519 public key. */
export function parsePublicKeyPem(pem: string): JsonWebKey | undefined {
  let key: KeyObject;
  try {
    key = pem.includes('CERTIFICATE') ? new X509Certificate(pem).publicKey : createPublicKey(pem);
  } catch {
    return undefined;
  }
  if (key.type !== 'public' || !KEY_TYPES.has(key.asymmetricKeyType ?? '')) return undefined;
  return key.export({ format: 'jwk' });
}
