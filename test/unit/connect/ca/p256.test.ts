// P-256 leaf keys built without OpenSSL's encoders must match what its encoders write, byte for
// byte, and the SPKI reader must refuse whatever is not an uncompressed P-256 point.
import { createECDH, createPrivateKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateP256KeyPair, p256PublicKey } from '../../../../src/connect/ca/p256.js';

describe('generateP256KeyPair', () => {
  it('encodes SPKI and SEC1 exactly as OpenSSL does, short scalars included', () => {
    let shortScalars = 0;
    // About one scalar in 128 has a leading zero byte; go on until one was seen (bounded).
    for (let i = 0; i < 5000 && (i < 50 || shortScalars === 0); i++) {
      const pair = generateP256KeyPair();
      expect(pair.spki.equals(pair.publicKey.export({ type: 'spki', format: 'der' }))).toBe(true);
      expect(pair.sec1.equals(pair.privateKey.export({ type: 'sec1', format: 'der' }))).toBe(true);
      if (pair.sec1[7] === 0) shortScalars++;
    }
    expect(shortScalars).toBeGreaterThan(0);
  });

  it('gives a key pair that signs and verifies, and whose SEC1 form reads back as the same key', () => {
    const pair = generateP256KeyPair();
    const data = Buffer.from('to be signed');
    const signature = sign('sha256', data, pair.privateKey);
    expect(verify('sha256', data, pair.publicKey, signature)).toBe(true);
    const reread = createPrivateKey({ key: pair.sec1, format: 'der', type: 'sec1' });
    expect(reread.export({ format: 'jwk' })).toEqual(pair.privateKey.export({ format: 'jwk' }));
    expect(pair.privateKey.asymmetricKeyDetails).toEqual({ namedCurve: 'prime256v1' });
  });

  it('makes a new key every time', () => {
    const points = new Set(Array.from({ length: 50 }, () => generateP256KeyPair().spki.toString('hex')));
    expect(points.size).toBe(50);
  });
});

describe('p256PublicKey', () => {
  it('reads an SPKI back into a key that verifies what the private key signed', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const spki = publicKey.export({ type: 'spki', format: 'der' });
    const key = p256PublicKey(spki);
    expect(key?.export({ type: 'spki', format: 'der' }).equals(spki)).toBe(true);
    const data = Buffer.from('to be signed');
    expect(verify('sha256', data, key as NonNullable<typeof key>, sign('sha256', data, privateKey))).toBe(true);
  });

  it('refuses other curves, other key types and other point forms', () => {
    const p384 = generateKeyPairSync('ec', { namedCurve: 'secp384r1' }).publicKey;
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey;
    expect(p256PublicKey(p384.export({ type: 'spki', format: 'der' }))).toBeUndefined();
    expect(p256PublicKey(rsa.export({ type: 'spki', format: 'der' }))).toBeUndefined();
    const spki = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({
      type: 'spki',
      format: 'der',
    });
    const compressedMarker = Buffer.from(spki);
    compressedMarker[26] = 0x02;
    expect(p256PublicKey(compressedMarker)).toBeUndefined();
    expect(p256PublicKey(spki.subarray(0, spki.length - 1))).toBeUndefined();
  });

  it('rejects a point that is not on the curve', () => {
    const point = createECDH('prime256v1');
    point.generateKeys();
    const spki = Buffer.concat([
      Buffer.from('3059301306072a8648ce3d020106082a8648ce3d030107034200', 'hex'),
      point.getPublicKey(),
    ]);
    expect(p256PublicKey(spki)).toBeDefined();
    const offCurve = Buffer.from(spki);
    offCurve[offCurve.length - 1] = (offCurve[offCurve.length - 1] as number) ^ 0x01;
    expect(() => p256PublicKey(offCurve)).toThrow();
  });
});
