// Consul's gRPC check against a small grpc.health.v1 server over HTTP/2, plain and TLS: the
// service name asked for, SERVING or not, and the TLS options (skip verify, server name as SNI).
import { readFile } from 'node:fs/promises';
import { createSecureServer, createServer, type Http2Server, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { createSecureContext, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grpcProbe } from '../../../src/local/probes/grpc-probe.js';
import type { ProbeSpec } from '../../../src/local/probe-protocol.js';
import { makeTlsFiles, type TlsFiles } from '../../support/tls-files.js';
import { probeSpec } from './probe-spec.js';

const spec = (target: string, more: Partial<ProbeSpec> = {}): ProbeSpec => probeSpec('grpc', target, more);

/** Answers Health/Check: SERVING (1) for every service but `down`, NOT_SERVING (2) for it. */
function answer(stream: ServerHttp2Stream, asked: string[]): void {
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  stream.on('end', () => {
    const body = Buffer.concat(chunks).subarray(5);
    const service = body.length > 2 ? body.subarray(2).toString() : '';
    asked.push(service);
    const message = Buffer.from([0x08, service === 'down' ? 2 : 1]);
    const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, message.length]), message]);
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    stream.end(frame);
  });
}

async function listen(server: Http2Server): Promise<number> {
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return (server.address() as AddressInfo).port;
}

describe('the gRPC check', () => {
  let plain: Http2Server;
  let secure: Http2Server;
  let tls: TlsFiles;
  let plainPort: number;
  let securePort: number;
  const asked: string[] = [];
  const names: (string | false | null)[] = [];

  beforeAll(async () => {
    tls = await makeTlsFiles();
    const [cert, key] = await Promise.all([readFile(tls.certFile), readFile(tls.keyFile)]);
    plain = createServer();
    plain.on('stream', (stream) => answer(stream, asked));
    secure = createSecureServer({ cert, key }) as unknown as Http2Server;
    secure.on('stream', (stream) => {
      names.push((stream.session?.socket as TLSSocket).servername);
      answer(stream, asked);
    });
    [plainPort, securePort] = await Promise.all([listen(plain), listen(secure)]);
  });
  afterAll(async () => {
    await Promise.all([plain, secure].map((s) => new Promise<void>((done) => s.close(() => done()))));
    await tls.remove();
  });

  it('asks for the service after the slash and passes on SERVING only', async () => {
    asked.length = 0;
    const up = `127.0.0.1:${plainPort}/web`;
    expect(await grpcProbe(spec(up))).toEqual({ status: 'passing', output: `gRPC check ${up}: success` });
    const down = `127.0.0.1:${plainPort}/down`;
    expect(await grpcProbe(spec(down))).toEqual({
      status: 'critical',
      output: `gRPC ${down} serving status: NOT_SERVING`,
    });
    expect(await grpcProbe(spec(`127.0.0.1:${plainPort}`))).toMatchObject({ status: 'passing' });
    expect(asked).toEqual(['web', 'down', '']);
  });

  it('with GRPCUseTLS refuses a certificate it cannot verify unless TLSSkipVerify is set', async () => {
    const target = `localhost:${securePort}/web`;
    const refused = await grpcProbe(spec(target, { useTls: true }));
    expect(refused.status).toBe('critical');
    // grpc-go's words, as Consul's check says them.
    expect(refused.output).toBe(
      'rpc error: code = Unavailable desc = connection error: desc = "transport: authentication handshake failed: tls: failed to verify certificate: x509: certificate signed by unknown authority"',
    );
    expect(await grpcProbe(spec(target, { useTls: true, tlsSkipVerify: true }))).toMatchObject({ status: 'passing' });
  });

  it('says a refused connection as grpc-go does', async () => {
    const closed = createServer();
    const port = await listen(closed);
    await new Promise<void>((done) => closed.close(() => done()));
    const target = `127.0.0.1:${port}/web`;
    expect(await grpcProbe(spec(target))).toEqual({
      status: 'critical',
      output: `rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:${port}: connect: connection refused"`,
    });
  });

  it("with GRPCUseTLS verifies against the agent's CA when given it, without TLSSkipVerify", async () => {
    const roots = createSecureContext({ ca: await readFile(tls.caFile) });
    const target = `localhost:${securePort}/web`;
    expect(await grpcProbe(spec(target, { useTls: true }), roots)).toEqual({
      status: 'passing',
      output: `gRPC check ${target}: success`,
    });
  });

  it('sends TLSServerName as the server name, in place of the target host', async () => {
    names.length = 0;
    const target = `localhost:${securePort}/web`;
    await grpcProbe(spec(target, { useTls: true, tlsSkipVerify: true, tlsServerName: 'web.internal' }));
    await grpcProbe(spec(target, { useTls: true, tlsSkipVerify: true }));
    expect(names).toEqual(['web.internal', 'localhost']);
  });
});
