// Consul's HTTP check against small loopback servers: redirects as Go's client follows them (or
// not, with DisableRedirects), and the TLS options (skip verify, the server name sent as SNI).
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createSecureContext, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpProbe } from '../../../src/local/probes/http-probe.js';
import type { ProbeSpec } from '../../../src/local/probe-protocol.js';
import { makeTlsFiles, type TlsFiles } from '../../support/tls-files.js';
import { probeSpec } from './probe-spec.js';

const spec = (target: string, more: Partial<ProbeSpec> = {}): ProbeSpec => probeSpec('http', target, more);

async function listen(server: Server): Promise<string> {
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function bodyOf(req: IncomingMessage): Promise<string> {
  return new Promise((done) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => done(text));
  });
}

describe('the HTTP check', () => {
  let server: Server;
  let base: string;
  const seen: string[] = [];

  beforeAll(async () => {
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      void bodyOf(req).then((body) => {
        const url = new URL(req.url ?? '/', 'http://x');
        seen.push(`${req.method} ${url.pathname} ${body}`);
        const hops = Number(url.searchParams.get('hops') ?? '0');
        const code = Number(url.searchParams.get('code') ?? '302');
        if (url.pathname === '/loop' && hops > 0) {
          res.writeHead(code, { Location: `/loop?hops=${hops - 1}&code=${code}` }).end();
        } else {
          res.writeHead(200, { 'Content-Type': 'text/plain' }).end(`ok ${req.method}`);
        }
      });
    });
    base = `http://${await listen(server)}`;
  });
  afterAll(() => new Promise<void>((done) => server.close(() => done())));

  it('follows redirects, and says the URL it was given with the last status', async () => {
    const result = await httpProbe(spec(`${base}/loop?hops=3`));
    expect(result).toEqual({ status: 'passing', output: `HTTP GET ${base}/loop?hops=3: 200 OK Output: ok GET` });
  });

  it('with DisableRedirects answers with the redirect itself: critical', async () => {
    const result = await httpProbe(spec(`${base}/loop?hops=1&code=301`, { disableRedirects: true }));
    expect(result.status).toBe('critical');
    expect(result.output).toBe(`HTTP GET ${base}/loop?hops=1&code=301: 301 Moved Permanently Output: `);
  });

  it('stops after ten redirects, as Go does', async () => {
    expect(await httpProbe(spec(`${base}/loop?hops=10`))).toMatchObject({ status: 'passing' });
    const result = await httpProbe(spec(`${base}/loop?hops=11`));
    expect(result).toEqual({ status: 'critical', output: `Get "${base}/loop?hops=11": stopped after 10 redirects` });
  });

  it('turns a POST into a GET without its body on 303, and resends it as it was on 307', async () => {
    seen.length = 0;
    const post = { method: 'POST', body: 'payload' };
    expect((await httpProbe(spec(`${base}/loop?hops=1&code=303`, post))).output).toContain('Output: ok GET');
    expect((await httpProbe(spec(`${base}/loop?hops=1&code=307`, post))).output).toContain('Output: ok POST');
    expect(seen).toEqual(['POST /loop payload', 'GET /loop ', 'POST /loop payload', 'POST /loop payload']);
  });
});

describe('the HTTPS check', () => {
  let tls: TlsFiles;
  let server: ReturnType<typeof createHttpsServer>;
  let port: number;
  const names: (string | false | null)[] = [];

  beforeAll(async () => {
    tls = await makeTlsFiles();
    const [cert, key] = await Promise.all([readFile(tls.certFile), readFile(tls.keyFile)]);
    server = createHttpsServer({ cert, key }, (req, res) => {
      names.push((req.socket as TLSSocket).servername);
      res.end('secure');
    });
    port = Number((await listen(server as unknown as Server)).split(':')[1]);
  });
  afterAll(async () => {
    await new Promise<void>((done) => server.close(() => done()));
    await tls.remove();
  });

  it('refuses a certificate it cannot verify unless TLSSkipVerify is set', async () => {
    const target = `https://localhost:${port}/`;
    const refused = await httpProbe(spec(target));
    expect(refused.status).toBe('critical');
    // Go's words, as Consul's check says it.
    expect(refused.output).toBe(
      `Get "${target}": tls: failed to verify certificate: x509: certificate signed by unknown authority`,
    );
    expect(await httpProbe(spec(target, { tlsSkipVerify: true }))).toEqual({
      status: 'passing',
      output: `HTTP GET ${target}: 200 OK Output: secure`,
    });
  });

  it("verifies against the agent's CA when given it, without TLSSkipVerify", async () => {
    const roots = createSecureContext({ ca: await readFile(tls.caFile) });
    const target = `https://localhost:${port}/`;
    expect(await httpProbe(spec(target), roots)).toEqual({
      status: 'passing',
      output: `HTTP GET ${target}: 200 OK Output: secure`,
    });
    // The CA vouches for the certificate, not for a name it does not hold.
    const misnamed = await httpProbe(spec(target, { tlsServerName: 'web.internal' }), roots);
    expect(misnamed.status).toBe('critical');
    expect(misnamed.output).toMatch(
      /^Get "https:\/\/localhost:\d+\/": tls: failed to verify certificate: x509: certificate is valid for .*localhost.*, not web\.internal$/,
    );
  });

  it('sends TLSServerName as the server name, in place of the URL host', async () => {
    names.length = 0;
    await httpProbe(spec(`https://localhost:${port}/`, { tlsSkipVerify: true, tlsServerName: 'web.internal' }));
    await httpProbe(spec(`https://localhost:${port}/`, { tlsSkipVerify: true }));
    expect(names).toEqual(['web.internal', 'localhost']);
  });
});
