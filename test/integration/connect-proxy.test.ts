// The built-in proxy (`svc-agent connect proxy -sidecar-for`) end to end on one agent: web's
// sidecar takes plain TCP on its upstream listener and carries it through the mesh to db's
// sidecar, which pipes it to db's application; an intention turned to deny refuses new
// connections, and the application sees none of them; their metrics count it; SIGTERM stops both
// proxies cleanly.
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from './support/agent-process.js';
import { exchange, freePort, startProxy, type ProxyProcess } from './support/proxy-process.js';

/** A proxy's metrics, by series (`name{labels}`). */
async function scrape(port: number): Promise<Map<string, number>> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(res.status).toBe(200);
  const series = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    const m = /^([^#\s][^ ]*) (\S+)$/.exec(line);
    if (m !== null) series.set(m[1]!, Number(m[2]));
  }
  return series;
}

describe('svc-agent connect proxy', () => {
  let agent: AgentProcess;
  let app: Server;
  let accepted = 0;
  let upstreamPort: number;
  let metricsPorts: { db: number; web: number };
  let dbPublicPort: number;
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
      Connect: { SidecarService: await sidecar((dbPublicPort = await freePort())) },
    });
    await put('/v1/agent/service/register', {
      Name: 'web',
      Port: 1,
      Connect: {
        SidecarService: await sidecar(await freePort(), [{ DestinationName: 'db', LocalBindPort: upstreamPort }]),
      },
    });
    metricsPorts = { db: await freePort(), web: await freePort() };
    proxies.push(
      await startProxy(agent, 'db', ['-metrics-addr', `127.0.0.1:${metricsPorts.db}`]),
      await startProxy(agent, 'web', ['-metrics-addr', `127.0.0.1:${metricsPorts.web}`]),
    );
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
    // db's sidecar reuses web's allow until its watch of the intentions answers; the close of a
    // connection held open through the change is the sign that it has (the next test's subject).
    const held = connect(upstreamPort, '127.0.0.1');
    held.on('error', () => {});
    await once(held, 'connect');
    held.write('held');
    await once(held, 'data');
    const seen = once(held, 'close');
    await put('/v1/connect/intentions/exact?source=web&destination=db', { Action: 'deny' });
    await seen;
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

  it('serves Prometheus metrics on -metrics-addr: accepted, refused by reason, bytes, handshake and authorize latency', async () => {
    const [db, web] = [await scrape(metricsPorts.db), await scrape(metricsPorts.web)];
    expect(await exchange(upstreamPort, 'counted')).toBe('counted');
    // Not TLS: refused at the handshake, which is not timed.
    const plain = connect(dbPublicPort, '127.0.0.1', () => plain.write('GET / HTTP/1.0\r\n\r\n'));
    plain.on('error', () => {});
    await once(plain, 'close');
    const [dbAfter, webAfter] = [await scrape(metricsPorts.db), await scrape(metricsPorts.web)];
    const moved = (before: Map<string, number>, after: Map<string, number>, series: string): number =>
      (after.get(series) ?? NaN) - (before.get(series) ?? 0);
    expect(moved(db, dbAfter, 'svc_proxy_connections_accepted_total{listener="public"}')).toBe(1);
    expect(moved(db, dbAfter, 'svc_proxy_connections_refused_total{reason="handshake"}')).toBe(1);
    expect(moved(db, dbAfter, 'svc_proxy_connections_refused_total{reason="denied"}')).toBe(0);
    // Since start: the tests above had connections refused, and two closed (one each), on a deny.
    expect(dbAfter.get('svc_proxy_connections_refused_total{reason="denied"}')).toBeGreaterThanOrEqual(2);
    expect(dbAfter.get('svc_proxy_connections_closed_total{reason="denied"}')).toBe(2);
    expect(moved(db, dbAfter, 'svc_proxy_bytes_total{direction="in"}')).toBe('counted'.length);
    expect(moved(db, dbAfter, 'svc_proxy_bytes_total{direction="out"}')).toBe('counted'.length);
    expect(moved(db, dbAfter, 'svc_proxy_handshake_seconds_count')).toBe(1);
    expect(moved(db, dbAfter, 'svc_proxy_authorize_seconds_count')).toBe(1);
    expect(dbAfter.get('svc_proxy_connections_active')).toBeGreaterThanOrEqual(0);
    expect(moved(web, webAfter, 'svc_proxy_connections_accepted_total{listener="upstream"}')).toBeGreaterThanOrEqual(1);
    expect(webAfter.has('process_cpu_seconds_total')).toBe(true);
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
