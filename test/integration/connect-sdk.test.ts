// The Connect-native SDK (svc-agent/connect) against a real agent over its HTTP API: a service's
// server hands the application only connections that verify and that authorize allows; a dial
// reaches a passing instance and checks that the server is the service asked for.
import { once } from 'node:events';
import { createServer as createHttpServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect as tlsConnect, type Server, type TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectService } from '../../src/sdk/index.js';
import { startAgent, type AgentProcess } from './support/agent-process.js';
import { makeTlsFiles, type TlsFiles } from '../support/tls-files.js';
import { readFileSync } from 'node:fs';

/** Resolves when the socket closes; with what it had read. */
function drained(socket: TLSSocket): Promise<string> {
  return new Promise((resolve) => {
    let read = '';
    socket.on('data', (chunk: Buffer) => (read += chunk.toString()));
    socket.on('error', () => {});
    socket.on('close', () => resolve(read));
  });
}

describe('the Connect-native SDK', () => {
  let agent: AgentProcess;
  let db: ConnectService;
  let web: ConnectService;
  let other: ConnectService;
  let dbServer: Server;
  let otherServer: Server;
  let accepted: string[];
  let files: TlsFiles;

  const put = async (path: string, body: unknown): Promise<void> => {
    const res = await fetch(`${agent.url}${path}`, { method: 'PUT', body: JSON.stringify(body) });
    expect(res.status, `${path}: ${await res.clone().text()}`).toBe(200);
  };
  const register = (name: string, port: number): Promise<void> =>
    put('/v1/agent/service/register', { Name: name, Port: port, Address: '127.0.0.1', Connect: { Native: true } });

  beforeAll(async () => {
    agent = await startAgent();
    files = await makeTlsFiles();
    accepted = [];
    const address = { address: agent.url };
    db = new ConnectService({ name: 'db', ...address });
    web = new ConnectService({ name: 'web', ...address });
    other = new ConnectService({ name: 'other', ...address });
    dbServer = await db.listen(0, '127.0.0.1', (socket, client) => {
      accepted.push(client);
      socket.pipe(socket);
    });
    // `other` serves too: a dial that reaches it while asking for another service must refuse it.
    otherServer = await other.listen(0, '127.0.0.1', (socket) => socket.end());
    await register('db', (dbServer.address() as AddressInfo).port);
    await register('impostor', (otherServer.address() as AddressInfo).port);
    await put('/v1/connect/intentions/exact?source=other&destination=db', { Action: 'deny' });
  });
  afterAll(async () => {
    for (const service of [db, web, other]) service.close();
    await files.remove();
    await agent.stop();
  });

  it('carries bytes from a dialling service to the one it dials, after authorize allowed it', async () => {
    await web.ready;
    const socket = await web.dial('db');
    socket.write('ping');
    const [echo] = (await once(socket, 'data')) as [Buffer];
    expect(echo.toString()).toBe('ping');
    socket.end();
    expect(accepted).toEqual([expect.stringMatching(/^spiffe:\/\/[^/]+\/ns\/default\/dc\/dc1\/svc\/web$/)]);
    expect(db.stats.accepted).toBe(1);
  });

  it('destroys a connection an intention denies before the application sees it', async () => {
    const before = accepted.length;
    const socket = await other.dial('db'); // the handshake completes; authorize then refuses it
    socket.write('let me in');
    expect(await drained(socket)).toBe('');
    expect(accepted.length).toBe(before);
    expect(db.stats.refused.denied).toBe(1);
  });

  it('refuses a client without a certificate, or with one from another CA, in the handshake', async () => {
    const before = accepted.length;
    const port = (dbServer.address() as AddressInfo).port;
    const roots = db.contextOptions().ca;
    const attempts = [{}, { cert: readFileSync(files.clientCertFile), key: readFileSync(files.clientKeyFile) }];
    for (const identity of attempts) {
      const socket = tlsConnect({
        host: '127.0.0.1',
        port,
        ca: roots,
        checkServerIdentity: () => undefined,
        ...identity,
      });
      const read = drained(socket);
      socket.on('secureConnect', () => socket.write('hello'));
      expect(await read).toBe('');
    }
    expect(accepted.length).toBe(before);
    expect(db.stats.refused.handshake).toBe(2);
  });

  it('refuses to dial an instance whose certificate names another service', async () => {
    await expect(web.dial('impostor')).rejects.toThrow(/the server is spiffe:\/\/.*\/svc\/other, not impostor/);
    expect(web.stats.dialFailures).toBe(1);
  });

  it('carries HTTP through the mesh: an http.Agent on the client, an http.Server fed admitted sockets', async () => {
    const api = new ConnectService({ name: 'api', address: agent.url });
    const http = createHttpServer((req, res) => res.end(`hello ${req.url ?? ''}`));
    const server = await api.listen(0, '127.0.0.1', (socket) => http.emit('connection', socket));
    await register('api', (server.address() as AddressInfo).port);
    const agentForApi = web.httpAgent('api');
    try {
      const body = await new Promise<string>((resolve, reject) => {
        httpRequest({ agent: agentForApi, path: '/greeting' }, (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => resolve(text));
        })
          .on('error', reject)
          .end();
      });
      expect(body).toBe('hello /greeting');
    } finally {
      agentForApi.destroy();
      http.close();
      api.close();
    }
  });

  it('keeps established connections through a CA rotation, and verifies new ones with the new leaf', async () => {
    const established = await web.dial('db');
    const echo = async (socket: TLSSocket, text: string): Promise<string> => {
      socket.write(text);
      const [chunk] = (await once(socket, 'data')) as [Buffer];
      return chunk.toString();
    };
    expect(await echo(established, 'before')).toBe('before');
    const certs = (): unknown[] => [db.contextOptions().cert, web.contextOptions().cert];
    const old = certs();
    await put('/v1/connect/ca/configuration', {
      Provider: 'consul',
      Config: { PrivateKeyType: 'ec', PrivateKeyBits: 384 },
    });
    // Both services take their new leaves from their blocking queries: wait for that event.
    while (certs().some((cert, i) => cert === old[i])) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await echo(established, 'during')).toBe('during');
    const fresh = await web.dial('db');
    expect(await echo(fresh, 'after')).toBe('after');
    expect(fresh.getPeerCertificate().raw.equals(established.getPeerCertificate().raw)).toBe(false);
    established.end();
    fresh.end();
  });

  it('says when no passing instance of a service accepts mesh connections', async () => {
    await expect(web.dial('nowhere')).rejects.toThrow('no passing instance of nowhere accepts mesh connections');
  });
});
