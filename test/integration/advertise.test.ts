// The node's address other hosts are told about (src/config/addresses.ts): advertise_addr in the
// catalog, members, /v1/agent/self and the leader's address; a service registered without
// Address is found at its node's. On a host of its own (a network namespace with a default
// route), client_addr 0.0.0.0 advertises the one private IPv4 address, and a second one makes the
// start fail with one line, as Consul's does.
import { spawn } from 'node:child_process';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemberNetwork, type MemberNetwork } from '../support/netns.js';
import { MAIN, startAgent, type AgentProcess } from './support/agent-process.js';

const run = promisify(execFile);

describe('advertise_addr', () => {
  let agent: AgentProcess;
  beforeAll(async () => {
    agent = await startAgent({
      config: { node_name: 'far', advertise_addr: '192.0.2.77', advertise_addr_wan: '198.51.100.5' },
    });
  });
  afterAll(() => agent.stop());
  const get = async <T>(path: string): Promise<T> => (await (await fetch(`${agent.url}${path}`)).json()) as T;

  it('is the node address in the catalog, members, /v1/agent/self and the leader', async () => {
    const node = await get<{ Node: { Address: string; TaggedAddresses: Record<string, string> } }>(
      '/v1/catalog/node/far',
    );
    expect(node.Node.Address).toBe('192.0.2.77');
    expect(node.Node.TaggedAddresses).toMatchObject({ lan: '192.0.2.77', wan: '198.51.100.5' });
    expect((await get<{ Addr: string }[]>('/v1/agent/members')).map((m) => m.Addr)).toEqual(['192.0.2.77']);
    expect((await get<{ Member: { Addr: string } }>('/v1/agent/self')).Member.Addr).toBe('192.0.2.77');
    expect(await get<string>('/v1/status/leader')).toBe('192.0.2.77:8300');
  });

  it('is where a service registered without Address is found', async () => {
    const put = await fetch(`${agent.url}/v1/agent/service/register`, {
      method: 'PUT',
      body: JSON.stringify({ Name: 'web', Port: 8080 }),
    });
    expect(put.status).toBe(200);
    const entries =
      await get<{ Node: { Address: string }; Service: { Address: string; Port: number } }[]>('/v1/health/service/web');
    expect(entries.map((e) => [e.Node.Address, e.Service.Address, e.Service.Port])).toEqual([['192.0.2.77', '', 8080]]);
  });
});

const root = process.getuid?.() === 0;

describe.runIf(root)('client_addr 0.0.0.0 on a host of its own', () => {
  let network: MemberNetwork;
  let ns: readonly string[];
  let host: string;
  beforeAll(async () => {
    network = await createMemberNetwork(1);
    const place = network.places[0]!;
    ns = place.command;
    host = place.host;
    const [ip, , , name] = ns as [string, string, string, string];
    // A default route: the private addresses go-sockaddr counts are on the interface it leaves by.
    await run(ip, ['-n', name, 'route', 'add', 'default', 'via', host.replace(/\.\d+$/, '.254')]);
  });
  afterAll(() => network.remove());

  /** Runs the agent in the namespace until it says it started (resolving its port) or exits (its stderr). */
  const start = (port: number): Promise<{ started: boolean; stderr: string; stop: () => void }> =>
    new Promise((resolve) => {
      const [command, ...prefix] = ns;
      const child = spawn(
        command!,
        [
          ...prefix,
          process.execPath,
          MAIN,
          'agent',
          '-dev',
          '-client',
          '0.0.0.0',
          '-http-port',
          String(port),
          '-log-json',
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.stdout.on('data', (d: Buffer) => {
        if (d.toString().includes('svc-agent started')) resolve({ started: true, stderr, stop: () => child.kill() });
      });
      child.on('exit', () => resolve({ started: false, stderr, stop: () => {} }));
    });

  it('advertises the one private IPv4 address, and refuses to start with two', async () => {
    const one = await start(18_650);
    try {
      expect(one).toMatchObject({ started: true });
      const members = (await (await fetch(`http://${host}:18650/v1/agent/members`)).json()) as { Addr: string }[];
      expect(members.map((m) => m.Addr)).toEqual([host]);
    } finally {
      one.stop();
    }
    const [ip, , , name] = ns as [string, string, string, string];
    await run(ip, ['-n', name, 'addr', 'add', '10.232.9.9/24', 'dev', 'eth0']);
    const two = await start(18_651);
    expect(two.started).toBe(false);
    expect(two.stderr.trim().split('\n')).toEqual([
      `==> Multiple private IPv4 addresses found (${host}, 10.232.9.9). Please configure one with 'bind_addr' and/or 'advertise_addr'.`,
    ]);
  });
});
