// The agent's listeners against the real agent: a port bound exclusively (a second agent on the
// address fails at start), and the HTTPS API with Consul's tls.defaults keys, checked with
// node:tls/https clients and curl: a good client certificate, a wrong CA, none, and TLS 1.1.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request as httpsRequest, type RequestOptions } from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startAgent, type AgentProcess } from './support/agent-process.js';
import { makeTlsFiles, type TlsFiles } from '../support/tls-files.js';

const run = promisify(execFile);

describe('the HTTP port', () => {
  it('is bound exclusively: a second agent on the address exits 1 naming it', async () => {
    const first = await startAgent();
    try {
      const second = await runCli([
        'agent',
        '-dev',
        '-http-port',
        String(first.port),
        ...(process.env.SVC_TEST_TRANSPORT ? ['-http-transport', process.env.SVC_TEST_TRANSPORT] : []),
      ]);
      expect(second.code).toBe(1);
      expect(second.stderr).toContain(
        `error starting HTTP listener: listen tcp 127.0.0.1:${first.port}: bind: address already in use`,
      );
      // The first agent still has the address to itself.
      expect((await fetch(`${first.url}/v1/status/leader`)).status).toBe(200);
    } finally {
      await first.stop();
    }
  });
});

interface TlsAnswer {
  readonly status?: number | undefined;
  readonly body?: string;
  readonly error?: string;
}

function get(port: number, path: string, options: RequestOptions): Promise<TlsAnswer> {
  return new Promise((done) => {
    const req = httpsRequest({ host: '127.0.0.1', port, path, agent: false, ...options }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => done({ status: res.statusCode, body }));
    });
    req.on('error', (err: NodeJS.ErrnoException) => done({ error: err.code ?? err.message }));
    req.end();
  });
}

describe('HTTPS', () => {
  let files: TlsFiles;
  let agent: AgentProcess;
  let httpsPort: number;
  let ca: Buffer;
  beforeAll(async () => {
    files = await makeTlsFiles();
    ca = readFileSync(files.caFile);
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
      },
    });
    const line = agent.logs.find((l) => l.msg === 'svc-agent started')!;
    expect(line.address).toBeNull();
    // HTTPS only: node:https serves it, whatever the plain transport would have been.
    expect([line.transport, line.httpsTransport, line.uws]).toEqual(['node', 'node', null]);
    httpsPort = Number(String(line.httpsAddress).split(':').pop());
  });
  afterAll(async () => {
    await agent.stop();
    await files.remove();
  });

  const client = (): RequestOptions => ({
    ca,
    cert: readFileSync(files.clientCertFile),
    key: readFileSync(files.clientKeyFile),
  });

  it('serves the API to a client with a certificate from ca_file', async () => {
    const answer = await get(httpsPort, '/v1/status/leader', client());
    expect(answer).toEqual({ status: 200, body: '"127.0.0.1:8300"' });
    const put = await new Promise<number | undefined>((done) => {
      const req = httpsRequest(
        { host: '127.0.0.1', port: httpsPort, path: '/v1/kv/tls', method: 'PUT', agent: false, ...client() },
        (res) => {
          res.resume();
          done(res.statusCode);
        },
      );
      req.end('over tls');
    });
    expect(put).toBe(200);
    expect(await get(httpsPort, '/v1/kv/tls?raw', client())).toEqual({ status: 200, body: 'over tls' });
  });

  it('refuses a client without a certificate, or with one from another CA', async () => {
    expect((await get(httpsPort, '/v1/status/leader', { ca })).status).toBeUndefined();
    const stranger = await get(httpsPort, '/v1/status/leader', {
      ca,
      cert: readFileSync(files.strangerCertFile),
      key: readFileSync(files.strangerKeyFile),
    });
    expect(stranger.status).toBeUndefined();
    expect(stranger.error).toBeDefined();
  });

  it('is refused by a client that does not trust the server certificate', async () => {
    const answer = await get(httpsPort, '/v1/status/leader', {
      cert: readFileSync(files.clientCertFile),
      key: readFileSync(files.clientKeyFile),
    });
    expect(answer.error).toMatch(/CERT|SELF_SIGNED|UNABLE_TO_VERIFY/);
  });

  it('refuses TLS 1.1 (tls_min_version defaults to TLSv1_2)', async () => {
    const outcome = await new Promise<string>((done) => {
      const { cert, key } = client();
      const socket = tlsConnect({
        host: '127.0.0.1',
        port: httpsPort,
        ca,
        cert,
        key,
        maxVersion: 'TLSv1.1',
        minVersion: 'TLSv1.1',
        ciphers: 'DEFAULT:@SECLEVEL=0',
      });
      socket.on('secureConnect', () => {
        socket.destroy();
        done('connected');
      });
      socket.on('error', (err: NodeJS.ErrnoException) => done(err.code ?? err.message));
    });
    // The server's protocol-version alert: the client offered TLS 1.1 and would have taken it.
    expect(outcome).toMatch(/PROTOCOL_VERSION/);
  });

  it('answers curl with a client certificate, and refuses curl without one', { timeout: 120_000 }, async () => {
    // scripts/ensure-curl.sh installs curl on a fresh Debian machine.
    const curl = (await run(resolve(import.meta.dirname, '../../scripts/ensure-curl.sh'), [])).stdout.trim();
    const url = `https://127.0.0.1:${httpsPort}/v1/status/leader`;
    const ok = await run(curl, [
      '-sS',
      '--cacert',
      files.caFile,
      '--cert',
      files.clientCertFile,
      '--key',
      files.clientKeyFile,
      url,
    ]);
    expect(ok.stdout).toBe('"127.0.0.1:8300"');
    await expect(run(curl, ['-sS', '--cacert', files.caFile, url])).rejects.toMatchObject({ code: expect.any(Number) });
  });
});
