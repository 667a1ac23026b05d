// The built-in proxy (`svc-agent connect proxy -sidecar-for`) end to end on one agent: web's
// sidecar takes plain TCP on its upstream listener and carries it through the mesh to db's
// sidecar, which pipes it to db's application; an intention turned to deny refuses new
// connections, and the application sees none of them; SIGTERM stops both proxies cleanly.
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from './support/agent-process.js';
import { exchange, freePort, startProxy, type ProxyProcess } from './support/proxy-process.js';

describe('svc-agent connect proxy', () => {
  let agent: AgentProcess;
  let app: Server;
  let accepted = 0;
  let upstreamPort: number;
  const proxies: ProxyProcess[] = [];

  const put = async (path: string, body: unknown): Promise<void> => {
    const res = await fetch(`${agent.url}${path}`, { method: 'PUT', body: JSON.stringify(body) });
    expect(res.status, `${path}: ${await res.clone().text()}`).toBe(200);
  };

  beforeAll(async () => {
    agent = await startAgent();
    app = createServer((socket) => {
      accepted++;
      socket.pipe(socket);
    });
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    upstreamPort = await freePort();
    // A passing TTL check in place of Consul's default TCP check, whose first run comes before the
    // proxy listens and whose next one is 10 s later: the sidecar is dialled once it passes.
    const sidecar = async (port: number, upstreams: unknown[] = []): Promise<unknown> => ({
      Port: port,
      Checks: [{ Name: 'proxy up', TTL: '1h', Status: 'passing' }],
      Proxy: { Config: { bind_address: '127.0.0.1' }, Upstreams: upstreams },
    });
    await put('/v1/agent/service/register', {
      Name: 'db',
      Port: (app.address() as AddressInfo).port,
      Connect: { SidecarService: await sidecar(await freePort()) },
    });
    await put('/v1/agent/service/register', {
      Name: 'web',
      Port: 1,
      Connect: {
        SidecarService: await sidecar(await freePort(), [{ DestinationName: 'db', LocalBindPort: upstreamPort }]),
      },
    });
    proxies.push(await startProxy(agent, 'db'), await startProxy(agent, 'web'));
  });
  afterAll(async () => {
    for (const proxy of proxies) proxy.child.kill('SIGKILL');
    app.close();
    await agent.stop();
  });

  it("carries a connection from web's upstream listener to db's application through the mesh", async () => {
    expect(await exchange(upstreamPort, 'ping')).toBe('ping');
    expect(accepted).toBe(1);
  });

  it('refuses new connections once an intention denies web -> db, the application seeing none; allows again after', async () => {
    await put('/v1/connect/intentions/exact?source=web&destination=db', { Action: 'deny' });
    const before = accepted;
    expect(await exchange(upstreamPort, 'denied?')).toBe('');
    expect(accepted).toBe(before);
    await put('/v1/connect/intentions/exact?source=web&destination=db', { Action: 'allow' });
    expect(await exchange(upstreamPort, 'again')).toBe('again');
  });

  it('closes an established connection once an intention denies web -> db, new ones refused; allowed again after', async () => {
    const socket = connect(upstreamPort, '127.0.0.1');
    socket.on('error', () => {});
    await once(socket, 'connect');
    socket.write('held');
    expect(((await once(socket, 'data')) as [Buffer])[0].toString()).toBe('held');
    const closed = once(socket, 'close');
    await put('/v1/connect/intentions/exact?source=web&destination=db', { Action: 'deny' });
    await closed;
    expect(await exchange(upstreamPort, 'denied?')).toBe('');
    await put('/v1/connect/intentions/exact?source=web&destination=db', { Action: 'allow' });
    expect(await exchange(upstreamPort, 'allowed')).toBe('allowed');
  });

  it('stops on SIGTERM with exit status 0', async () => {
    for (const proxy of proxies) {
      const exited = once(proxy.child, 'exit');
      proxy.child.kill('SIGTERM');
      expect((await exited)[0]).toBe(0);
      expect(proxy.stderr()).toContain('SIGTERM: draining');
    }
  });
});
