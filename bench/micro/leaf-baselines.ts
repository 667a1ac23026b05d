// The same cold leaf as src/connect/ca/leaf-work.ts (new P-256 key, CSR, CSR check, the CA's
// signature over an empty-subject certificate, docs/decisions.md#leaf-certificate), built by the
// two X.509 libraries the project chose between. They are the baselines the DER template is
// measured against (bench/micro/leaf-issue.ts), so the reason for not using them stays measured.
import 'reflect-metadata';
import * as px from '@peculiar/x509';
import * as asn1js from 'asn1js';
import {
  createHash,
  createPrivateKey,
  generateKeyPairSync,
  sign,
  verify,
  webcrypto,
  X509Certificate,
} from 'node:crypto';
import * as pkijs from 'pkijs';

const OID = {
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  basicConstraints: '2.5.29.19',
  subjectKeyId: '2.5.29.14',
  authorityKeyId: '2.5.29.35',
  subjectAltName: '2.5.29.17',
  extensionRequest: '1.2.840.113549.1.9.14',
  ecdsaSha256: '1.2.840.10045.4.3.2',
  clientAuth: '1.3.6.1.5.5.7.3.2',
  serverAuth: '1.3.6.1.5.5.7.3.1',
} as const;

export type IssueLeaf = (uri: string, serial: number) => Promise<Buffer> | Buffer;

const arrayBuffer = (b: Buffer): ArrayBuffer =>
  b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;

/**
 * pkijs, with everything fixed for a root computed once (issuer name, authority key ID, the
 * constant extensions), keys and signatures by node:crypto as in the agent; only the ASN.1
 * building and parsing is the library's.
 */
export function pkijsIssuer(caDer: Buffer, caKeyPem: string): IssueLeaf {
  const caKey = createPrivateKey(caKeyPem);
  const root = pkijs.Certificate.fromBER(arrayBuffer(caDer));
  const rootSpki = new X509Certificate(caDer).publicKey.export({ type: 'spki', format: 'der' });
  const ext = (extnID: string, critical: boolean, value: asn1js.BaseBlock): pkijs.Extension =>
    new pkijs.Extension({ extnID, critical, extnValue: value.toBER() });
  const sanExtension = (uri: string): pkijs.Extension =>
    ext(
      OID.subjectAltName,
      true,
      new pkijs.GeneralNames({ names: [new pkijs.GeneralName({ type: 6, value: uri })] }).toSchema(),
    );
  const algorithm = (): pkijs.AlgorithmIdentifier => new pkijs.AlgorithmIdentifier({ algorithmId: OID.ecdsaSha256 });
  const fixed = [
    ext(OID.keyUsage, true, new asn1js.BitString({ valueHex: new Uint8Array([0xb8]).buffer, unusedBits: 3 })),
    ext(OID.extKeyUsage, false, new pkijs.ExtKeyUsage({ keyPurposes: [OID.clientAuth, OID.serverAuth] }).toSchema()),
    ext(OID.basicConstraints, true, new pkijs.BasicConstraints({}).toSchema()),
  ];
  const authorityKeyId = ext(
    OID.authorityKeyId,
    false,
    new pkijs.AuthorityKeyIdentifier({
      keyIdentifier: new asn1js.OctetString({ valueHex: arrayBuffer(createHash('sha256').update(rootSpki).digest()) }),
    }).toSchema(),
  );

  return (uri, serial) => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const csr = new pkijs.CertificationRequest();
    csr.subjectPublicKeyInfo = pkijs.PublicKeyInfo.fromBER(
      arrayBuffer(publicKey.export({ type: 'spki', format: 'der' })),
    );
    csr.attributes = [
      new pkijs.Attribute({
        type: OID.extensionRequest,
        values: [new pkijs.Extensions({ extensions: [sanExtension(uri)] }).toSchema()],
      }),
    ];
    csr.signatureAlgorithm = algorithm();
    // encodeTBS is protected on CertificationRequest (its sign() is WebCrypto-only); same call as on Certificate.
    const info = Buffer.from((csr as unknown as { encodeTBS(): asn1js.Sequence }).encodeTBS().toBER());
    csr.signatureValue = new asn1js.BitString({ valueHex: arrayBuffer(sign('sha256', info, privateKey)) });
    csr.tbsView = new Uint8Array(info);
    const csrDer = csr.toSchema(false).toBER();

    const request = pkijs.CertificationRequest.fromBER(csrDer);
    const spki = Buffer.from(request.subjectPublicKeyInfo.toSchema().toBER());
    const signature = Buffer.from(request.signatureValue.valueBlock.valueHexView);
    if (!verify('sha256', Buffer.from(request.tbsView), { key: spki, format: 'der', type: 'spki' }, signature))
      throw new Error('CSR signature is invalid');
    const requested = request.attributes?.find((a) => a.type === OID.extensionRequest)?.values[0];
    const san = new pkijs.Extensions({ schema: requested }).extensions.find((e) => e.extnID === OID.subjectAltName);
    const requestedUri = (san?.parsedValue as pkijs.AltName | undefined)?.altNames[0]?.value as string;

    const notBefore = Math.floor(Date.now() / 1000) * 1000 - 60_000;
    const cert = new pkijs.Certificate();
    cert.version = 2;
    cert.serialNumber = new asn1js.Integer({ value: serial });
    cert.signature = algorithm();
    cert.issuer = root.subject;
    cert.notBefore = new pkijs.Time({ type: 0, value: new Date(notBefore) });
    cert.notAfter = new pkijs.Time({ type: 0, value: new Date(notBefore + 72 * 3_600_000) });
    cert.subjectPublicKeyInfo = request.subjectPublicKeyInfo;
    const subjectKeyId = ext(
      OID.subjectKeyId,
      false,
      new asn1js.OctetString({ valueHex: arrayBuffer(createHash('sha256').update(spki).digest()) }),
    );
    cert.extensions = [...fixed, subjectKeyId, authorityKeyId, sanExtension(requestedUri)];
    const tbs = Buffer.from(cert.encodeTBS().toBER());
    cert.signatureAlgorithm = algorithm();
    cert.signatureValue = new asn1js.BitString({ valueHex: arrayBuffer(sign('sha256', tbs, caKey)) });
    cert.tbsView = new Uint8Array(tbs);
    privateKey.export({ type: 'sec1', format: 'pem' }); // the agent returns the key as PEM too
    return Buffer.from(cert.toSchema(false).toBER());
  };
}

/** @peculiar/x509 on WebCrypto, its own way (keys, CSR-less generator, extensions by class). */
export async function peculiarIssuer(caDer: Buffer, caKeyPem: string): Promise<IssueLeaf> {
  px.cryptoProvider.set(webcrypto as unknown as Parameters<typeof px.cryptoProvider.set>[0]);
  const subtle = webcrypto.subtle;
  const pkcs8 = Buffer.from(caKeyPem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const caKey = await subtle.importKey('pkcs8', pkcs8, alg, false, ['sign']);
  const caCert = new px.X509Certificate(caDer);
  const usages =
    px.KeyUsageFlags.digitalSignature |
    px.KeyUsageFlags.keyEncipherment |
    px.KeyUsageFlags.dataEncipherment |
    px.KeyUsageFlags.keyAgreement;
  return async (uri, serial) => {
    const keys = (await subtle.generateKey(alg, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
    const now = Date.now();
    const cert = await px.X509CertificateGenerator.create({
      serialNumber: serial.toString(16).padStart(2, '0'),
      issuer: caCert.subject,
      subject: '',
      notBefore: new Date(now - 60_000),
      notAfter: new Date(now + 72 * 3_600_000),
      signingAlgorithm: alg,
      publicKey: keys.publicKey as never,
      signingKey: caKey as never,
      extensions: [
        new px.KeyUsagesExtension(usages, true),
        new px.ExtendedKeyUsageExtension([px.ExtendedKeyUsage.clientAuth, px.ExtendedKeyUsage.serverAuth]),
        new px.BasicConstraintsExtension(false, undefined, true),
        await px.SubjectKeyIdentifierExtension.create(keys.publicKey as never),
        await px.AuthorityKeyIdentifierExtension.create(caCert),
        new px.SubjectAlternativeNameExtension([{ type: 'url', value: uri }], true),
      ],
    });
    await subtle.exportKey('pkcs8', keys.privateKey);
    return Buffer.from(cert.rawData);
  };
}
