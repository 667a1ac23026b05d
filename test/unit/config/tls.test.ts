// The HTTPS keys: ports.https, Consul's tls.defaults, and ports.http -1. The files themselves are
// read when the listener starts (test/unit/http/tls-credentials.test.ts); here, the rules between keys.
import { afterAll, describe, expect, it } from 'vitest';
import { load, problemsOf, tempDir } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

let n = 0;
const file = (content: unknown): string => tmp.file(`tls${n++}.json`, content);
const problems = (content: unknown): readonly string[] => problemsOf({ files: [file(content)] });

describe('HTTPS config', () => {
  it('defaults to plain HTTP only, TLS 1.2 and no client certificates', () => {
    const c = load({ files: [file({})] });
    expect(c.ports).toEqual({ http: 8500, https: -1 });
    expect(c.tls).toEqual({
      caFile: undefined,
      certFile: undefined,
      keyFile: undefined,
      verifyIncoming: false,
      minVersion: 'TLSv1_2',
    });
  });

  it('reads Consul keys', () => {
    const c = load({
      files: [
        file({
          ports: { http: -1, https: 8501 },
          tls: {
            defaults: {
              ca_file: '/etc/ca.pem',
              cert_file: '/etc/a.pem',
              key_file: '/etc/a.key',
              verify_incoming: true,
              tls_min_version: 'TLSv1_3',
            },
          },
        }),
      ],
    });
    expect(c.ports).toEqual({ http: -1, https: 8501 });
    expect(c.tls).toEqual({
      caFile: '/etc/ca.pem',
      certFile: '/etc/a.pem',
      keyFile: '/etc/a.key',
      verifyIncoming: true,
      minVersion: 'TLSv1_3',
    });
  });

  it("lets Consul's tls.https settings win over tls.defaults for the HTTPS API, verify_incoming included", () => {
    const c = load({
      files: [
        file({
          tls: {
            defaults: {
              ca_file: '/etc/ca.pem',
              cert_file: '/etc/a.pem',
              key_file: '/etc/a.key',
              verify_incoming: false,
            },
            https: {
              cert_file: '/etc/https.pem',
              key_file: '/etc/https.key',
              verify_incoming: true,
              tls_min_version: 'TLSv1_3',
            },
          },
        }),
      ],
    });
    expect(c.tls).toEqual({
      caFile: '/etc/ca.pem',
      certFile: '/etc/https.pem',
      keyFile: '/etc/https.key',
      verifyIncoming: true,
      minVersion: 'TLSv1_3',
    });
    // Consul 1.11's spelling of the same setting moves there too.
    expect(
      load({
        files: [file({ tls: { defaults: { ca_file: '/etc/ca.pem' } }, verify_incoming_https: true })],
        warn: () => {},
      }).tls.verifyIncoming,
    ).toBe(true);
    expect(problems({ tls: { https: { verify_incoming: true } } })).toEqual([
      'tls.defaults.ca_file: required with tls.https.verify_incoming',
    ]);
    expect(
      load({
        files: [
          file({ ports: { https: 8501 }, tls: { https: { cert_file: '/etc/https.pem', key_file: '/etc/https.key' } } }),
        ],
      }).tls.certFile,
    ).toBe('/etc/https.pem');
  });

  it.each([
    [
      { ports: { https: 8501 } },
      ['tls.defaults.cert_file: required with ports.https', 'tls.defaults.key_file: required with ports.https'],
    ],
    [
      { tls: { defaults: { verify_incoming: true } } },
      ['tls.defaults.ca_file: required with tls.defaults.verify_incoming'],
    ],
    [
      { ports: { http: -1 } },
      ['ports.http: -1 disables plain HTTP, and ports.https is not set: the agent would serve nothing'],
    ],
    [{ ports: { https: -2 } }, ['ports.https: expected an integer from -1 to 65535, got -2']],
    [{ tls: { defaults: { tls_min_version: 'tls12' } } }, [expect.stringMatching(/^tls\.defaults\.tls_min_version: /)]],
  ])('rejects %j', (content, expected) => {
    expect(problems(content)).toEqual(expected);
  });
});
