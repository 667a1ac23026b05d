// `connect proxy -service db -listen … -register`, as Consul's proxy registers itself: a
// connect-proxy service `db-proxy` at the public listener, with a passing "proxy heartbeat" TTL
// check, that health/connect offers to dialers and web reaches db through; the registration is
// made again when the agent loses it, and removed when the proxy stops.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectService } from '../../src/sdk/index.js';
import { startAgent, type AgentProcess } from './support/agent-process.js';
import { freePort, runProxy } from './support/proxy-process.js';

describe('connect proxy -register', () => {
  let agent: AgentProcess;
  let app: Server;
  let proxy: ChildProcess;
  let listenPort: number;
  let stderr: () => string = () => '';
  let web: ConnectService;

  const get = async <T>(path: string): Promise<{ status: number; body: T }> => {
    const res = await fetch(`${agent.url}${path}`);
    return { status: res.status, body: (res.status === 200 ? await res.json() : undefined) as T };
  };

  beforeAll(async () => {
    agent = await startAgent();
    app = createServer((socket) => socket.pipe(socket));
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    listenPort = await freePort();
    const running = await runProxy([
      '-service',
      'db',
      '-listen',
      `127.0.0.1:${listenPort}`,
      '-service-addr',
      `127.0.0.1:${(app.address() as AddressInfo).port}`,
      '-register',
      '-http-addr',
      agent.url,
    ]);
    proxy = running.child;
    stderr = running.stderr;
    web = new ConnectService({ name: 'web', address: agent.url });
  });
  afterAll(async () => {
    web?.close();
    proxy?.kill('SIGKILL');
    app?.close();
    await agent?.stop();
  });

  it('is a connect-proxy service at its public listener with a passing heartbeat check, dialled through health/connect', async () => {
    const reg = await get<{
      Kind: string;
      Service: string;
      Address: string;
      Port: number;
      Proxy: { DestinationServiceName: string };
    }>('/v1/agent/service/db-proxy');
    expect(reg.status).toBe(200);
    expect(reg.body).toMatchObject({
      Kind: 'connect-proxy',
      Service: 'db-proxy',
      Address: '127.0.0.1',
      Port: listenPort,
      Proxy: { DestinationServiceName: 'db' },
    });
    const checks = await get<Record<string, { Name: string; Status: string; ServiceID: string }>>('/v1/agent/checks');
    expect(checks.body['db-proxy-ttl']).toMatchObject({
      Name: 'proxy heartbeat',
      Status: 'passing',
      ServiceID: 'db-proxy',
    });
    // Anti-entropy puts it in the catalog: wait for health/connect to offer it (a blocking query).
    let index = '0';
    for (;;) {
      const res = await fetch(`${agent.url}/v1/health/connect/db?passing&index=${index}&wait=5s`);
      index = res.headers.get('X-Consul-Index') ?? '0';
      if (((await res.json()) as unknown[]).length > 0) break;
    }
    const socket = await web.dial('db');
    socket.write('registered');
    expect(((await once(socket, 'data')) as [Buffer])[0].toString()).toBe('registered');
    socket.end();
  });

  it('registers again when the agent loses the registration, and deregisters on SIGTERM', async () => {
    const gone = await fetch(`${agent.url}/v1/agent/service/deregister/db-proxy`, { method: 'PUT' });
    expect(gone.status).toBe(200);
    // The next heartbeat finds its check gone and registers again: wait for the log line.
    const logged = stderr().split('registered the proxy').length - 1;
    while (stderr().split('registered the proxy').length - 1 === logged) await once(proxy.stderr!, 'data');
    expect((await get('/v1/agent/service/db-proxy')).status).toBe(200);
    const exited = once(proxy, 'exit');
    proxy.kill('SIGTERM');
    expect((await exited)[0]).toBe(0);
    expect((await get('/v1/agent/service/db-proxy')).status).toBe(404);
  });
});
