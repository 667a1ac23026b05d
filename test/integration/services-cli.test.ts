// `svc-agent services register|deregister` against a running agent with ACLs on, as a Consul user
// runs them: a service from flags or from HCL and JSON files, Consul's lines and mistakes, exit codes.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startAgent, tempDir, type AgentProcess } from './support/agent-process.js';

const ROOT = 'root-secret';

describe('services commands', () => {
  let agent: AgentProcess;
  let dir: { path: string; remove: () => Promise<void> };
  let env: NodeJS.ProcessEnv;
  let webWriter: string;
  const cli = (...args: string[]) => runCli(['services', ...args], env);
  const file = async (name: string, text: string): Promise<string> => {
    const path = join(dir.path, name);
    await writeFile(path, text);
    return path;
  };
  const api = async (method: string, path: string, body?: unknown): Promise<Response> =>
    fetch(agent.url + path, {
      method,
      headers: { 'X-Svc-Token': ROOT },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const service = async (id: string): Promise<Record<string, unknown> | undefined> => {
    const res = await api('GET', `/v1/agent/service/${id}`);
    if (res.status === 404) return undefined;
    expect(res.status).toBe(200);
    return (await res.json()) as Record<string, unknown>;
  };

  beforeAll(async () => {
    dir = await tempDir('svc-services-cli-');
    agent = await startAgent({
      config: { acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: ROOT } } },
    });
    env = { CONSUL_HTTP_ADDR: `127.0.0.1:${agent.port}`, CONSUL_HTTP_TOKEN: ROOT };
    await api('PUT', '/v1/acl/policy', { Name: 'web', Rules: 'service "web" { policy = "write" }' });
    const token = (await (await api('PUT', '/v1/acl/token', { Policies: [{ Name: 'web' }] })).json()) as {
      SecretID: string;
    };
    webWriter = token.SecretID;
  });
  afterAll(async () => {
    await agent.stop();
    await dir.remove();
  });

  it('registers from flags: name, id, address, port, tags, meta and tagged addresses', async () => {
    expect(
      await cli(
        'register',
        '-name=web',
        '-id',
        'web-1',
        '-address',
        '10.0.0.7',
        '-port',
        '8080',
        '-tag',
        'v1',
        '-tag=blue',
        '-meta',
        'version=1.2',
        '-meta',
        'team=a=b',
        '-tagged-address',
        'lan=127.0.0.1:1234',
        '-tagged-address',
        'v6=[2001:db8::12]:1234',
      ),
    ).toEqual({ code: 0, stdout: 'Registered service: web\n', stderr: '' });
    expect(await service('web-1')).toMatchObject({
      ID: 'web-1',
      Service: 'web',
      Address: '10.0.0.7',
      Port: 8080,
      Tags: ['v1', 'blue'],
      Meta: { version: '1.2', team: 'a=b' },
      TaggedAddresses: { lan: { Address: '127.0.0.1', Port: 1234 }, v6: { Address: '2001:db8::12', Port: 1234 } },
    });
  });

  it('registers every service block of HCL and JSON files; flags fill what a file leaves empty', async () => {
    const hcl = await file(
      'db.hcl',
      [
        'service {',
        '  name = "db"',
        '  port = 5432',
        '  tags = ["primary"]',
        '  check {',
        '    ttl = "30s"',
        '  }',
        '}',
      ].join('\n'),
    );
    const json = await file(
      'api.json',
      JSON.stringify({
        services: [
          { Name: 'api', ID: 'api-1', Port: 9000 },
          { name: 'cache', meta: { tier: 'hot' } },
        ],
      }),
    );
    expect(await cli('register', '-tag', 'from-flag', '-meta', 'dc=east', '-port', '7000', hcl, json)).toEqual({
      code: 0,
      stdout: 'Registered service: db\nRegistered service: api\nRegistered service: cache\n',
      stderr: '',
    });
    expect(await service('db')).toMatchObject({ Port: 5432, Tags: ['primary', 'from-flag'], Meta: { dc: 'east' } });
    expect(await service('api-1')).toMatchObject({ Service: 'api', Port: 9000, Tags: ['from-flag'] });
    expect(await service('cache')).toMatchObject({ Port: 7000, Meta: { tier: 'hot', dc: 'east' } });
    const checks = (await (await api('GET', '/v1/agent/checks')).json()) as Record<string, { ServiceID: string }>;
    expect(Object.values(checks).map((c) => c.ServiceID)).toContain('db');
  });

  it('a file registers a sidecar as the agent does for a config file', async () => {
    const path = await file(
      'pay.json',
      JSON.stringify({ service: { name: 'pay', port: 7100, connect: { sidecar_service: {} } } }),
    );
    expect(await cli('register', path)).toEqual({ code: 0, stdout: 'Registered service: pay\n', stderr: '' });
    expect(await service('pay-sidecar-proxy')).toMatchObject({
      Kind: 'connect-proxy',
      Proxy: { DestinationServiceName: 'pay', LocalServicePort: 7100 },
    });
  });

  it('deregisters by -id and by file (ID, else name)', async () => {
    expect(await cli('deregister', '-id=web-1')).toEqual({
      code: 0,
      stdout: 'Deregistered service: web-1\n',
      stderr: '',
    });
    expect(await service('web-1')).toBeUndefined();
    const json = join(dir.path, 'api.json');
    expect(await cli('deregister', json)).toEqual({
      code: 0,
      stdout: 'Deregistered service: api-1\nDeregistered service: cache\n',
      stderr: '',
    });
    expect(await service('api-1')).toBeUndefined();
    expect(await service('cache')).toBeUndefined();
    expect(await cli('deregister', join(dir.path, 'db.hcl'))).toMatchObject({
      code: 0,
      stdout: 'Deregistered service: db\n',
    });
    expect(await service('db')).toBeUndefined();
  });

  it('deregistering an unknown ID is the agent 404, exit 1', async () => {
    expect(await cli('deregister', '-id', 'nope')).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'Error deregistering service "nope": Unexpected response code: 404 (Unknown service ID "nope". Ensure that the service ID is passed, not the service name.)\n',
    });
  });

  it(
    'the token comes from -token, -token-file or the environment; without one the agent refuses',
    { timeout: 90_000 },
    async () => {
      const anonymous = { CONSUL_HTTP_ADDR: `127.0.0.1:${agent.port}` };
      const refused = await runCli(['services', 'register', '-name', 'web'], anonymous);
      expect(refused.code).toBe(1);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toMatch(
        /^Error registering service "web": Unexpected response code: 403 \(Permission denied: .*lacks permission 'service:write' on "web"/,
      );
      expect(await service('web')).toBeUndefined();
      expect(await runCli(['services', 'register', '-name', 'web', '-token', webWriter], anonymous)).toMatchObject({
        code: 0,
        stdout: 'Registered service: web\n',
      });
      expect((await runCli(['services', 'register', '-name', 'db', '-token', webWriter], anonymous)).stderr).toMatch(
        /^Error registering service "db": Unexpected response code: 403 /,
      );
      const tokenFile = await file('token', `${webWriter}\n`);
      expect(await runCli(['services', 'deregister', '-id', 'web', '-token-file', tokenFile], anonymous)).toMatchObject(
        {
          code: 0,
          stdout: 'Deregistered service: web\n',
        },
      );
      expect(
        await runCli(['services', 'register', '-name', 'web'], { ...anonymous, CONSUL_HTTP_TOKEN: webWriter }),
      ).toMatchObject({ code: 0, stdout: 'Registered service: web\n' });
      expect(await service('web')).toMatchObject({ Service: 'web' });
    },
  );

  it('mistakes print one line on stderr and exit 1', { timeout: 90_000 }, async () => {
    const failure = (stderr: string) => ({ code: 1, stdout: '', stderr });
    const json = join(dir.path, 'api.json');
    expect(await cli('register')).toEqual(failure('Service registration requires at least one argument or flags.\n'));
    expect(await cli('register', '-name', 'web', json)).toEqual(
      failure('Service registration requires arguments or -id, not both.\n'),
    );
    expect(await cli('deregister')).toEqual(failure('Service deregistration requires at least one argument or -id.\n'));
    expect(await cli('deregister', '-id', 'web', json)).toEqual(
      failure('Service deregistration requires arguments or -id, not both.\n'),
    );
    expect(await cli('register', '-name', 'web', '-meta', 'nope')).toEqual(
      failure('invalid value "nope" for flag -meta: Missing "=" value in argument: nope\n'),
    );
    expect(await cli('register', '-name', 'web', '-tagged-address', 'lan=10.0.0.1')).toEqual(
      failure('invalid value "lan=10.0.0.1" for flag -tagged-address: address 10.0.0.1: missing port in address\n'),
    );
    expect(await cli('register', '-name', 'web', '-weight', '3')).toEqual(
      failure('flag provided but not defined: -weight\n'),
    );
  });

  it('a file that does not load is named with its problem, exit 1', { timeout: 90_000 }, async () => {
    const failure = (stderr: string) => ({ code: 1, stdout: '', stderr });
    const badJson = await file('bad.json', '{"service": {"name": "x",}}');
    expect(await cli('register', badJson)).toEqual(
      failure(`Error: ${badJson}: invalid JSON at line 1, column 26: expected a property name in double quotes\n`),
    );
    const badHcl = await file('bad.hcl', 'service {\n  name = \n');
    expect(await cli('register', badHcl)).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(`^Error: ${badHcl}: invalid HCL: `),
    });
    const wrongType = await file('port.json', '{"service": {"name": "x", "port": "80"}}');
    expect(await cli('register', wrongType)).toEqual(
      failure(`Error: ${wrongType}: Request decode failed: Port must be an integer\n`),
    );
    const missing = join(dir.path, 'missing.json');
    expect(await cli('deregister', missing)).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(`^Error: ${missing}: cannot read config file: `),
    });
    const noName = await file('noname.json', '{"service": {"port": 80}}');
    expect(await cli('register', noName)).toEqual(
      failure('Error registering service "": Unexpected response code: 400 (Missing service name)\n'),
    );
  });
});
