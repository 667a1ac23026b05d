// EC P-256 leaf keys without OpenSSL's encoders. A P-256 key has one fixed SubjectPublicKeyInfo
// and one fixed SEC1 shape, so both are the point and scalar behind constant prefixes. On Node 20
// the SPKI encoder and decoder cost ~100 us per call, a third of a signing worker's time per leaf
// (bench/micro/leaf-issue.ts). The keys come from ECDH rather than generateKeyPairSync, and are
// never exported: exporting a freshly generated KeyObject as JWK can deadlock Node 20 when a GC
// during the export finalizes the key's generation job (seen under load: the worker blocks on the
// key's mutex for good).
import { createECDH, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';

const COORDINATE_BYTES = 32;
const UNCOMPRESSED = 0x04;
const POINT_BYTES = 1 + 2 * COORDINATE_BYTES;
/** SEQUENCE { SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING (0 unused bits) }, up to the point. */
const SPKI_PREFIX = Buffer.from('3059301306072a8648ce3d020106082a8648ce3d030107034200', 'hex');
const SPKI_BYTES = SPKI_PREFIX.length + POINT_BYTES;
/** RFC 5915 ECPrivateKey: SEQUENCE { 1, OCTET STRING d, [0] prime256v1, [1] BIT STRING point }. */
const SEC1_BEFORE_SCALAR = Buffer.from('30770201010420', 'hex');
const SEC1_BEFORE_POINT = Buffer.from('a00a06082a8648ce3d030107a144034200', 'hex');
const SEC1_BYTES = SEC1_BEFORE_SCALAR.length + COORDINATE_BYTES + SEC1_BEFORE_POINT.length + POINT_BYTES;

export interface P256KeyPair {
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  /** The public key as SubjectPublicKeyInfo DER. */
  readonly spki: Buffer;
  /** The private key as SEC1 `EC PRIVATE KEY` DER, with its curve and public key. */
  readonly sec1: Buffer;
}

export function generateP256KeyPair(): P256KeyPair {
  const ecdh = createECDH('prime256v1');
  const point = ecdh.generateKeys();
  const scalar = ecdh.getPrivateKey();
  // The scalar comes back without leading zero bytes; both encodings want all 32.
  const d =
    scalar.length === COORDINATE_BYTES
      ? scalar
      : Buffer.concat([Buffer.alloc(COORDINATE_BYTES - scalar.length), scalar]);
  const privateKey = createPrivateKey({
    key: { kty: 'EC', crv: 'P-256', d: d.toString('base64url'), ...coordinates(point) },
    format: 'jwk',
  });
  return {
    privateKey,
    publicKey: createPublicKey(privateKey),
    spki: Buffer.concat([SPKI_PREFIX, point], SPKI_BYTES),
    sec1: Buffer.concat([SEC1_BEFORE_SCALAR, d, SEC1_BEFORE_POINT, point], SEC1_BYTES),
  };
}

/** The public key of a P-256 SPKI in uncompressed form; undefined for any other key or encoding. */
export function p256PublicKey(spki: Buffer): KeyObject | undefined {
  if (
    spki.length !== SPKI_BYTES ||
    spki[SPKI_PREFIX.length] !== UNCOMPRESSED ||
    !spki.subarray(0, SPKI_PREFIX.length).equals(SPKI_PREFIX)
  )
    return undefined;
  // An off-curve point is rejected here, as the DER decoder would.
  return createPublicKey({
    key: { kty: 'EC', crv: 'P-256', ...coordinates(spki.subarray(SPKI_PREFIX.length)) },
    format: 'jwk',
  });
}

function coordinates(point: Buffer): { x: string; y: string } {
  return {
    x: point.subarray(1, 1 + COORDINATE_BYTES).toString('base64url'),
    y: point.subarray(1 + COORDINATE_BYTES).toString('base64url'),
  };
}
