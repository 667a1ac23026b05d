// The mesh across hosts: three agents on one etcd, each on a host of its own (a network namespace
// with its own address, test/support/netns.ts), etcd on a fourth. web's sidecar on host A reaches
// db's application on host C through its upstream listener and db's sidecar, which the catalog and
// health/connect place at host C's address (not 127.0.0.1); an intention turned to deny refuses
// new connections there, the application seeing none of them, and allowing again lets them through.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { createMemberNetwork, type MemberNetwork, type MemberPlace } from '../support/netns.js';
import { MAIN, startAgent, type AgentProcess } from './support/agent-process.js';
import { exchange } from './support/proxy-process.js';

const root = process.getuid?.() === 0;
const PREFIX = '/svc-cross-host/';
const APP_PORT = 7000;
const SIDECAR_PORT = 21000;
const UPSTREAM_PORT = 9191;

/** Runs `args` on a host until a line of its standard error (or output) says `ready`. */
function startOn(
  place: MemberPlace,
  args: readonly string[],
  ready: string,
): Promise<{ child: ChildProcess; output: () => string }> {
  const [command, ...prefix] = place.command;
  const child = spawn(command!, [...prefix, process.execPath, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((resolve, reject) => {
    const read = (chunk: Buffer): void => {
      output += chunk.toString();
      if (output.includes(ready)) resolve({ child, output: () => output });
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited ${code}: ${output}`)));
  });
}

describe.runIf(root)('the mesh across three hosts', () => {
  let network: MemberNetwork;
  let etcd: EtcdCluster;
  const agents: AgentProcess[] = [];
  const children: ChildProcess[] = [];
  let app: { child: ChildProcess; output: () => string };
  let hostA: string;
  let hostC: string;
  const accepted = (): number =>
    app
      .output()
      .split('\n')
      .filter((l) => l === 'accepted').length;

  const call = async (agent: AgentProcess, method: string, path: string, body?: unknown): Promise<Response> => {
    const res = await fetch(`${agent.url}${path}`, {
      method,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    expect(res.status, `${method} ${path}: ${await res.clone().text()}`).toBe(200);
    return res;
  };
  /** Writes the intention through agent B and waits until agent C's view (whose authorize decides) holds it. */
  const intention = async (action: 'allow' | 'deny'): Promise<void> => {
    const [, b, c] = agents as [AgentProcess, AgentProcess, AgentProcess];
    const path = '/v1/connect/intentions/exact?source=web&destination=db';
    await call(b, 'PUT', path, { Action: action });
    for (;;) {
      const res = await fetch(`${c.url}${path}`);
      if (res.status === 200 && ((await res.json()) as { Action: string }).Action === action) return;
      const index = res.headers.get('X-Consul-Index') ?? '0';
      await fetch(`${c.url}/v1/connect/intentions?index=${index}&wait=5s`);
    }
  };

  beforeAll(async () => {
    network = await createMemberNetwork(4);
    const [a, b, c, etcdPlace] = network.places as [MemberPlace, MemberPlace, MemberPlace, MemberPlace];
    hostA = a.host;
    hostC = c.host;
    etcd = await startEtcdCluster({ size: 1, places: [etcdPlace] });
    const start = (name: string, place: MemberPlace, server: boolean): Promise<AgentProcess> =>
      startAgent({
        host: { command: place.command, address: place.host },
        config: { cluster: { etcd: { prefix: PREFIX } } },
        args: [
          '-node',
          name,
          '-client',
          '0.0.0.0',
          '-advertise',
          place.host,
          ...etcd.endpoints.flatMap((url) => ['-etcd', url]),
          ...(server ? ['-server'] : []),
        ],
      });
    // B, the server, makes the CA; A and C are client agents: their writes and leaves go through B.
    agents.push(await start('host-b', b, true));
    agents.unshift(await start('host-a', a, false));
    agents.push(await start('host-c', c, false));
    const [agentA, , agentC] = agents as [AgentProcess, AgentProcess, AgentProcess];

    app = await startOn(
      c,
      [
        '-e',
        `require('node:net').createServer((s) => { console.log('accepted'); s.pipe(s); })` +
          `.listen(${APP_PORT}, '127.0.0.1', () => console.log('listening'))`,
      ],
      'listening',
    );
    children.push(app.child);
    // A passing TTL check: the sidecar is dialled once it passes (not after a TCP check's first interval).
    const checks = [{ Name: 'proxy up', TTL: '1h', Status: 'passing' }];
    await call(agentC, 'PUT', '/v1/agent/service/register', {
      Name: 'db',
      Port: APP_PORT,
      Connect: {
        SidecarService: { Port: SIDECAR_PORT, Checks: checks, Proxy: { Config: { bind_address: '0.0.0.0' } } },
      },
    });
    await call(agentA, 'PUT', '/v1/agent/service/register', {
      Name: 'web',
      Port: 1,
      Connect: {
        SidecarService: {
          Port: SIDECAR_PORT,
          Checks: checks,
          Proxy: { Upstreams: [{ DestinationName: 'db', LocalBindAddress: hostA, LocalBindPort: UPSTREAM_PORT }] },
        },
      },
    });
    await intention('allow');
    for (const [place, agent, service] of [
      [c, agentC, 'db'],
      [a, agentA, 'web'],
    ] as const) {
      const proxy = await startOn(
        place,
        [MAIN, 'connect', 'proxy', '-sidecar-for', service, '-http-addr', agent.url],
        'running',
      );
      children.push(proxy.child);
    }
  });
  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await Promise.all(children.map((child) => (child.exitCode === null ? once(child, 'exit') : undefined)));
    await Promise.all(agents.map((agent) => agent.stop()));
    await etcd?.stop();
    await network?.remove();
  });

  it("places db's sidecar at host C's address in the catalog and health/connect, seen from host A", async () => {
    const [agentA] = agents as [AgentProcess];
    // The sidecar is registered by C's anti-entropy through B: wait for it to reach A's view.
    let entries: { Node: { Node: string; Address: string }; Service: { Address: string; Port: number } }[] = [];
    let index = '0';
    while (entries.length === 0) {
      const res = await fetch(`${agentA.url}/v1/health/connect/db?passing&index=${index}&wait=5s`);
      index = res.headers.get('X-Consul-Index') ?? '0';
      entries = (await res.json()) as typeof entries;
    }
    expect(entries.map((e) => [e.Node.Node, e.Node.Address, e.Service.Port])).toEqual([
      ['host-c', hostC, SIDECAR_PORT],
    ]);
    const members = (await (await fetch(`${agentA.url}/v1/agent/members`)).json()) as { Name: string; Addr: string }[];
    expect(Object.fromEntries(members.map((m) => [m.Name, m.Addr]))).toEqual({
      'host-a': hostA,
      'host-b': network.places[1]!.host,
      'host-c': hostC,
    });
  });

  it("carries a connection from web's upstream on host A to db's application on host C", async () => {
    expect(await exchange(UPSTREAM_PORT, 'ping across hosts', hostA)).toBe('ping across hosts');
    expect(accepted()).toBe(1);
  });

  it('closes the established and refuses new connections once an intention denies web -> db, the application seeing none; allows again after', async () => {
    const held = connect(UPSTREAM_PORT, hostA);
    held.on('error', () => {});
    await once(held, 'connect');
    held.write('held');
    await once(held, 'data');
    const closed = once(held, 'close');
    await intention('deny');
    // Closed by db's sidecar on host C once its watch of the intentions answered: new ones ask again.
    await closed;
    const before = accepted();
    expect(await exchange(UPSTREAM_PORT, 'denied?', hostA)).toBe('');
    expect(accepted()).toBe(before);
    await intention('allow');
    expect(await exchange(UPSTREAM_PORT, 'again', hostA)).toBe('again');
    expect(accepted()).toBe(before + 1);
  });
});
