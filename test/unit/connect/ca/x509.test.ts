// Certificate contents of the built-in CA, parsed back by two independent parsers: Node's
// crypto.X509Certificate (OpenSSL) and @peculiar/x509 (ASN.1 schema in JavaScript).
import 'reflect-metadata';
import * as px from '@peculiar/x509';
import { X509Certificate, createPublicKey, webcrypto } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { certificateId, colonHex, serialColonHex, toPem } from '../../../../src/connect/ca/encoding.js';
import {
  createIssuer,
  createRootCertificate,
  crossSign,
  generateCaKey,
  generateLeafKey,
  keyIdOf,
  keySpecOf,
  parseCertificate,
  signLeaf,
  type Issuer,
  type KeySpec,
} from '../../../../src/connect/ca/x509.js';

px.cryptoProvider.set(webcrypto as unknown as Parameters<typeof px.cryptoProvider.set>[0]);

const NOW = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
const TD = '11111111-2222-3333-4444-555555555555.consul';
const HOUR = 3_600_000;

async function makeRoot(
  spec: KeySpec = { type: 'ec', bits: 256 },
  serial = 1n,
  cn = 'pri-abcdefgh.consul.ca.11111111.consul',
): Promise<Issuer> {
  const key = await generateCaKey(spec);
  const cert = createRootCertificate({
    key,
    serial,
    commonName: cn,
    uri: `spiffe://${TD}`,
    notBefore: NOW,
    notAfter: NOW + 87600 * HOUR,
  });
  return createIssuer(key, cert);
}

function issue(issuer: Issuer, uri = `spiffe://${TD}/ns/default/dc/dc1/svc/web`, serial = 7n) {
  const key = generateLeafKey();
  const signedLeaf = signLeaf(issuer, {
    spki: key.spki,
    uri,
    serial,
    nowMs: NOW,
    ttlMs: 72 * HOUR,
    trustDomain: TD,
    datacenter: 'dc1',
  });
  return { key, ...signedLeaf };
}

describe('root certificate', () => {
  it('is a self-signed CA with the SPIFFE signing URI and SHA-256 key IDs', async () => {
    const root = await makeRoot();
    const node = new X509Certificate(root.cert.der);
    expect(node.ca).toBe(true);
    expect(node.subject).toBe('CN=pri-abcdefgh.consul.ca.11111111.consul');
    expect(node.issuer).toBe(node.subject);
    expect(node.subjectAltName).toBe(`URI:spiffe://${TD}`);
    expect(node.verify(node.publicKey)).toBe(true);
    expect(node.serialNumber).toBe('01');
    expect(new Date(node.validFrom).getTime()).toBe(Math.floor(NOW / 1000) * 1000); // not backdated

    const p = new px.X509Certificate(root.cert.der);
    const ku = p.getExtension(px.KeyUsagesExtension);
    expect(ku?.critical).toBe(true);
    expect(ku?.usages).toBe(
      px.KeyUsageFlags.keyCertSign | px.KeyUsageFlags.cRLSign | px.KeyUsageFlags.digitalSignature,
    );
    expect(p.getExtension(px.BasicConstraintsExtension)?.ca).toBe(true);
    const spki = createPublicKey(root.key).export({ type: 'spki', format: 'der' });
    expect(p.getExtension(px.SubjectKeyIdentifierExtension)?.keyId).toBe(keyIdOf(spki).toString('hex'));
    expect(p.getExtension(px.AuthorityKeyIdentifierExtension)?.keyId).toBe(keyIdOf(spki).toString('hex'));
    expect(await p.verify({ signatureOnly: true })).toBe(true);
  });

  it('supports every configured key type and size', async () => {
    for (const spec of [
      { type: 'ec', bits: 224 },
      { type: 'ec', bits: 384 },
      { type: 'ec', bits: 521 },
      { type: 'rsa', bits: 2048 },
    ] as const) {
      const root = await makeRoot(spec);
      expect(keySpecOf(root.key)).toEqual(spec);
      const node = new X509Certificate(root.cert.der);
      expect(node.verify(node.publicKey)).toBe(true);
      const leaf = issue(root);
      expect(new X509Certificate(leaf.der).verify(node.publicKey)).toBe(true);
    }
  });

  it('reads back as parsed fields', async () => {
    const root = await makeRoot(undefined, 300n);
    const parsed = parseCertificate(root.cert.der);
    expect(parsed.serial).toBe(300n);
    expect(parsed.isCa).toBe(true);
    expect(parsed.uris).toEqual([`spiffe://${TD}`]);
    expect(parsed.notAfter - parsed.notBefore).toBe(87600 * HOUR);
    expect(certificateId(root.cert.der)).toBe(new X509Certificate(root.cert.der).fingerprint.toLowerCase());
  });
});

describe('leaf certificate', () => {
  it('has the contents Consul gives a service leaf, for the key generated with it', async () => {
    const root = await makeRoot();
    const leaf = issue(root);
    const node = new X509Certificate(leaf.der);
    expect(node.subject).toBeUndefined(); // OpenSSL's view of an empty Name
    expect(node.ca).toBe(false);
    expect(node.subjectAltName).toBe(`URI:spiffe://${TD}/ns/default/dc/dc1/svc/web`);
    expect(node.issuer).toBe('CN=pri-abcdefgh.consul.ca.11111111.consul');
    expect(node.checkIssued(new X509Certificate(root.cert.der))).toBe(true);
    expect(node.verify(createPublicKey(root.key))).toBe(true);
    expect(node.checkPrivateKey(leaf.key.privateKey)).toBe(true);
    expect(node.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
    expect(node.serialNumber).toBe('07');
    const validFrom = new Date(node.validFrom).getTime();
    expect(validFrom).toBe(Math.floor(NOW / 1000) * 1000 - 60_000);
    expect(new Date(node.validTo).getTime() - validFrom).toBe(72 * HOUR);

    const p = new px.X509Certificate(leaf.der);
    expect(p.subject).toBe('');
    const san = p.getExtension(px.SubjectAlternativeNameExtension);
    expect(san?.critical).toBe(true);
    expect(san?.names.items.map((n) => [n.type, n.value])).toEqual([
      ['url', `spiffe://${TD}/ns/default/dc/dc1/svc/web`],
    ]);
    const ku = p.getExtension(px.KeyUsagesExtension);
    expect(ku?.critical).toBe(true);
    expect(ku?.usages).toBe(
      px.KeyUsageFlags.digitalSignature |
        px.KeyUsageFlags.keyEncipherment |
        px.KeyUsageFlags.dataEncipherment |
        px.KeyUsageFlags.keyAgreement,
    );
    expect(p.getExtension(px.ExtendedKeyUsageExtension)?.usages).toEqual([
      px.ExtendedKeyUsage.clientAuth,
      px.ExtendedKeyUsage.serverAuth,
    ]);
    const bc = p.getExtension(px.BasicConstraintsExtension);
    expect(bc?.critical).toBe(true);
    expect(bc?.ca).toBe(false);
    expect(p.getExtension(px.SubjectKeyIdentifierExtension)?.keyId).toBe(keyIdOf(leaf.key.spki).toString('hex'));
    expect(p.getExtension(px.AuthorityKeyIdentifierExtension)?.keyId).toBe(root.keyId.toString('hex'));
    expect(p.signatureAlgorithm).toMatchObject({ name: 'ECDSA' });
    expect(await p.verify({ publicKey: new px.X509Certificate(root.cert.der).publicKey, signatureOnly: true })).toBe(
      true,
    );
    // The key is the one generated with it, and the extensions come in Consul's order.
    const parsed = parseCertificate(leaf.der);
    expect(parsed.spki.equals(leaf.key.spki)).toBe(true);
    expect(parsed.extensions.map((e) => [e.id, e.critical])).toEqual([
      ['2.5.29.15', true],
      ['2.5.29.37', false],
      ['2.5.29.19', true],
      ['2.5.29.14', false],
      ['2.5.29.35', false],
      ['2.5.29.17', true],
    ]);
  });

  it('is signed with SHA256-RSA under an RSA CA', async () => {
    const root = await makeRoot({ type: 'rsa', bits: 2048 });
    const p = new px.X509Certificate(issue(root).der);
    expect(p.signatureAlgorithm).toMatchObject({ name: 'RSASSA-PKCS1-v1_5', hash: { name: 'SHA-256' } });
  });

  it('encodes large serials and times past 2049', async () => {
    const caKey = await generateCaKey({ type: 'ec', bits: 256 });
    const rootDer = createRootCertificate({
      key: caKey,
      serial: 1n,
      commonName: 'x',
      uri: `spiffe://${TD}`,
      notBefore: NOW,
      notAfter: Date.UTC(2060, 0, 1),
    });
    const root = createIssuer(caKey, rootDer);
    expect(parseCertificate(rootDer).notAfter).toBe(Date.UTC(2060, 0, 1)); // GeneralizedTime
    const key = generateLeafKey();
    const uri = `spiffe://${TD}/ns/default/dc/dc1/svc/web`;
    const later = Date.UTC(2049, 11, 31, 12);
    const out = signLeaf(root, {
      spki: key.spki,
      uri,
      serial: 2n ** 63n + 5n,
      nowMs: later,
      ttlMs: 72 * HOUR,
      trustDomain: TD,
      datacenter: 'dc1',
    });
    const node = new X509Certificate(out.der);
    expect(node.serialNumber.toLowerCase()).toBe('8000000000000005');
    expect(new Date(node.validTo).getTime()).toBe(out.notAfter);
    expect(serialColonHex(2n ** 63n + 5n)).toBe('80:00:00:00:00:00:00:05');
    expect(serialColonHex(300n)).toBe('01:2c');
  });
});

describe('leaf signing policy', () => {
  it('signs only a service ID of its own trust domain and datacenter', async () => {
    const root = await makeRoot();
    const key = generateLeafKey();
    const sign = (uri: string) => () =>
      signLeaf(root, { spki: key.spki, uri, serial: 1n, nowMs: NOW, ttlMs: HOUR, trustDomain: TD, datacenter: 'dc1' });
    expect(sign(`spiffe://other.consul/ns/default/dc/dc1/svc/web`)).toThrow(
      `SPIFFE ID in CSR from a different trust domain: other.consul, we are ${TD}`,
    );
    expect(sign(`spiffe://${TD}/ns/default/dc/dc2/svc/web`)).toThrow(
      'SPIFFE ID in CSR from a different datacenter: dc2, we are dc1',
    );
    expect(sign(`spiffe://${TD}/agent/client/dc/dc1/id/x`)).toThrow(expect.objectContaining({ code: 'CA_BAD_CSR' }));
    expect(sign(`spiffe://${TD}/ns/default/dc/dc1/svc/web`)()).toMatchObject({
      id: { service: 'web', datacenter: 'dc1' },
    });
  });

  it('refuses to sign under an expired root', async () => {
    const key = await generateCaKey({ type: 'ec', bits: 256 });
    const der = createRootCertificate({
      key,
      serial: 1n,
      commonName: 'x',
      uri: `spiffe://${TD}`,
      notBefore: NOW - 2 * HOUR,
      notAfter: NOW - HOUR,
    });
    expect(() => issue(createIssuer(key, der))).toThrow(expect.objectContaining({ code: 'CA_ROOT_EXPIRED' }));
  });
});

describe('cross-signing', () => {
  it('chains the new root to the old one', async () => {
    const oldRoot = await makeRoot(undefined, 1n, 'pri-old.consul.ca.11111111.consul');
    const newRoot = await makeRoot({ type: 'ec', bits: 384 }, 2n, 'pri-new.consul.ca.11111111.consul');
    const cross = crossSign(oldRoot, newRoot.cert, 3n, NOW, 7 * 24 * HOUR);
    const node = new X509Certificate(cross);
    expect(node.subject).toBe('CN=pri-new.consul.ca.11111111.consul');
    expect(node.issuer).toBe('CN=pri-old.consul.ca.11111111.consul');
    expect(node.ca).toBe(true);
    expect(node.verify(createPublicKey(oldRoot.key))).toBe(true);
    expect(node.publicKey.export({ type: 'spki', format: 'der' }).equals(newRoot.cert.spki)).toBe(true);
    const parsed = parseCertificate(cross);
    expect(parsed.serial).toBe(3n);
    expect(parsed.subjectKeyId?.equals(newRoot.keyId)).toBe(true);
    expect(parsed.authorityKeyId?.equals(oldRoot.keyId)).toBe(true);
    expect(parsed.notBefore).toBe(Math.floor(NOW / 1000) * 1000 - 60_000);
    expect(parsed.notAfter - parsed.notBefore).toBe(7 * 24 * HOUR);
    expect(colonHex(newRoot.keyId)).toMatch(/^([0-9a-f]{2}:){31}[0-9a-f]{2}$/);
    // A leaf of the new root reaches the old root through the cross-signed certificate.
    const leaf = new X509Certificate(issue(newRoot).der);
    expect(leaf.checkIssued(node)).toBe(true);
    expect(leaf.verify(node.publicKey)).toBe(true);
    expect(toPem(cross, 'CERTIFICATE')).toMatch(/^-----BEGIN CERTIFICATE-----\n/);
  });
});
