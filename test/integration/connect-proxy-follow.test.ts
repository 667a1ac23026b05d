// A sidecar started with -sidecar-for follows its registration as it changes (blocking on its
// ContentHash): an upstream added opens a listener that serves, a removed one stops taking
// connections while an established one drains; a new local service port takes new connections;
// a new public port is bound again and web's sidecar reaches db there; a new destination service
// (DestinationServiceName) is served with its own leaf, web reaching it as that service.
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from './support/agent-process.js';
import { exchange, freePort, startProxy, type ProxyProcess } from './support/proxy-process.js';

/** An echo application counting the connections it accepted. */
async function echoApp(): Promise<{ server: Server; port: number; accepted: () => number }> {
  let accepted = 0;
  const server = createServer((socket) => {
    accepted++;
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, accepted: () => accepted };
}

describe('the sidecar follows its registration', () => {
  let agent: AgentProcess;
  let apps: Awaited<ReturnType<typeof echoApp>>[];
  let web: ProxyProcess;
  let db: ProxyProcess;
  let firstUpstream: number;

  const put = async (path: string, body: unknown): Promise<void> => {
    const res = await fetch(`${agent.url}${path}`, { method: 'PUT', body: JSON.stringify(body) });
    expect(res.status, `${path}: ${await res.clone().text()}`).toBe(200);
  };
  // A passing TTL check in place of Consul's default TCP check (its first run comes before the proxy listens).
  const register = (name: string, port: number, sidecarPort: number, upstreams: unknown[] = []): Promise<void> =>
    put('/v1/agent/service/register', {
      Name: name,
      Port: port,
      Connect: {
        SidecarService: {
          Port: sidecarPort,
          Checks: [{ Name: 'proxy up', TTL: '1h', Status: 'passing' }],
          Proxy: { Config: { bind_address: '127.0.0.1' }, Upstreams: upstreams },
        },
      },
    });
  const upstream = (port: number): { DestinationName: string; LocalBindPort: number } => ({
    DestinationName: 'db',
    LocalBindPort: port,
  });
  let dbPublic: number;
  let webPublic: number;

  beforeAll(async () => {
    agent = await startAgent();
    apps = [await echoApp(), await echoApp()];
    [firstUpstream, dbPublic, webPublic] = [await freePort(), await freePort(), await freePort()];
    await register('db', apps[0]!.port, dbPublic);
    await register('web', 1, webPublic, [upstream(firstUpstream)]);
    // A long drain: the connection held through a removed upstream must outlive the test.
    db = await startProxy(agent, 'db');
    web = await startProxy(agent, 'web', ['-drain', '600000']);
    expect(await exchange(firstUpstream, 'first')).toBe('first');
  });
  afterAll(async () => {
    for (const proxy of [web, db]) proxy?.child.kill('SIGKILL');
    for (const app of apps ?? []) app.server.close();
    await agent?.stop();
  });

  it('opens an upstream listener added to the registration, and closes a removed one while its connection drains', async () => {
    const held: Socket = connect(firstUpstream, '127.0.0.1');
    held.on('error', () => {});
    await once(held, 'connect');
    held.write('held');
    expect(((await once(held, 'data')) as [Buffer])[0].toString()).toBe('held');

    const added = await freePort();
    await register('web', 1, webPublic, [upstream(added)]);
    await web.said(`upstream listener started address=127.0.0.1:${added}`);
    await web.said(`upstream listener closed address=127.0.0.1:${firstUpstream}`);
    expect(await exchange(added, 'added')).toBe('added');
    expect(await exchange(firstUpstream, 'removed?')).toBe('');
    held.write('still');
    expect(((await once(held, 'data')) as [Buffer])[0].toString()).toBe('still');
    held.destroy();
    firstUpstream = added;
  });

  it("sends new connections to the local application's new port", async () => {
    const before = apps[1]!.accepted();
    await register('db', apps[1]!.port, dbPublic);
    await db.said(`the local application moved service=db address=127.0.0.1:${apps[1]!.port}`);
    expect(await exchange(firstUpstream, 'moved')).toBe('moved');
    expect(apps[1]!.accepted()).toBe(before + 1);
  });

  it('binds the public listener again when its port changes, and web reaches db there', async () => {
    const moved = await freePort();
    await register('db', apps[1]!.port, moved);
    await db.said(`public listener started address=127.0.0.1:${moved}`);
    await db.said('public listener closed');
    const old = connect(dbPublic, '127.0.0.1');
    expect(((await once(old, 'error')) as [NodeJS.ErrnoException])[0].code).toBe('ECONNREFUSED');
    // web's sidecar learns the new port from health/connect's blocking answer, which may come just
    // after db's sidecar rebinds: until then a dial reaches the old port and is refused.
    while ((await exchange(firstUpstream, 'rebound')) !== 'rebound');
  });

  it('serves as a new destination service with its leaf, and web reaches it by that name', async () => {
    const public2 = await freePort();
    await put('/v1/agent/service/register', {
      Kind: 'connect-proxy',
      ID: 'db-sidecar-proxy',
      Name: 'db2-sidecar-proxy',
      Port: public2,
      Checks: [{ Name: 'proxy up', TTL: '1h', Status: 'passing' }],
      Proxy: {
        DestinationServiceName: 'db2',
        LocalServiceAddress: '127.0.0.1',
        LocalServicePort: apps[0]!.port,
        Config: { bind_address: '127.0.0.1' },
      },
    });
    await db.said('the destination service changed: serving as the new one service=db registered=db2');
    await db.said(`public listener started address=127.0.0.1:${public2} service=db2`);
    const toDb2 = await freePort();
    await register('web', 1, webPublic, [upstream(firstUpstream), { DestinationName: 'db2', LocalBindPort: toDb2 }]);
    await web.said(`upstream listener started address=127.0.0.1:${toDb2}`);
    const before = apps[0]!.accepted();
    expect(await exchange(toDb2, 'as db2')).toBe('as db2');
    expect(apps[0]!.accepted()).toBe(before + 1);
    // No instance serves as db any longer: web's upstream to db is refused, db2's leaf not db's.
    expect(await exchange(firstUpstream, 'as db?')).toBe('');
  });
});
