// What the mesh scenario measures, set up on the target and taken down after: an echo application
// in this process, its service and a client service each with a sidecar registration (names under
// the run's prefix), an intention between them, and two `svc-agent connect proxy` children (this
// same binary) serving those sidecars; the client's upstream listener is where the load goes.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ClientError, type ApiClient } from '../../client/api.js';
import { exactIntentionPath } from '../../client/intention.js';
import type { HttpTarget } from '../../../loadgen/http-channel.js';

/** How long a proxy may take to say it runs (its first leaf included), and to exit after SIGTERM. */
const PROXY_START_MS = 30_000;
const PROXY_EXIT_MS = 10_000;
/** Open connections are given this long to end once a proxy is told to stop: the run is over by then. */
const PROXY_DRAIN_MS = 1_000;

export interface MeshPair {
  /** The client sidecar's upstream listener: plain TCP, carried through the mesh to the echo application. */
  readonly upstream: HttpTarget;
  readonly app: string;
  readonly client: string;
  /** The proxies' process ids (echo's sidecar, then the client's). */
  readonly pids: readonly number[];
  /** Connections the echo application accepted. */
  accepted(): number;
  /** Connections the two proxies refused so far, by reason (their svc_proxy_connections_refused_total). */
  refusals(): Promise<Map<string, number>>;
  /** Writes the client -> app intention. */
  intention(action: 'allow' | 'deny'): Promise<void>;
  /** Stops the proxies (SIGTERM) and the application, and removes what the run registered; the proxies that did not exit in time (then killed). */
  close(): Promise<number[]>;
}

/** `svc-agent`'s entry, from this file's place in dist/ (or in src/ under vitest). */
function mainFile(): string {
  const here = fileURLToPath(import.meta.url);
  const root = resolve(dirname(here), '../../../..');
  return join(here.endsWith('.js') ? root : join(root, 'dist'), 'src', 'cli', 'main.js');
}

async function listen(server: Server, port = 0): Promise<number> {
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

/** A port free now, for a listener another process binds. */
async function freePort(): Promise<number> {
  const server = createServer();
  const port = await listen(server);
  server.close();
  await once(server, 'close');
  return port;
}

const REFUSED_SERIES = /^svc_proxy_connections_refused_total\{reason="([^"]+)"\} (\d+)$/gm;

/** A proxy's refusals by reason, read from its metrics listener. */
async function refusalsAt(metricsPort: number): Promise<Map<string, number>> {
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
  const text = await res.text();
  return new Map([...text.matchAll(REFUSED_SERIES)].map(([, reason, n]) => [reason!, Number(n)]));
}

/**
 * Starts `connect proxy -sidecar-for id` with its metrics on `metricsPort`; resolves once it says
 * it runs, rejects with its last line if it exits first.
 */
function startProxy(agent: string, token: string | undefined, id: string, metricsPort: number): Promise<ChildProcess> {
  const metrics = ['-metrics-addr', `127.0.0.1:${metricsPort}`];
  const child = spawn(
    process.execPath,
    [
      mainFile(),
      'connect',
      'proxy',
      '-sidecar-for',
      id,
      '-http-addr',
      agent,
      '-drain',
      String(PROXY_DRAIN_MS),
      ...metrics,
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: token === undefined ? process.env : { ...process.env, SVC_HTTP_TOKEN: token },
    },
  );
  let stderr = '';
  return new Promise((done, fail) => {
    const refuse = (why: string): void => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      const last = stderr.trim().split('\n').at(-1) ?? '';
      fail(new ClientError('CLI_LOADTEST_TARGET', `The proxy for ${id} ${why}${last === '' ? '' : `: ${last}`}`));
    };
    const onExit = (code: number | null): void => refuse(`exited with ${code}`);
    const onData = (chunk: Buffer): void => {
      stderr += chunk.toString();
      if (!stderr.includes(' running\n')) return;
      clearTimeout(timer);
      child.off('exit', onExit);
      // Its later lines (a refused connection each) are read and let go.
      child.stderr!.off('data', onData).resume();
      done(child);
    };
    const timer = setTimeout(() => refuse(`did not start within ${PROXY_START_MS / 1000} s`), PROXY_START_MS);
    child.stderr!.on('data', onData);
    child.once('exit', onExit);
  });
}

/** SIGTERM, then SIGKILL after PROXY_EXIT_MS: whether it exited on the first. */
async function stopProxy(child: ChildProcess): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return true;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const inTime = await Promise.race([
    exited.then(() => true),
    new Promise<boolean>((r) => (timer = setTimeout(() => r(false), PROXY_EXIT_MS))),
  ]);
  clearTimeout(timer);
  if (!inTime) {
    child.kill('SIGKILL');
    await exited;
  }
  return inTime;
}

export async function startMeshPair(api: ApiClient, prefix: string, say: (line: string) => void): Promise<MeshPair> {
  const app = `${prefix}-echo`;
  const client = `${prefix}-client`;
  let accepted = 0;
  const echo = createServer((socket) => {
    accepted++;
    socket.on('error', () => socket.destroy());
    socket.pipe(socket);
  });
  const appPort = await listen(echo);
  const upstreamPort = await freePort();
  // A passing TTL check, so that the echo sidecar is dialled once it runs (a TCP check would first run before it listens).
  const sidecar = async (upstreams: unknown[]): Promise<unknown> => ({
    Port: await freePort(),
    Checks: [{ Name: 'svc-agent loadtest mesh', TTL: '1h', Status: 'passing' }],
    Proxy: { Config: { bind_address: '127.0.0.1' }, Upstreams: upstreams },
  });
  const children: ChildProcess[] = [];
  const intentionPath = exactIntentionPath(client, app);
  const close = async (): Promise<number[]> => {
    const exited = await Promise.all(children.map(stopProxy));
    echo.close();
    for (const path of [
      `/v1/agent/service/deregister/${encodeURIComponent(`${client}-sidecar-proxy`)}`,
      `/v1/agent/service/deregister/${encodeURIComponent(`${app}-sidecar-proxy`)}`,
      `/v1/agent/service/deregister/${encodeURIComponent(client)}`,
      `/v1/agent/service/deregister/${encodeURIComponent(app)}`,
    ])
      await api.call('PUT', path);
    await api.call('DELETE', intentionPath);
    return children.filter((_, i) => !exited[i]).map((c) => c.pid as number);
  };
  try {
    const register = async (body: { readonly Name: string } & Record<string, unknown>): Promise<void> => {
      const answer = await api.call('PUT', '/v1/agent/service/register', JSON.stringify(body));
      if (answer.status === 403)
        throw new ClientError(
          'CLI_LOADTEST_TARGET',
          `The token may not register the run's services (service:write on ${prefix}-*): ${answer.text.trim()}`,
        );
      if (answer.status !== 200)
        throw new ClientError(
          'CLI_LOADTEST_TARGET',
          `Registering ${body.Name}: ${answer.status} ${answer.text.trim()}`,
        );
    };
    await register({
      Name: app,
      Address: '127.0.0.1',
      Port: appPort,
      Connect: { SidecarService: await sidecar([]) },
    });
    await register({
      Name: client,
      Address: '127.0.0.1',
      Port: 1,
      Connect: { SidecarService: await sidecar([{ DestinationName: app, LocalBindPort: upstreamPort }]) },
    });
    const intention = async (action: 'allow' | 'deny'): Promise<void> => {
      await api.expectOk(
        'PUT',
        intentionPath,
        JSON.stringify({ Action: action, Description: 'svc-agent loadtest mesh' }),
        'writing the intention',
      );
    };
    await intention('allow');
    say(`starting two proxies (svc-agent connect proxy -sidecar-for ${app}, ${client}) ...`);
    const { address, token } = api.agent;
    const metricsPorts: number[] = [];
    for (const id of [app, client]) {
      metricsPorts.push(await freePort());
      children.push(await startProxy(address, token, id, metricsPorts.at(-1)!));
    }
    const refusals = async (): Promise<Map<string, number>> => {
      const total = new Map<string, number>();
      for (const port of metricsPorts)
        for (const [reason, n] of await refusalsAt(port)) total.set(reason, (total.get(reason) ?? 0) + n);
      return total;
    };
    return {
      upstream: { host: '127.0.0.1', port: upstreamPort },
      app,
      client,
      pids: children.map((c) => c.pid as number),
      accepted: () => accepted,
      refusals,
      intention,
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
