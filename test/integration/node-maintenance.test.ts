// Node maintenance on the real agent (Consul's PUT /v1/agent/maintenance): the `_node_maintenance`
// check reaches the catalog through anti-entropy, so `?passing` drops the node's instances until
// it is disabled; it survives a restart with data_dir; a bad `enable` is 400, no node:write is 403.
// Every wait is a blocking query on the answer that should change.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerOf } from '../support/errors.js';
import { runCli, startAgent, tempDir, type AgentProcess } from './support/agent-process.js';

const NODE = 'maint-node';
const MANAGEMENT = '0d9e2a4b-6c1f-4e3a-9b57-1a2b3c4d5e6f';
const NODE_NOTE = 'Maintenance mode is enabled for this node, but no reason was provided. This is a default message.';

interface Check {
  CheckID: string;
  Name: string;
  Status: string;
  Notes: string;
  ServiceID: string;
  Type: string;
}

describe('node maintenance', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let agent: AgentProcess;
  const start = (): Promise<AgentProcess> =>
    startAgent({
      dataDir: dir.path,
      args: ['-node', NODE],
      config: { acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: MANAGEMENT } } },
    });
  beforeAll(async () => {
    dir = await tempDir();
    agent = await start();
  });
  afterAll(async () => {
    await agent.stop();
    await dir.remove();
  });

  const call = (method: string, path: string, token = MANAGEMENT, body?: unknown): Promise<Response> =>
    fetch(agent.url + path, {
      method,
      headers: { 'X-Svc-Token': token },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const failure = async (res: Response): Promise<[number, string]> => [res.status, await res.text()];

  /** Reads `path` with blocking queries until `done` accepts the answer. */
  async function waitFor<T>(path: string, done: (value: T) => boolean): Promise<T> {
    let index = 0;
    for (;;) {
      const res = await call('GET', `${path}${index === 0 ? '' : `${path.includes('?') ? '&' : '?'}index=${index}`}`);
      expect(res.status).toBe(200);
      const value = (await res.json()) as T;
      if (done(value)) return value;
      const next = Number(res.headers.get('x-svc-index'));
      index = next >= index ? next : 0;
    }
  }
  const passing = (): Promise<unknown[]> => waitFor<unknown[]>('/v1/health/service/web?passing', () => true);
  const agentChecks = async (): Promise<Record<string, Check>> =>
    (await (await call('GET', '/v1/agent/checks')).json()) as Record<string, Check>;

  it('takes the node out of ?passing while enabled, across a restart, and puts it back', async () => {
    const register = await call('PUT', '/v1/agent/service/register', MANAGEMENT, {
      Name: 'web',
      Port: 80,
      Check: { CheckID: 'web-ttl', TTL: '1h', Status: 'passing' },
    });
    expect(register.status).toBe(200);
    await waitFor<unknown[]>('/v1/health/service/web?passing', (v) => v.length === 1);

    expect((await call('PUT', '/v1/agent/maintenance?enable=true&reason=kernel%20upgrade')).status).toBe(200);
    await waitFor<unknown[]>('/v1/health/service/web?passing', (v) => v.length === 0);
    expect((await agentChecks())._node_maintenance).toMatchObject({
      Name: 'Node Maintenance Mode',
      Status: 'critical',
      Notes: 'kernel upgrade',
      ServiceID: '',
      Type: '',
    });
    const onNode = await waitFor<Check[]>(`/v1/health/node/${NODE}`, (v) =>
      v.some((c) => c.CheckID === '_node_maintenance'),
    );
    expect(onNode.find((c) => c.CheckID === '_node_maintenance')).toMatchObject({
      Name: 'Node Maintenance Mode',
      Status: 'critical',
      Notes: 'kernel upgrade',
      ServiceID: '',
    });

    await agent.stop();
    agent = await start();
    expect((await agentChecks())._node_maintenance).toMatchObject({ Status: 'critical', Notes: 'kernel upgrade' });
    expect(await passing()).toEqual([]);

    expect((await call('PUT', '/v1/agent/maintenance?enable=false')).status).toBe(200);
    await waitFor<unknown[]>('/v1/health/service/web?passing', (v) => v.length === 1);
    expect((await agentChecks())._node_maintenance).toBeUndefined();
    const cleared = await waitFor<Check[]>(
      `/v1/health/node/${NODE}`,
      (v) => !v.some((c) => c.CheckID === '_node_maintenance'),
    );
    expect(cleared.map((c) => c.CheckID)).not.toContain('_node_maintenance');

    // Without a reason, Consul's default notes.
    expect((await call('PUT', '/v1/agent/maintenance?enable=1')).status).toBe(200);
    expect((await agentChecks())._node_maintenance?.Notes).toBe(NODE_NOTE);
    expect((await call('PUT', '/v1/agent/maintenance?enable=f')).status).toBe(200);
    expect((await agentChecks())._node_maintenance).toBeUndefined();
  });

  it('is turned on, listed and off by `svc-agent maint`, with Consul lines', async () => {
    const env = { CONSUL_HTTP_ADDR: `127.0.0.1:${agent.port}`, CONSUL_HTTP_TOKEN: MANAGEMENT };
    const maint = (...args: string[]) => runCli(['maint', ...args], env);
    expect(await maint('-enable', '-reason', 'disk swap')).toEqual({
      code: 0,
      stdout: 'Node maintenance is now enabled\n',
      stderr: '',
    });
    expect((await agentChecks())._node_maintenance?.Notes).toBe('disk swap');
    expect(await maint('-enable', '-service', 'web')).toEqual({
      code: 0,
      stdout: 'Service maintenance is now enabled for "web"\n',
      stderr: '',
    });
    const listed = await maint();
    expect(listed.stdout).toContain(`Node:\n  Name:   ${NODE}\n  Reason: disk swap\n\n`);
    expect(listed.stdout).toContain('Service:\n  ID:     web\n  Reason: Maintenance mode is enabled for this service');
    expect(await maint('-disable', '-service', 'web')).toMatchObject({ code: 0 });
    expect(await maint('-disable')).toEqual({ code: 0, stdout: 'Node maintenance is now disabled\n', stderr: '' });
    expect((await agentChecks())._node_maintenance).toBeUndefined();
    expect(await maint('-disable', '-reason', 'x')).toMatchObject({
      code: 1,
      stderr: 'Reason may only be provided with -enable\n',
    });
    const refused = await runCli(['maint', '-enable'], { ...env, CONSUL_HTTP_TOKEN: 'no-such-token' });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^Error /);
  });

  it('answers a missing or bad enable with 400, as Consul words it', async () => {
    expect(await failure(await call('PUT', '/v1/agent/maintenance'))).toEqual(
      answerOf('SERVICE_MAINTENANCE_NO_ENABLE'),
    );
    expect(await failure(await call('PUT', '/v1/agent/maintenance?enable=yes'))).toEqual(
      answerOf('SERVICE_MAINTENANCE_BAD_ENABLE', { value: 'yes' }),
    );
    expect((await agentChecks())._node_maintenance).toBeUndefined();
  });

  it('needs node:write on the agent node', async () => {
    const policy = async (name: string, rules: string): Promise<string> => {
      const res = await call('PUT', '/v1/acl/policy', MANAGEMENT, { Name: name, Rules: rules });
      expect(res.status).toBe(200);
      const token = await call('PUT', '/v1/acl/token', MANAGEMENT, { Policies: [{ Name: name }] });
      return ((await token.json()) as { SecretID: string }).SecretID;
    };
    const serviceWriter = await policy('web-writer', 'service "web" { policy = "write" }');
    const otherNode = await policy('other-node', 'node "other" { policy = "write" }');
    const nodeWriter = await policy('node-writer', `node "${NODE}" { policy = "write" }`);
    for (const token of [serviceWriter, otherNode]) {
      const refused = await call('PUT', '/v1/agent/maintenance?enable=true', token);
      expect(refused.status).toBe(403);
      expect(await refused.text()).toContain(`lacks permission 'node:write' on "${NODE}"`);
    }
    expect((await agentChecks())._node_maintenance).toBeUndefined();
    expect((await call('PUT', '/v1/agent/maintenance?enable=true', nodeWriter)).status).toBe(200);
    expect((await call('PUT', '/v1/agent/maintenance?enable=false', nodeWriter)).status).toBe(200);
  });
});
