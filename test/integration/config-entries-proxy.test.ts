// The built-in proxy takes its defaults from central config (docs/decisions.md#config-entries): a
// sidecar started with -sidecar-for picks up a proxy-defaults entry written after it started (its
// public listener is opened again with the new handshake timeout), and a client that never
// completes its TLS handshake is then cut after that timeout, not the default 10 s.
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from './support/agent-process.js';
import { exchange, freePort, startProxy, type ProxyProcess } from './support/proxy-process.js';

/** Resolves once the proxy has said `text` a second time (its public listener opened again). */
function saidTwice(proxy: ProxyProcess, text: string): Promise<void> {
  return new Promise((resolve) => {
    const check = (): void => {
      if (proxy.stderr().split(text).length - 1 < 2) return;
      proxy.child.stderr!.off('data', check);
      resolve();
    };
    proxy.child.stderr!.on('data', check);
    check();
  });
}

describe('the built-in proxy reads proxy-defaults', () => {
  let agent: AgentProcess;
  let app: Server;
  let proxy: ProxyProcess;
  let publicPort: number;
  let upstreamPort: number;

  const put = async (path: string, body: unknown): Promise<string> => {
    const res = await fetch(`${agent.url}${path}`, { method: 'PUT', body: JSON.stringify(body) });
    const text = await res.text();
    expect(res.status, `${path}: ${text}`).toBe(200);
    return text;
  };

  beforeAll(async () => {
    agent = await startAgent();
    app = createServer((socket) => socket.pipe(socket));
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    [publicPort, upstreamPort] = [await freePort(), await freePort()];
    await put('/v1/agent/service/register', {
      Name: 'web',
      Port: (app.address() as AddressInfo).port,
      Connect: {
        SidecarService: {
          Port: publicPort,
          Checks: [{ Name: 'proxy up', TTL: '1h', Status: 'passing' }],
          Proxy: {
            Config: { bind_address: '127.0.0.1' },
            Upstreams: [{ DestinationName: 'web', LocalBindPort: upstreamPort }],
          },
        },
      },
    });
    proxy = await startProxy(agent, 'web');
  });
  afterAll(async () => {
    proxy?.child.kill('SIGKILL');
    app?.close();
    await agent?.stop();
  });

  it('applies a handshake timeout written as proxy-defaults after it started', async () => {
    expect(await exchange(upstreamPort, 'before')).toBe('before');
    const reopened = saidTwice(proxy, 'public listener started');
    expect(
      await put('/v1/config', { Kind: 'proxy-defaults', Name: 'global', Config: { handshake_timeout_ms: 300 } }),
    ).toBe('true');
    await reopened;
    // A client that never speaks TLS is cut by the proxy (the default would hold it 10 s, past this test's time).
    const socket = connect(publicPort, '127.0.0.1');
    await once(socket, 'connect');
    await once(socket, 'close');
    // The mesh still works through the reopened listener.
    expect(await exchange(upstreamPort, 'after')).toBe('after');
  });
});
