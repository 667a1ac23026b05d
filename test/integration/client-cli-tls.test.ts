// The client commands against an HTTPS-only agent with verify_incoming, as a Consul operator
// reaches one: the CA and the client certificate by flag or by CONSUL_/SVC_ variable, and each
// failure (an untrusted agent certificate, a name it does not hold, no client certificate, one it
// does not trust, plain HTTP to the HTTPS port) said in one line of words, exit status 1. The
// sidecar proxy takes the same flags to its SDK: it gets its leaf, and serves, over HTTPS.
import { cp, mkdir } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTlsFiles, type TlsFiles } from '../support/tls-files.js';
import { runCli, startAgent, type AgentProcess } from './support/agent-process.js';
import { exchange, freePort, runProxy } from './support/proxy-process.js';

const ROOT = 'root-secret';

describe('client commands over HTTPS with verify_incoming', () => {
  let files: TlsFiles;
  let agent: AgentProcess;
  let addr: string;
  let trusted: string[];

  beforeAll(async () => {
    files = await makeTlsFiles();
    agent = await startAgent({
      args: ['-https-port', '0', '-http-port', '-1'],
      config: {
        tls: {
          defaults: {
            ca_file: files.caFile,
            cert_file: files.certFile,
            key_file: files.keyFile,
            verify_incoming: true,
          },
        },
        acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: ROOT } },
      },
    });
    addr = `127.0.0.1:${agent.port}`;
    trusted = [
      '-http-addr',
      `https://${addr}`,
      '-token',
      ROOT,
      '-ca-file',
      files.caFile,
      '-client-cert',
      files.clientCertFile,
      '-client-key',
      files.clientKeyFile,
    ];
  });
  afterAll(async () => {
    await agent.stop();
    await files.remove();
  });

  /** The one line a failed command prints, after checking it failed with exit status 1 and printed nothing else. */
  async function failure(args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
    const result = await runCli(args, env);
    expect(result.code, result.stderr).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr.split('\n')).toHaveLength(2);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    return result.stderr.trimEnd();
  }

  it('reaches the agent with the CA file and client certificate given by flag', async () => {
    expect(await runCli(['kv', 'put', ...trusted, 'tls/flag', 'by flags'])).toMatchObject({
      code: 0,
      stdout: 'Success! Data written to: tls/flag\n',
    });
    expect(await runCli(['kv', 'get', ...trusted, 'tls/flag'])).toMatchObject({ code: 0, stdout: 'by flags\n' });
  });

  it('reaches it with CONSUL_HTTP_SSL, CONSUL_CACERT, CONSUL_CLIENT_CERT and CONSUL_CLIENT_KEY', async () => {
    const env = {
      CONSUL_HTTP_ADDR: addr,
      CONSUL_HTTP_SSL: 'true',
      CONSUL_HTTP_TOKEN: ROOT,
      CONSUL_CACERT: files.caFile,
      CONSUL_CLIENT_CERT: files.clientCertFile,
      CONSUL_CLIENT_KEY: files.clientKeyFile,
    };
    expect(await runCli(['kv', 'put', 'tls/env', 'by env'], env)).toMatchObject({
      code: 0,
      stdout: 'Success! Data written to: tls/env\n',
    });
    // Without CONSUL_HTTP_SSL a bare host:port is plain HTTP, which the HTTPS port drops.
    expect(await failure(['kv', 'get', 'tls/env'], { ...env, CONSUL_HTTP_SSL: '' })).toBe(
      `Error connecting to the agent at http://${addr}: read: connection reset by peer (if the agent serves HTTPS there, use an https:// address or CONSUL_HTTP_SSL=true)`,
    );
  });

  it('reaches it with the SVC_ spellings and a CA directory (-ca-path, SVC_CAPATH)', async () => {
    const caDir = join(files.dir, 'ca-dir');
    await mkdir(caDir, { recursive: true });
    await cp(files.caFile, join(caDir, 'ca.pem'));
    const env = {
      SVC_HTTP_ADDR: `https://${addr}`,
      SVC_HTTP_TOKEN: ROOT,
      SVC_CAPATH: caDir,
      SVC_CLIENT_CERT: files.clientCertFile,
      SVC_CLIENT_KEY: files.clientKeyFile,
    };
    expect(await runCli(['kv', 'put', 'tls/svc', 'by svc'], env)).toMatchObject({
      code: 0,
      stdout: 'Success! Data written to: tls/svc\n',
    });
    expect(await runCli(['kv', 'get', '-ca-path', caDir, 'tls/svc'], { ...env, SVC_CAPATH: '' })).toMatchObject({
      code: 0,
      stdout: 'by svc\n',
    });
  });

  it('says the agent certificate is signed by an unknown authority: no CA given, or the wrong one', async () => {
    const untrusted = `Error connecting to the agent at https://${addr}: tls: failed to verify certificate: x509: certificate signed by unknown authority (the agent's certificate is not trusted: give the CA that signed it with -ca-file, -ca-path, CONSUL_CACERT or CONSUL_CAPATH)`;
    const clientCert = ['-client-cert', files.clientCertFile, '-client-key', files.clientKeyFile];
    expect(await failure(['members', '-http-addr', `https://${addr}`, ...clientCert])).toBe(untrusted);
    const otherCa = join(files.dir, 'other-ca.pem');
    expect(await failure(['members', '-http-addr', `https://${addr}`, '-ca-file', otherCa, ...clientCert])).toBe(
      untrusted,
    );
    expect(
      await failure(['members', ...clientCert], { CONSUL_HTTP_ADDR: `https://${addr}`, CONSUL_CACERT: otherCa }),
    ).toBe(untrusted);
  });

  it('says which names the certificate holds when the agent is reached by another', async () => {
    expect(await failure(['members', ...trusted, '-tls-server-name', 'db.example'])).toBe(
      `Error connecting to the agent at https://${addr}: tls: failed to verify certificate: x509: certificate is valid for localhost, not db.example (the agent's certificate does not name the address: connect by a name it holds, or set -tls-server-name)`,
    );
    expect(await failure(['members', ...trusted], { CONSUL_TLS_SERVER_NAME: 'db.example' })).toContain(
      'x509: certificate is valid for localhost, not db.example',
    );
    expect(await failure(['members', ...trusted, '-tls-server-name', '10.1.2.3'])).toContain(
      'x509: certificate is valid for 127.0.0.1, not 10.1.2.3',
    );
  });

  it('says the agent requires a client certificate, or refused the one given', async () => {
    const ca = ['-http-addr', `https://${addr}`, '-ca-file', files.caFile];
    expect(await failure(['members', ...ca])).toBe(
      `Error connecting to the agent at https://${addr}: remote error: tls: certificate required (the agent requires a client certificate: give one with -client-cert and -client-key, or CONSUL_CLIENT_CERT and CONSUL_CLIENT_KEY)`,
    );
    // TLS 1.3 ends the client's handshake before the agent checks the certificate; node:https then closes.
    expect(
      await failure(['members', ...ca, '-client-cert', files.strangerCertFile, '-client-key', files.strangerKeyFile]),
    ).toBe(
      `Error connecting to the agent at https://${addr}: read: connection reset by peer (the agent closed the connection right after the TLS handshake: it did not accept the client certificate; is it signed by a CA the agent trusts?)`,
    );
  });

  it('says what is wrong with the TLS files before sending anything', async () => {
    const at = ['members', '-http-addr', `https://${addr}`];
    expect(await failure([...at, '-ca-file', join(files.dir, 'missing.pem')])).toBe(
      `Error loading CA File: open ${join(files.dir, 'missing.pem')}: no such file or directory`,
    );
    expect(await failure([...at, '-ca-file', files.caFile, '-client-cert', files.clientCertFile])).toBe(
      'both client cert and client key must be provided',
    );
    expect(
      await failure([
        ...at,
        '-ca-file',
        files.caFile,
        '-client-cert',
        files.clientCertFile,
        '-client-key',
        files.strangerKeyFile,
      ]),
    ).toBe(`tls: private key does not match public key (${files.clientCertFile})`);
    expect(await failure([...at, '-ca-file', files.clientKeyFile])).toBe(
      `Error loading CA File: Couldn't parse PEM in: ${files.clientKeyFile}`,
    );
  });

  it('says an https address on a plain HTTP port is answered in plain HTTP', async () => {
    // node:http answers a ClientHello with a 400; uWS waits for a request line (the client then times out).
    const plain = await startAgent({ args: ['-http-transport', 'node'] });
    try {
      expect(
        await failure(['members', '-http-addr', `https://127.0.0.1:${plain.port}`, '-ca-file', files.caFile]),
      ).toBe(
        `Error connecting to the agent at https://127.0.0.1:${plain.port}: http: server gave HTTP response to HTTPS client (the agent serves plain HTTP there: use an http:// address)`,
      );
    } finally {
      await plain.stop();
    }
  });

  it('gives the sidecar proxy the same TLS settings: leaves, registration and instances over HTTPS', async () => {
    const app = createServer((socket) => socket.pipe(socket));
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    const appPort = (app.address() as AddressInfo).port;
    const [publicPort, upstreamPort] = [await freePort(), await freePort()];
    const db = await runProxy([
      ...trusted,
      ...['-service', 'tls-db', '-service-addr', `127.0.0.1:${appPort}`, '-listen', `127.0.0.1:${publicPort}`],
      '-register',
    ]);
    const web = await runProxy([...trusted, '-service', 'tls-web', '-upstream', `tls-db:${upstreamPort}`]);
    try {
      const res = await runCli(['intention', 'create', ...trusted, '-allow', 'tls-web', 'tls-db']);
      expect(res.code, res.stderr).toBe(0);
      expect(await exchange(upstreamPort, 'over https')).toBe('over https');
    } finally {
      for (const proxy of [db, web]) proxy.child.kill('SIGTERM');
      app.close();
    }
  });

  it('says in one line why a sidecar proxy cannot start: no leaf permission, an agent it cannot verify, no sidecar, a port taken', async () => {
    const proxy = (...args: string[]): string[] => ['connect', 'proxy', ...args];
    const service = ['-service', 'tls-x', '-service-addr', '127.0.0.1:1', '-listen'];
    const listen = `127.0.0.1:${await freePort()}`;
    const other = trusted.map((arg) => (arg === ROOT ? 'not-a-token' : arg));
    expect(await failure(proxy(...other, ...service, listen))).toMatch(
      /^the agent refused tls-x's leaf certificate or roots \(the token needs service:write on tls-x\): .* answered 403/,
    );
    const unverified = ['-http-addr', `https://${addr}`, '-token', ROOT];
    expect(await failure(proxy(...unverified, ...service, listen))).toMatch(
      /^the agent's certificate cannot be verified, or it refused this client's: self-signed certificate/,
    );
    expect(await failure(proxy(...trusted, '-sidecar-for', 'nope'))).toBe(
      'invalid value "nope" for flag -sidecar-for: no sidecar proxy is registered for it',
    );
    expect(await failure(proxy(...trusted, ...service, addr))).toBe(
      `listen EADDRINUSE: address already in use ${addr}`,
    );
  });
});
