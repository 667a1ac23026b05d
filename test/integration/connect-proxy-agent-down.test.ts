// The sidecars with their agent killed: established connections carry on, and new ones are served
// with what the sidecars hold (the leaf, the roots, db's instances, and the decision the agent last
// gave for web -> db); once the agent is back (same data dir and port), both sidecars follow it
// again: a CA rotation reaches db's sidecar as a new leaf. Every exchange is counted: none may fail.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, tempDir, type AgentProcess } from './support/agent-process.js';
import { exchange, freePort, startProxy } from './support/proxy-process.js';

/** Writes on an open connection and resolves with the echo. */
async function echo(socket: Socket, text: string): Promise<string> {
  socket.write(text);
  let read = '';
  while (read.length < text.length) read += ((await once(socket, 'data')) as [Buffer])[0].toString();
  return read;
}

describe('the sidecars while their agent is killed, and after it returns', () => {
  let data: Awaited<ReturnType<typeof tempDir>>;
  let agent: AgentProcess;
  let agentPort: number;
  let app: Server;
  let accepted = 0;
  let upstreamPort: number;
  let dbPublicPort: number;
  const proxies: ChildProcess[] = [];
  const start = (): Promise<AgentProcess> =>
    startAgent({ dataDir: data.path, port: agentPort, config: { connect: { leaf_root_change_spread: '0s' } } });
  const put = async (path: string, body: unknown): Promise<void> => {
    const res = await fetch(`${agent.url}${path}`, { method: 'PUT', body: JSON.stringify(body) });
    expect(res.status, `${path}: ${await res.clone().text()}`).toBe(200);
  };
  /** The certificate db's sidecar presents now (its leaf), read with web's leaf. */
  const dbLeafFingerprint = async (): Promise<string> => {
    const leaf = (await (await fetch(`${agent.url}/v1/agent/connect/ca/leaf/web`)).json()) as {
      CertPEM: string;
      PrivateKeyPEM: string;
    };
    const socket = tlsConnect({
      port: dbPublicPort,
      host: '127.0.0.1',
      cert: leaf.CertPEM,
      key: leaf.PrivateKeyPEM,
      rejectUnauthorized: false,
    });
    await once(socket, 'secureConnect');
    const fingerprint = socket.getPeerCertificate().fingerprint256;
    socket.destroy();
    return fingerprint;
  };

  beforeAll(async () => {
    data = await tempDir();
    agentPort = await freePort();
    agent = await start();
    app = createServer((socket) => {
      accepted++;
      socket.pipe(socket);
    });
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    upstreamPort = await freePort();
    dbPublicPort = await freePort();
    const checks = [{ Name: 'proxy up', TTL: '1h', Status: 'passing' }];
    await put('/v1/agent/service/register', {
      Name: 'db',
      Port: (app.address() as AddressInfo).port,
      Connect: {
        SidecarService: { Port: dbPublicPort, Checks: checks, Proxy: { Config: { bind_address: '127.0.0.1' } } },
      },
    });
    await put('/v1/agent/service/register', {
      Name: 'web',
      Port: 1,
      Connect: {
        SidecarService: {
          Port: await freePort(),
          Checks: checks,
          Proxy: { Upstreams: [{ DestinationName: 'db', LocalBindPort: upstreamPort }] },
        },
      },
    });
    await put('/v1/connect/intentions/exact?source=web&destination=db', { Action: 'allow' });
    for (const service of ['db', 'web']) proxies.push((await startProxy(agent, service)).child);
  });
  afterAll(async () => {
    for (const proxy of proxies) proxy.kill('SIGKILL');
    app?.close();
    await agent?.stop();
    await data?.remove();
  });

  it('serves established and new connections with the agent killed, and follows a rotation once it is back', async () => {
    expect(await exchange(upstreamPort, 'first')).toBe('first');
    const long = connect(upstreamPort, '127.0.0.1');
    await once(long, 'connect');
    expect(await echo(long, 'before the kill')).toBe('before the kill');
    const before = await dbLeafFingerprint();

    await agent.stop('SIGKILL');
    expect(await echo(long, 'agent gone')).toBe('agent gone');
    const served = accepted;
    for (let i = 0; i < 5; i++) expect(await exchange(upstreamPort, `new ${i}`)).toBe(`new ${i}`);
    expect(accepted).toBe(served + 5);
    for (const proxy of proxies) expect(proxy.exitCode).toBeNull();

    agent = await start();
    await put('/v1/connect/ca/configuration', {
      Provider: 'consul',
      Config: { PrivateKeyType: 'ec', PrivateKeyBits: 384 },
    });
    // db's sidecar takes its new leaf from its blocking query once its watch finds the agent again.
    let exchanges = 0;
    while ((await dbLeafFingerprint()) === before) {
      expect(await exchange(upstreamPort, `during ${exchanges}`)).toBe(`during ${exchanges}`);
      exchanges++;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await echo(long, 'after')).toBe('after');
    expect(await exchange(upstreamPort, 'last')).toBe('last');
    long.destroy();
  });
});
