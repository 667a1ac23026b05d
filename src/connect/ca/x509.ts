// Certificates of the built-in CA, built from DER pieces with Node's crypto for keys and
// signatures: self-signed roots, cross-signed roots and service leaves.
// Pure and synchronous apart from CA key generation, so it runs the same in a worker and in a test.
// Everything fixed for a given CA (its name, key ID, signature algorithm, key object) is computed
// once in `createIssuer`; a leaf then costs one key pair, one signature and a few concatenations.
// Guarded by bench/micro/leaf-issue.ts.
import { createHash, createPrivateKey, createPublicKey, generateKeyPair, sign, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { AgentError, agentError } from '../../core/errors.js';
import * as der from './der.js';
import { toPem } from './encoding.js';
import { generateP256KeyPair, type P256KeyPair } from './p256.js';
import { parseServiceUri, type ServiceId } from './spiffe-id.js';

const generateKeyPairAsync = promisify(generateKeyPair);

export type KeyType = 'ec' | 'rsa';

export interface KeySpec {
  readonly type: KeyType;
  readonly bits: number;
}

const OID = {
  commonName: '2.5.4.3',
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  authorityKeyIdentifier: '2.5.29.35',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
  ecdsaSha256: '1.2.840.10045.4.3.2',
  ecdsaSha384: '1.2.840.10045.4.3.3',
  ecdsaSha512: '1.2.840.10045.4.3.4',
  sha256WithRsa: '1.2.840.113549.1.1.11',
  sha384WithRsa: '1.2.840.113549.1.1.12',
  sha512WithRsa: '1.2.840.113549.1.1.13',
} as const;

type Hash = 'sha256' | 'sha384' | 'sha512';

const CURVE_OF_BITS: Readonly<Record<number, string>> = {
  224: 'secp224r1',
  256: 'prime256v1',
  384: 'secp384r1',
  521: 'secp521r1',
};
const BITS_OF_CURVE: Readonly<Record<string, number>> = {
  secp224r1: 224,
  prime256v1: 256,
  secp384r1: 384,
  secp521r1: 521,
};

// Extension values that never vary. Key usage bits (RFC 5280 §4.2.1.3) as Go writes them:
// leaf = digitalSignature | keyEncipherment | dataEncipherment | keyAgreement (0xb8, 3 unused
// bits); CA = digitalSignature | keyCertSign | cRLSign (0x86, 1 unused bit).
const VERSION_3 = der.explicit(0, der.integer(2n));
const EMPTY_NAME = der.sequence();
const extension = (id: string, critical: boolean, value: Uint8Array): Buffer =>
  critical
    ? der.sequence(der.oid(id), der.TRUE, der.octetString(value))
    : der.sequence(der.oid(id), der.octetString(value));
const LEAF_KEY_USAGE = extension(OID.keyUsage, true, Buffer.from([der.TAG.BIT_STRING, 0x02, 0x03, 0xb8]));
const CA_KEY_USAGE = extension(OID.keyUsage, true, Buffer.from([der.TAG.BIT_STRING, 0x02, 0x01, 0x86]));
const LEAF_EXT_KEY_USAGE = extension(
  OID.extKeyUsage,
  false,
  der.sequence(der.oid(OID.clientAuth), der.oid(OID.serverAuth)),
);
const LEAF_BASIC_CONSTRAINTS = extension(OID.basicConstraints, true, der.sequence());
const CA_BASIC_CONSTRAINTS = extension(OID.basicConstraints, true, der.sequence(der.TRUE));
const ECDSA_SHA256 = der.sequence(der.oid(OID.ecdsaSha256));

const uriSan = (uri: string, critical: boolean): Buffer =>
  extension(OID.subjectAltName, critical, der.sequence(der.implicitPrimitive(6, Buffer.from(uri, 'ascii'))));
const subjectKeyId = (keyId: Uint8Array): Buffer => extension(OID.subjectKeyIdentifier, false, der.octetString(keyId));
const authorityKeyId = (keyId: Uint8Array): Buffer =>
  extension(OID.authorityKeyIdentifier, false, der.sequence(der.implicitPrimitive(0, keyId)));

/** The built-in provider's key ID: SHA-256 over the PKIX (SPKI) DER of the public key. */
export function keyIdOf(spki: Uint8Array): Buffer {
  return createHash('sha256').update(spki).digest();
}

/** A CA key of the configured type and size, generated off the event loop (libuv pool). */
export async function generateCaKey(spec: KeySpec): Promise<KeyObject> {
  if (spec.type === 'rsa') return (await generateKeyPairAsync('rsa', { modulusLength: spec.bits })).privateKey;
  const namedCurve = CURVE_OF_BITS[spec.bits];
  if (namedCurve === undefined) throw agentError('CA_BAD_KEY', { detail: `unsupported EC key length ${spec.bits}` });
  return (await generateKeyPairAsync('ec', { namedCurve })).privateKey;
}

/** Type and size of a key (the root's PrivateKeyType/PrivateKeyBits are read from its key). */
export function keySpecOf(key: KeyObject): KeySpec {
  const details = key.asymmetricKeyDetails ?? {};
  if (key.asymmetricKeyType === 'rsa') return { type: 'rsa', bits: details.modulusLength ?? 0 };
  if (key.asymmetricKeyType === 'ec') return { type: 'ec', bits: BITS_OF_CURVE[details.namedCurve ?? ''] ?? 0 };
  throw agentError('CA_BAD_KEY', { detail: `unsupported CA key type ${key.asymmetricKeyType ?? 'unknown'}` });
}

export function parsePrivateKey(pem: string): KeyObject {
  try {
    const key = createPrivateKey(pem);
    keySpecOf(key);
    return key;
  } catch (err) {
    if (err instanceof AgentError) throw err;
    throw agentError('CA_BAD_KEY', { detail: `error parsing private key: ${(err as Error).message}` });
  }
}

/** The signature algorithm Go picks for a key: ECDSA with the curve's hash, RSA with SHA-256. */
function signatureOf(key: KeyObject): { readonly algorithm: Buffer; readonly hash: Hash } {
  const spec = keySpecOf(key);
  if (spec.type === 'rsa') return { algorithm: der.sequence(der.oid(OID.sha256WithRsa), der.NULL), hash: 'sha256' };
  if (spec.bits === 384) return { algorithm: der.sequence(der.oid(OID.ecdsaSha384)), hash: 'sha384' };
  if (spec.bits === 521) return { algorithm: der.sequence(der.oid(OID.ecdsaSha512)), hash: 'sha512' };
  return { algorithm: ECDSA_SHA256, hash: 'sha256' };
}

function signed(tbs: Buffer, algorithm: Buffer, hash: Hash, key: KeyObject): Buffer {
  return der.sequence(tbs, algorithm, der.bitString(sign(hash, tbs, key)));
}

export interface ParsedCertificate {
  readonly der: Buffer;
  readonly serial: bigint;
  readonly signatureAlgorithm: string;
  /** The issuer and subject Names exactly as encoded. */
  readonly issuer: Buffer;
  readonly subject: Buffer;
  readonly notBefore: number;
  readonly notAfter: number;
  readonly spki: Buffer;
  /** Each extension's full DER (id, critical, value), in order, with its OID. */
  readonly extensions: readonly {
    readonly id: string;
    readonly raw: Buffer;
    readonly critical: boolean;
    readonly value: Buffer;
  }[];
  readonly subjectKeyId: Buffer | undefined;
  readonly authorityKeyId: Buffer | undefined;
  readonly uris: readonly string[];
  readonly isCa: boolean;
}

function badCert(message: string): AgentError {
  return agentError('CA_BAD_CERT', { detail: message });
}

/** Reads the fields the CA uses from a certificate's DER; throws CA_BAD_CERT when malformed. */
export function parseCertificate(certDer: Buffer): ParsedCertificate {
  try {
    const [tbsNode, algNode] = der.children(der.readWhole(certDer));
    if (tbsNode === undefined || algNode === undefined) throw badCert('not a certificate');
    const fields = der.children(tbsNode);
    let i = fields[0]?.tag === 0xa0 ? 1 : 0;
    const at = (n: number): der.Node => {
      const node = fields[n];
      if (node === undefined) throw badCert('truncated certificate');
      return node;
    };
    const serial = der.readInteger(at(i++));
    i++; // the inner signature algorithm repeats the outer one
    const issuer = at(i++).raw;
    const [nb, na] = der.children(at(i++));
    if (nb === undefined || na === undefined) throw badCert('bad validity');
    const subject = at(i++).raw;
    const spki = at(i++).raw;
    const extensions: { id: string; raw: Buffer; critical: boolean; value: Buffer }[] = [];
    for (; i < fields.length; i++) {
      const node = at(i);
      if (node.tag !== 0xa3) continue;
      const list = der.children(node)[0];
      if (list === undefined) break;
      for (const ext of der.children(list)) {
        const parts = der.children(ext);
        const id = der.readOid(parts[0] as der.Node);
        const critical = parts.length === 3 && parts[1]?.tag === der.TAG.BOOLEAN && parts[1].content[0] !== 0;
        const value = (parts[parts.length - 1] as der.Node).content;
        extensions.push({ id, raw: ext.raw, critical, value });
      }
    }
    const find = (id: string): Buffer | undefined => extensions.find((e) => e.id === id)?.value;
    const ski = find(OID.subjectKeyIdentifier);
    const aki = find(OID.authorityKeyIdentifier);
    const san = find(OID.subjectAltName);
    const bc = find(OID.basicConstraints);
    const akiId = aki === undefined ? undefined : der.children(der.readWhole(aki)).find((n) => n.tag === 0x80)?.content;
    const bcFields = bc === undefined ? [] : der.children(der.readWhole(bc));
    return {
      der: certDer,
      serial,
      signatureAlgorithm: der.readOid(der.children(algNode)[0] as der.Node),
      issuer,
      subject,
      notBefore: der.readTime(nb),
      notAfter: der.readTime(na),
      spki,
      extensions,
      subjectKeyId: ski === undefined ? undefined : der.readWhole(ski).content,
      authorityKeyId: akiId,
      uris: san === undefined ? [] : generalNames(san, 6),
      isCa: bcFields[0]?.tag === der.TAG.BOOLEAN && bcFields[0].content[0] !== 0,
    };
  } catch (err) {
    if (err instanceof AgentError) throw err;
    throw badCert((err as Error).message);
  }
}

/** The GeneralNames of a SAN value with the given context tag (6 = URI, 1 = email, 2 = DNS). */
function generalNames(san: Buffer, tag: number): string[] {
  return der
    .children(der.readWhole(san))
    .filter((n) => n.tag === (0x80 | tag))
    .map((n) => n.content.toString('ascii'));
}

/** The key ID leaves name as their authority: the signer's SKI, else SHA-256 of its key. */
export function signingKeyIdOf(cert: ParsedCertificate): Buffer {
  return cert.subjectKeyId ?? keyIdOf(cert.spki);
}

export interface RootTemplate {
  readonly key: KeyObject;
  readonly serial: bigint;
  readonly commonName: string;
  /** The signing SPIFFE ID, `spiffe://<trust domain>`. */
  readonly uri: string;
  readonly notBefore: number;
  readonly notAfter: number;
}

/** A self-signed root: CA, cert+CRL signing, SKI = AKI = SHA-256 of its key, as Consul's provider makes it. */
export function createRootCertificate(t: RootTemplate): Buffer {
  const spki = createPublicKey(t.key).export({ type: 'spki', format: 'der' });
  const keyId = keyIdOf(spki);
  const name = der.sequence(der.set(der.sequence(der.oid(OID.commonName), der.directoryString(t.commonName))));
  const { algorithm, hash } = signatureOf(t.key);
  const extensions = der.explicit(
    3,
    der.sequence(CA_KEY_USAGE, CA_BASIC_CONSTRAINTS, subjectKeyId(keyId), authorityKeyId(keyId), uriSan(t.uri, false)),
  );
  const tbs = der.sequence(
    VERSION_3,
    der.integer(t.serial),
    algorithm,
    name,
    der.sequence(der.time(t.notBefore), der.time(t.notAfter)),
    name,
    spki,
    extensions,
  );
  return signed(tbs, algorithm, hash, t.key);
}

/** Everything about a CA that every certificate it signs repeats, computed once per root. */
export interface Issuer {
  readonly key: KeyObject;
  readonly cert: ParsedCertificate;
  readonly keyId: Buffer;
  readonly algorithm: Buffer;
  readonly hash: Hash;
  readonly authorityKeyIdExtension: Buffer;
}

/** Prepares a CA for signing; throws CA_KEY_MISMATCH when the key is not the certificate's. */
export function createIssuer(key: KeyObject, certDer: Buffer): Issuer {
  const cert = parseCertificate(certDer);
  const spki = createPublicKey(key).export({ type: 'spki', format: 'der' });
  if (!spki.equals(cert.spki)) throw agentError('CA_KEY_MISMATCH');
  const keyId = signingKeyIdOf(cert);
  const { algorithm, hash } = signatureOf(key);
  return { key, cert, keyId, algorithm, hash, authorityKeyIdExtension: authorityKeyId(keyId) };
}

/**
 * The new root signed by the old CA (a rotation's cross-signing): the new root's name, key and extensions (its
 * AKI replaced by the old key's), a fresh serial, valid from a minute ago for `lifetimeMs`.
 */
export function crossSign(
  old: Issuer,
  newRoot: ParsedCertificate,
  serial: bigint,
  nowMs: number,
  lifetimeMs: number,
): Buffer {
  const notBefore = Math.floor(nowMs / 1000) * 1000 - 60_000;
  const kept = newRoot.extensions.filter((e) => e.id !== OID.authorityKeyIdentifier).map((e) => e.raw);
  const tbs = der.sequence(
    VERSION_3,
    der.integer(serial),
    old.algorithm,
    old.cert.subject,
    der.sequence(der.time(notBefore), der.time(notBefore + lifetimeMs)),
    newRoot.subject,
    newRoot.spki,
    der.explicit(3, der.sequence(...kept, old.authorityKeyIdExtension)),
  );
  return signed(tbs, old.algorithm, old.hash, old.key);
}

export type LeafKey = P256KeyPair;

/** The leaf key pair: ECDSA P-256 whatever the CA's type, as Consul's agent generates it. */
export function generateLeafKey(): LeafKey {
  return generateP256KeyPair();
}

/** The leaf key as a SEC1 `EC PRIVATE KEY` PEM (docs/decisions.md D14). */
export function leafKeyPem(key: LeafKey): string {
  return toPem(key.sec1, 'EC PRIVATE KEY');
}

/** A SPIFFE ID the CA will not sign, with the code and texts Consul's CA uses for it. */
function refusedId(message: string): AgentError {
  return agentError('CA_BAD_CSR', { detail: message });
}

export interface SignedLeaf {
  readonly der: Buffer;
  readonly id: ServiceId;
  readonly notBefore: number;
  readonly notAfter: number;
}

export interface LeafTemplate {
  /** The leaf's public key as SPKI DER (a key the CA generated itself). */
  readonly spki: Buffer;
  /** The service's SPIFFE ID, its one URI SAN. */
  readonly uri: string;
  readonly serial: bigint;
  readonly nowMs: number;
  readonly ttlMs: number;
  readonly trustDomain: string;
  readonly datacenter: string;
}

/**
 * Signs a service leaf for a key the CA generated itself: no CSR is built or parsed, since
 * none comes from outside. The SPIFFE ID must be a service of this trust domain and datacenter
 * (Consul's checks and texts when it signs). Empty subject, critical URI SAN, backdated one minute.
 */
export function signLeaf(issuer: Issuer, t: LeafTemplate): SignedLeaf {
  const id = parseServiceUri(t.uri);
  if (id === undefined) throw refusedId(`SPIFFE ID in CSR must be a service ID: ${t.uri}`);
  if (id.trustDomain !== t.trustDomain.toLowerCase()) {
    throw refusedId(`SPIFFE ID in CSR from a different trust domain: ${id.trustDomain}, we are ${t.trustDomain}`);
  }
  if (id.datacenter !== t.datacenter) {
    throw refusedId(`SPIFFE ID in CSR from a different datacenter: ${id.datacenter}, we are ${t.datacenter}`);
  }
  if (issuer.cert.notAfter <= t.nowMs) {
    throw agentError('CA_ROOT_EXPIRED', { notAfter: new Date(issuer.cert.notAfter).toISOString() });
  }
  const notBefore = Math.floor(t.nowMs / 1000) * 1000 - 60_000;
  const notAfter = notBefore + Math.floor(t.ttlMs / 1000) * 1000;
  const tbs = der.sequence(
    VERSION_3,
    der.integer(t.serial),
    issuer.algorithm,
    issuer.cert.subject,
    der.sequence(der.time(notBefore), der.time(notAfter)),
    EMPTY_NAME,
    t.spki,
    der.explicit(
      3,
      der.sequence(
        LEAF_KEY_USAGE,
        LEAF_EXT_KEY_USAGE,
        LEAF_BASIC_CONSTRAINTS,
        subjectKeyId(keyIdOf(t.spki)),
        issuer.authorityKeyIdExtension,
        uriSan(t.uri, true),
      ),
    ),
  );
  return { der: signed(tbs, issuer.algorithm, issuer.hash, issuer.key), id, notBefore, notAfter };
}
