// Where the client commands send a request and with what: flags over SVC_ over CONSUL_ variables,
// the token file over the token, the TLS files read up front, each mistake under its own code.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestUrl } from '../../../src/cli/client/api.js';
import { connectError } from '../../../src/cli/client/connect-error.js';
import { targetFrom, type Target } from '../../../src/cli/client/connection.js';
import { agentErrorOf } from '../../support/errors.js';
import { makeTlsFiles, type TlsFiles } from '../../support/tls-files.js';

describe('targetFrom', () => {
  let files: TlsFiles;
  beforeAll(async () => {
    files = await makeTlsFiles();
  });
  afterAll(() => files.remove());

  it('takes the flag, else SVC_, else CONSUL_; an empty value is unset', () => {
    expect(targetFrom({}, {}).base).toBe('http://127.0.0.1:8500');
    expect(targetFrom({}, { CONSUL_HTTP_ADDR: 'c:1', SVC_HTTP_ADDR: '' })).toMatchObject({
      base: 'http://c:1',
      token: undefined,
    });
    expect(targetFrom({}, { CONSUL_HTTP_ADDR: 'c:1', SVC_HTTP_ADDR: 's:2', CONSUL_HTTP_TOKEN: 'ct' })).toMatchObject({
      base: 'http://s:2',
      token: 'ct',
    });
    expect(targetFrom({ httpAddr: 'f:3/', token: 'ft' }, { SVC_HTTP_ADDR: 's:2', SVC_HTTP_TOKEN: 'st' })).toMatchObject(
      { base: 'http://f:3', token: 'ft' },
    );
  });

  it('uses https for an https:// address or CONSUL_HTTP_SSL=true, which http:// does not turn back', () => {
    expect(targetFrom({ httpAddr: 'https://a:1' }, {}).base).toBe('https://a:1');
    expect(targetFrom({ httpAddr: 'a:1' }, { CONSUL_HTTP_SSL: 'true' }).base).toBe('https://a:1');
    expect(targetFrom({ httpAddr: 'http://a:1' }, { SVC_HTTP_SSL: '1' }).base).toBe('https://a:1');
    expect(targetFrom({ httpAddr: 'a:1' }, { CONSUL_HTTP_SSL: 'false' }).base).toBe('http://a:1');
    const bad = agentErrorOf(() => targetFrom({}, { CONSUL_HTTP_SSL: 'yes' }));
    expect([bad.code, bad.message]).toEqual([
      'CLI_ENV_INVALID',
      'invalid boolean value "yes" for CONSUL_HTTP_SSL: parse error',
    ]);
    const unix = agentErrorOf(() => targetFrom({ httpAddr: 'unix:///run/agent.sock' }, {}));
    expect([unix.code, unix.message]).toEqual(['CLI_ADDRESS_SCHEME', 'Unknown protocol scheme: unix']);
  });

  it('reads the token file, trimmed, over any token; an empty one leaves the token', async () => {
    const file = join(files.dir, 'token');
    await writeFile(file, '  from-file \n');
    expect(targetFrom({ token: 'flag', tokenFile: file }, {}).token).toBe('from-file');
    expect(targetFrom({ token: 'flag' }, { CONSUL_HTTP_TOKEN_FILE: file }).token).toBe('from-file');
    await writeFile(file, '\n');
    expect(targetFrom({ token: 'flag', tokenFile: file }, {}).token).toBe('flag');
    const missing = agentErrorOf(() => targetFrom({ tokenFile: join(files.dir, 'none') }, {}));
    expect([missing.code, missing.message]).toEqual([
      'CLI_FILE_UNREADABLE',
      `Error loading token file: open ${join(files.dir, 'none')}: no such file or directory`,
    ]);
  });

  it('builds a TLS client only when a TLS setting is given, and checks its files before any request', () => {
    expect(targetFrom({ httpAddr: 'https://a:1' }, {}).tls).toBeUndefined();
    const tls = targetFrom(
      { caFile: files.caFile },
      {
        CONSUL_CLIENT_CERT: files.clientCertFile,
        SVC_CLIENT_KEY: files.clientKeyFile,
        CONSUL_TLS_SERVER_NAME: 'x.example',
      },
    ).tls;
    expect(tls).toMatchObject({ serverName: 'x.example', verify: true, hasClientCert: true });
    expect(targetFrom({}, { CONSUL_HTTP_SSL_VERIFY: 'false' }).tls).toMatchObject({
      verify: false,
      hasClientCert: false,
    });
    const cases: [() => unknown, string, string][] = [
      [
        () => targetFrom({ clientCert: files.clientCertFile }, {}),
        'CLI_TLS_SETUP',
        'both client cert and client key must be provided',
      ],
      [
        () => targetFrom({ caFile: files.clientKeyFile }, {}),
        'CLI_TLS_SETUP',
        `Error loading CA File: Couldn't parse PEM in: ${files.clientKeyFile}`,
      ],
      [
        () => targetFrom({ caPath: files.dir }, {}),
        'CLI_TLS_SETUP',
        `Error loading CA Path: Couldn't parse PEM in: ${files.caFile.replace('ca.pem', 'ca.key')}`,
      ],
      [
        () => targetFrom({ caFile: join(files.dir, 'none.pem') }, {}),
        'CLI_FILE_UNREADABLE',
        `Error loading CA File: open ${join(files.dir, 'none.pem')}: no such file or directory`,
      ],
      [
        () => targetFrom({ clientCert: files.clientCertFile, clientKey: files.strangerKeyFile }, {}),
        'CLI_TLS_SETUP',
        `tls: private key does not match public key (${files.clientCertFile})`,
      ],
      [
        () => targetFrom({ clientCert: files.clientKeyFile, clientKey: files.clientKeyFile }, {}),
        'CLI_TLS_SETUP',
        expect.stringContaining('tls: '),
      ],
    ];
    for (const [fn, code, message] of cases) {
      const err = agentErrorOf(fn);
      expect([err.code, err.message]).toEqual([code, message]);
    }
  });

  it("adds dc to every request and stale to reads only, after the command's own query", () => {
    const target: Target = { base: 'http://a:1', token: undefined, datacenter: 'dc 2' };
    expect(requestUrl(target, { stale: true }, 'GET', '/v1/kv/k?keys&separator=%2F').href).toBe(
      'http://a:1/v1/kv/k?keys&separator=%2F&dc=dc%202&stale',
    );
    expect(requestUrl(target, { stale: true }, 'PUT', '/v1/kv/k').href).toBe('http://a:1/v1/kv/k?dc=dc%202');
    expect(requestUrl({ base: 'http://a:1', token: undefined }, {}, 'GET', '/v1/kv/k?raw').href).toBe(
      'http://a:1/v1/kv/k?raw',
    );
  });
});

describe('connectError', () => {
  const plain: Target = { base: 'http://127.0.0.1:1', token: undefined };
  const secure: Target = { base: 'https://127.0.0.1:1', token: undefined };
  const said = (err: object, target = secure, handshook = false): [string, string] => {
    const e = connectError(Object.assign(new Error('node words'), err), target, handshook);
    return [e.code, e.message.replace(`Error connecting to the agent at ${target.base}: `, '')];
  };

  it('says a refused, reset or unresolved connection as Go does', () => {
    expect(said({ code: 'ECONNREFUSED', address: '127.0.0.1', port: 1 }, plain)).toEqual([
      'CLI_CONNECT_FAILED',
      'dial tcp 127.0.0.1:1: connect: connection refused',
    ]);
    expect(said({ code: 'ENOTFOUND', hostname: 'nowhere.invalid' }, plain)).toEqual([
      'CLI_CONNECT_FAILED',
      'dial tcp: lookup nowhere.invalid: no such host',
    ]);
    expect(said({ code: 'ECONNRESET' }, plain)[1]).toBe(
      'read: connection reset by peer (if the agent serves HTTPS there, use an https:// address or CONSUL_HTTP_SSL=true)',
    );
    expect(said({ code: 'ECONNRESET' })).toEqual(['CLI_CONNECT_FAILED', 'read: connection reset by peer']);
  });

  it('says an untrusted or expired agent certificate in x509 words', () => {
    for (const code of [
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      'SELF_SIGNED_CERT_IN_CHAIN',
      'DEPTH_ZERO_SELF_SIGNED_CERT',
      'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
    ]) {
      const [errCode, text] = said({ code });
      expect(errCode).toBe('CLI_TLS_FAILED');
      expect(text).toMatch(
        /^tls: failed to verify certificate: x509: certificate signed by unknown authority \(.*-ca-file/,
      );
    }
    expect(said({ code: 'CERT_HAS_EXPIRED' })[1]).toMatch(
      /^tls: failed to verify certificate: x509: certificate has expired or is not yet valid/,
    );
  });

  it('says which names the certificate holds, as x509.HostnameError does', () => {
    const cert = { subjectaltname: 'DNS:localhost, DNS:agent.example, IP Address:127.0.0.1' };
    const name = (host: string, c: object): string =>
      said({ code: 'ERR_TLS_CERT_ALTNAME_INVALID', host, cert: c })[1].replace(/ \(.*$/, '');
    expect(name('db.example', cert)).toBe(
      'tls: failed to verify certificate: x509: certificate is valid for localhost, agent.example, not db.example',
    );
    expect(name('10.0.0.1', cert)).toBe(
      'tls: failed to verify certificate: x509: certificate is valid for 127.0.0.1, not 10.0.0.1',
    );
    expect(name('10.0.0.1', { subjectaltname: 'DNS:localhost' })).toBe(
      "tls: failed to verify certificate: x509: cannot validate certificate for 10.0.0.1 because it doesn't contain any IP SANs",
    );
    expect(name('db.example', {})).toBe(
      'tls: failed to verify certificate: x509: certificate is not valid for any names, but wanted to match db.example',
    );
  });

  it('says the agent wants a client certificate, or did not take the one given', () => {
    const withCert: Target = {
      ...secure,
      tls: { context: undefined as never, serverName: undefined, verify: true, hasClientCert: true },
    };
    expect(said({ code: 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED' })[1]).toMatch(
      /^remote error: tls: certificate required \(the agent requires a client certificate: give one with -client-cert and -client-key/,
    );
    expect(said({ code: 'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA' }, withCert)[1]).toMatch(
      /^remote error: tls: unknown certificate authority \(the agent refused the client certificate/,
    );
    expect(said({ code: 'ECONNRESET' }, withCert, true)).toEqual([
      'CLI_TLS_FAILED',
      expect.stringMatching(
        /^read: connection reset by peer \(the agent closed the connection right after the TLS handshake: it did not accept the client certificate/,
      ),
    ]);
    expect(said({ code: 'ERR_SSL_WRONG_VERSION_NUMBER' })[1]).toMatch(
      /^http: server gave HTTP response to HTTPS client/,
    );
  });
});
