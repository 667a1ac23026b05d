// The CA configuration rules (docs/decisions.md#ca-configuration), with Consul's message texts,
// through the loader (so key paths are checked) and directly.
import { afterAll, describe, expect, it } from 'vitest';
import { caConfigProblems, type CaRulesInput } from '../../../src/config/ca-rules.js';
import { load, problemsOf, tempDir } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

let n = 0;
const caProblems = (caConfig: object): readonly string[] =>
  problemsOf({ files: [tmp.file(`ca${n++}.json`, { connect: { ca_config: caConfig } })] });
const caLoaded = (caConfig: object) =>
  load({ files: [tmp.file(`ca${n++}.json`, { connect: { ca_config: caConfig } })] }).connect.caConfig;

const P = 'connect.ca_config.';
const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY-----\n';

describe('leaf_cert_ttl bounds', () => {
  it('accepts 1h and 8760h', () => {
    expect(caLoaded({ leaf_cert_ttl: '1h' }).leafCertTtlMs).toBe(3_600_000);
    expect(
      caLoaded({ leaf_cert_ttl: '8760h', intermediate_cert_ttl: '26280h', root_cert_ttl: '87600h' }).leafCertTtlMs,
    ).toBe(8760 * 3_600_000);
  });

  it('rejects under 1h', () => {
    expect(caProblems({ leaf_cert_ttl: '59m' })).toEqual([
      `${P}leaf_cert_ttl: leaf cert TTL must be greater or equal than 1h0m0s`,
    ]);
  });

  it('rejects over 8760h', () => {
    expect(caProblems({ leaf_cert_ttl: '8761h', intermediate_cert_ttl: '30000h', root_cert_ttl: '87600h' })).toEqual([
      `${P}leaf_cert_ttl: leaf cert TTL must be less than 8760h0m0s`,
    ]);
  });
});

describe('intermediate and root TTLs', () => {
  it('needs the intermediate to be at least 3h', () => {
    expect(caProblems({ leaf_cert_ttl: '1h', intermediate_cert_ttl: '2h' })).toEqual([
      `${P}intermediate_cert_ttl: Intermediate Cert TTL must be greater or equal than 3h`,
    ]);
  });

  it('needs the intermediate to be at least 3 x leaf', () => {
    expect(caProblems({ leaf_cert_ttl: '72h', intermediate_cert_ttl: '100h' })).toEqual([
      `${P}intermediate_cert_ttl: Intermediate Cert TTL must be greater or equal than 3 * LeafCertTTL (>=216h0m0s).`,
    ]);
  });

  it('needs the root to outlive the intermediate', () => {
    expect(caProblems({ leaf_cert_ttl: '1h', intermediate_cert_ttl: '4h', root_cert_ttl: '3h' })).toEqual([
      `${P}root_cert_ttl: root cert TTL is set and is not greater than intermediate cert ttl. root cert ttl: 3h0m0s, intermediate cert ttl: 4h0m0s`,
    ]);
  });
});

describe('keys', () => {
  it.each([
    [{ private_key_bits: 512 }, `${P}private_key_bits: EC key length must be one of (224, 256, 384, 521) bits`],
    [
      { private_key_type: 'rsa', private_key_bits: 256 },
      `${P}private_key_bits: RSA key length must be 2048 or 4096 bits`,
    ],
    [{ root_cert: PEM }, `${P}private_key: must provide a private key when providing a root cert`],
  ])('%j', (caConfig, message) => {
    expect(caProblems(caConfig)).toEqual([message]);
  });

  it.each([
    ['ec', 224],
    ['ec', 384],
    ['ec', 521],
    ['rsa', 4096],
  ])('accepts %s %i', (type, bits) => {
    expect(caLoaded({ private_key_type: type, private_key_bits: bits }).privateKeyBits).toBe(bits);
  });

  it('accepts a supplied root with its key', () => {
    const ca = caLoaded({ root_cert: PEM, private_key: KEY });
    expect([ca.rootCert, ca.privateKey]).toEqual([PEM, KEY]);
  });
});

describe('collecting', () => {
  it('reports every broken CA rule, unlike Consul which stops at the first', () => {
    expect(caProblems({ leaf_cert_ttl: '30m', private_key_bits: 1, root_cert: PEM })).toEqual([
      `${P}leaf_cert_ttl: leaf cert TTL must be greater or equal than 1h0m0s`,
      `${P}private_key_bits: EC key length must be one of (224, 256, 384, 521) bits`,
      `${P}private_key: must provide a private key when providing a root cert`,
    ]);
  });

  it('still checks the other rules when one key fails to parse', () => {
    expect(caProblems({ leaf_cert_ttl: '3 days', private_key_bits: 1 })).toEqual([
      `${P}leaf_cert_ttl: invalid duration "3 days"`,
      `${P}private_key_bits: EC key length must be one of (224, 256, 384, 521) bits`,
    ]);
  });

  it('leaves out rules that read a key which failed to parse', () => {
    expect(caProblems({ private_key_type: 'dsa', private_key_bits: 2048 })).toEqual([
      `${P}private_key_type: expected "ec" or "rsa", got "dsa"`,
    ]);
  });
});

describe('caConfigProblems', () => {
  const good: CaRulesInput = {
    leafCertTtlMs: 72 * 3_600_000,
    intermediateCertTtlMs: 8760 * 3_600_000,
    rootCertTtlMs: 87_600 * 3_600_000,
    privateKeyType: 'ec',
    privateKeyBits: 256,
    privateKey: undefined,
    rootCert: undefined,
  };

  it('passes the defaults', () => {
    expect(caConfigProblems(good)).toEqual([]);
  });

  it('names every key a finding read', () => {
    expect(caConfigProblems({ ...good, intermediateCertTtlMs: 100 * 3_600_000 })).toEqual([
      {
        field: 'intermediate_cert_ttl',
        involves: ['intermediate_cert_ttl', 'leaf_cert_ttl'],
        message: 'Intermediate Cert TTL must be greater or equal than 3 * LeafCertTTL (>=216h0m0s).',
      },
    ]);
  });
});
