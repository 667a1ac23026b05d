// One sidecar pair under many connections: 5,000 concurrent long connections through web's
// upstream listener and db's sidecar, each echoing before and after all are open; and a web
// sidecar started with too few descriptors for what it is asked, which refuses what it cannot take,
// never exits, and serves again once connections close.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasPrlimit } from '../support/open-files.js';
import { startAgent, type AgentProcess } from './support/agent-process.js';
import { freePort, startProxy } from './support/proxy-process.js';

const LONG_CONNECTIONS = 5_000;
/**
 * Opened at once: enough to keep both sidecars busy, few enough that on a loaded host no handshake
 * waits in the queue past db's handshake timeout (a CI run beside other work lost 3 of 250-wide waves).
 */
const OPENING_BATCH = 100;
/** db's sidecar gives a handshake this long: what is tested here is holding connections, not cutting slow ones. */
const HANDSHAKE_TIMEOUT_MS = 120_000;
/** The starved sidecar is asked in waves this wide, so some are served before its descriptors run out. */
const STARVED_WAVE = 16;
/** The starved sidecar's open-files limit: room for its agent watches and a few dozen connections. */
const STARVED_NOFILE = 128;

/** Writes on an open connection and resolves with the echo (or what came before it closed). */
function echo(socket: Socket, text: string): Promise<string> {
  return new Promise((resolve) => {
    let read = '';
    const onData = (chunk: Buffer): void => {
      read += chunk.toString();
      if (read.length >= text.length) done();
    };
    const done = (): void => {
      socket.off('data', onData);
      socket.off('close', done);
      resolve(read);
    };
    socket.on('data', onData);
    socket.once('close', done);
    socket.write(text);
  });
}

/** A connection to `port` that echoed `text`, or undefined when it was refused or closed. */
async function open(port: number, text: string): Promise<Socket | undefined> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  try {
    await once(socket, 'connect');
  } catch {
    return undefined;
  }
  if ((await echo(socket, text)) === text) return socket;
  socket.destroy();
  return undefined;
}

describe('a sidecar pair under many connections', () => {
  let agent: AgentProcess;
  let app: Server;
  const proxies: ChildProcess[] = [];
  const upstream: Record<string, number> = {};

  beforeAll(async () => {
    agent = await startAgent();
    app = createServer((socket) => socket.pipe(socket));
    app.maxConnections = LONG_CONNECTIONS * 2;
    await new Promise<void>((resolve) => app.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, resolve));
    const put = async (path: string, body: unknown): Promise<void> => {
      const res = await fetch(`${agent.url}${path}`, { method: 'PUT', body: JSON.stringify(body) });
      expect(res.status, `${path}: ${await res.clone().text()}`).toBe(200);
    };
    const checks = [{ Name: 'proxy up', TTL: '1h', Status: 'passing' }];
    await put('/v1/agent/service/register', {
      Name: 'db',
      Port: (app.address() as AddressInfo).port,
      Connect: {
        SidecarService: {
          Port: await freePort(),
          Checks: checks,
          Proxy: { Config: { bind_address: '127.0.0.1', handshake_timeout_ms: HANDSHAKE_TIMEOUT_MS } },
        },
      },
    });
    for (const web of ['web', 'starved']) {
      upstream[web] = await freePort();
      await put('/v1/agent/service/register', {
        Name: web,
        Port: 1,
        Connect: {
          SidecarService: {
            Port: await freePort(),
            Checks: checks,
            Proxy: { Upstreams: [{ DestinationName: 'db', LocalBindPort: upstream[web] }] },
          },
        },
      });
    }
    proxies.push((await startProxy(agent, 'db')).child, (await startProxy(agent, 'web')).child);
  });
  afterAll(async () => {
    for (const proxy of proxies) proxy.kill('SIGKILL');
    app?.close();
    await agent?.stop();
  });

  it(
    `holds ${LONG_CONNECTIONS} concurrent long connections, each echoing before and after all are open`,
    { timeout: 300_000 },
    async () => {
      const sockets: Socket[] = [];
      let refused = 0;
      for (let i = 0; i < LONG_CONNECTIONS; i += OPENING_BATCH) {
        const batch = await Promise.all(
          Array.from({ length: Math.min(OPENING_BATCH, LONG_CONNECTIONS - i) }, (_, j) =>
            open(upstream.web!, `o${i + j}`),
          ),
        );
        for (const socket of batch)
          if (socket === undefined) refused++;
          else sockets.push(socket);
      }
      expect(refused).toBe(0);
      expect(sockets).toHaveLength(LONG_CONNECTIONS);
      const again = await Promise.all(sockets.map((socket, i) => echo(socket, `a${i}`)));
      expect(again.filter((text, i) => text !== `a${i}`)).toEqual([]);
      for (const socket of sockets) socket.destroy();
      for (const proxy of proxies) expect(proxy.exitCode).toBeNull();
    },
  );

  it.runIf(hasPrlimit)(
    'refuses what it cannot take when out of descriptors, never exits, and serves again after',
    async () => {
      const starved = (await startProxy(agent, 'starved', [], { nofile: STARVED_NOFILE })).child;
      proxies.push(starved);
      // Far more than its descriptors allow (each connection takes two: the client's and db's), in
      // waves: all at once, a loaded host can let it accept every one before it dials any.
      const attempts: (Socket | undefined)[] = [];
      for (let i = 0; i < STARVED_NOFILE * 2; i += STARVED_WAVE) {
        const wave = Array.from({ length: STARVED_WAVE }, (_, j) => open(upstream.starved!, `s${i + j}`));
        attempts.push(...(await Promise.all(wave)));
      }
      const held = attempts.filter((socket): socket is Socket => socket !== undefined);
      expect(held.length).toBeGreaterThan(0);
      expect(held.length).toBeLessThan(attempts.length);
      expect(starved.exitCode).toBeNull();
      for (const socket of held) socket.destroy();
      // Once its descriptors are back, a new connection is served.
      let served: Socket | undefined;
      let tries = 0;
      while (served === undefined && tries++ < 50) {
        served = await open(upstream.starved!, 'after');
        if (served === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(served).toBeDefined();
      served?.destroy();
      expect(starved.exitCode).toBeNull();
    },
  );
});
