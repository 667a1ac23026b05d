// `svc-agent catalog datacenters|nodes|services` against a running agent with ACLs on, as a Consul
// user runs them: address and token from CONSUL_ variables or flags, Consul's columns and wording.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startAgent, tempDir, type AgentProcess } from './support/agent-process.js';

const ROOT = 'root-secret';
const NODE_A_ID = 'aaaaaaaa-1111-4222-8333-444444444444';
const NODE_B_ID = 'bbbbbbbb-1111-4222-8333-444444444444';

describe('catalog commands', () => {
  let agent: AgentProcess;
  let dir: { path: string; remove: () => Promise<void> };
  let env: NodeJS.ProcessEnv;
  const cli = (...args: string[]) => runCli(['catalog', ...args], env);

  const register = async (body: unknown): Promise<void> => {
    const res = await fetch(`${agent.url}/v1/catalog/register`, {
      method: 'PUT',
      headers: { 'X-Svc-Token': ROOT },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
  };

  beforeAll(async () => {
    dir = await tempDir('svc-catalog-cli-');
    agent = await startAgent({
      args: ['-node', 'node-a'],
      config: {
        node_id: NODE_A_ID,
        acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: ROOT } },
      },
    });
    env = { CONSUL_HTTP_ADDR: `127.0.0.1:${agent.port}`, CONSUL_HTTP_TOKEN: ROOT };
    const nodeB = {
      ID: NODE_B_ID,
      Node: 'node-b',
      Address: '10.1.0.2',
      TaggedAddresses: { wan: '198.51.100.2', lan: '10.1.0.2' },
      NodeMeta: { rack: 'r2', env: 'prod' },
    };
    await register({ ...nodeB, Service: { ID: 'web-1', Service: 'web', Tags: ['v1', 'blue'], Port: 8080 } });
    await register({
      ...nodeB,
      Service: { ID: 'postgresql-1', Service: 'postgresql', Tags: ['leader'], Port: 5432 },
    });
    await register({
      Node: 'node-c-long-name',
      Address: '10.1.0.3',
      NodeMeta: { rack: 'r3' },
      Service: { ID: 'web-2', Service: 'web', Tags: ['v2'], Port: 8080 },
    });
  });
  afterAll(async () => {
    await agent.stop();
    await dir.remove();
  });

  it('datacenters prints one per line', async () => {
    expect(await cli('datacenters')).toEqual({ code: 0, stdout: 'dc1\n', stderr: '' });
  });

  it('nodes prints Node, the first group of the ID, Address and DC in columns', async () => {
    expect(await cli('nodes')).toEqual({
      code: 0,
      stdout: [
        'Node              ID        Address    DC',
        'node-a            aaaaaaaa  127.0.0.1  dc1',
        'node-b            bbbbbbbb  10.1.0.2   dc1',
        'node-c-long-name            10.1.0.3   dc1',
        '',
      ].join('\n'),
      stderr: '',
    });
  });

  it('nodes -detailed adds the whole ID, TaggedAddresses and Meta sorted by key', async () => {
    const { code, stdout } = await cli('nodes', '-detailed', '-node-meta', 'rack=r2');
    expect(code).toBe(0);
    expect(stdout).toBe(
      [
        'Node    ID                                    Address   DC   TaggedAddresses                 Meta',
        `node-b  ${NODE_B_ID}  10.1.0.2  dc1  lan=10.1.0.2, wan=198.51.100.2  env=prod, rack=r2`,
        '',
      ].join('\n'),
    );
  });

  it('nodes -service lists the nodes of its instances; -filter narrows, from the flag or a file', async () => {
    expect((await cli('nodes', '-service=web', '-near', '_agent')).stdout).toBe(
      [
        'Node              ID        Address   DC',
        'node-b            bbbbbbbb  10.1.0.2  dc1',
        'node-c-long-name            10.1.0.3  dc1',
        '',
      ].join('\n'),
    );
    expect((await cli('nodes', '-filter', 'Meta.rack == r3')).stdout).toBe(
      ['Node              ID  Address   DC', 'node-c-long-name      10.1.0.3  dc1', ''].join('\n'),
    );
    const file = join(dir.path, 'filter.txt');
    await writeFile(file, 'ServiceTags contains v1');
    expect((await cli('nodes', '-service', 'web', '-filter', `@${file}`)).stdout).toBe(
      ['Node    ID        Address   DC', 'node-b  bbbbbbbb  10.1.0.2  dc1', ''].join('\n'),
    );
  });

  it('nothing matching is said on stderr with exit code 0, as Consul does', async () => {
    expect(await cli('nodes', '-node-meta', 'rack=nowhere')).toEqual({
      code: 0,
      stdout: '',
      stderr: 'No nodes match the given query - try expanding your search.\n',
    });
    expect(await cli('services', '-node', 'no-such-node')).toEqual({
      code: 0,
      stdout: '',
      stderr: 'No services match the given query - try expanding your search.\n',
    });
  });

  it('services prints names sorted; -tags adds the tags; -node and -node-meta narrow', async () => {
    // `consul`: the agent is a server, with Consul's service on its node.
    expect(await cli('services')).toEqual({ code: 0, stdout: 'consul\npostgresql\nweb\n', stderr: '' });
    expect((await cli('services', '-tags')).stdout).toBe(
      ['consul          ', 'postgresql      leader', 'web             blue,v1,v2', ''].join('\n'),
    );
    expect((await cli('services', '-node=node-b', '-tags')).stdout).toBe(
      ['postgresql      leader', 'web             blue,v1', ''].join('\n'),
    );
    expect((await cli('services', '-node-meta', 'rack=r3')).stdout).toBe('web\n');
  });

  it('the token comes from the flag or the environment; without one, ACLs hide everything', async () => {
    const anonymous = { CONSUL_HTTP_ADDR: `127.0.0.1:${agent.port}` };
    expect(await runCli(['catalog', 'services'], anonymous)).toMatchObject({
      code: 0,
      stderr: 'No services match the given query - try expanding your search.\n',
    });
    expect(await runCli(['catalog', 'services', '-token', ROOT], anonymous)).toMatchObject({
      code: 0,
      stdout: 'consul\npostgresql\nweb\n',
    });
  });

  it('mistakes: a bad filter is the agent error, a node-meta without = and extra arguments exit 1', async () => {
    const bad = await cli('nodes', '-filter', 'Nope == x');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(
      /^Error listing nodes: Unexpected response code: \d{3} \(.*Selector "Nope" is not valid/,
    );
    expect(await cli('services', '-node-meta', 'rack')).toMatchObject({
      code: 1,
      stderr: 'invalid value "rack" for flag -node-meta: missing "=" value in argument: rack\n',
    });
    expect(await cli('datacenters', 'extra')).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('Too many arguments (expected 0, got 1)'),
    });
    expect((await runCli(['catalog', 'datacenters'], { CONSUL_HTTP_ADDR: '127.0.0.1:1' })).code).toBe(1);
  });
});
