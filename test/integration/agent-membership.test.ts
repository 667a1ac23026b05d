// An operator's membership endpoints on one agent (docs/decisions.md#departed-members): GET
// /v1/agent/monitor streams the agent's log at the level asked, below the agent's own too, in
// Consul's text or as JSON lines, and `svc-agent monitor` prints it until interrupted; a lone
// agent joins only itself, force-leave knows only itself (a live member: nothing changes) and
// refuses other names; the agent is a server with Consul's `consul` service at its HTTP port;
// PUT /v1/agent/leave answers, then the process exits 0 (a monitor reading it sees its end).
// ACLs as Consul's: agent:read for monitor, agent:write for leave and join, operator:write for force-leave.
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import Consul from 'consul';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerOf } from '../support/errors.js';
import { MAIN, runCli, startAgent, type AgentProcess } from './support/agent-process.js';

const ROOT = 'membership-root';
const NODE = 'membership-node';

interface Monitor {
  readonly status: Promise<number>;
  text(): string;
  close(): void;
}

/** A monitor read as it streams (fetch would wait for the head, which uWS sends with the first line). */
function openMonitor(agent: AgentProcess, query: string, token: string): Monitor {
  let text = '';
  let close = (): void => undefined;
  const status = new Promise<number>((resolve, reject) => {
    const req = request(`${agent.url}/v1/agent/monitor${query}`, { headers: { 'X-Svc-Token': token } }, (res) => {
      resolve(res.statusCode ?? 0);
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('error', () => undefined);
    });
    req.on('error', reject);
    req.end();
    close = () => req.destroy();
  });
  return { status, text: () => text, close: () => close() };
}

/** Repeats `poke` until `done` holds: each poke logs a line, and the monitor shows it within a turn. */
async function until(poke: () => Promise<unknown>, done: () => boolean): Promise<void> {
  while (!done()) {
    await poke();
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('membership endpoints and the agent log on one agent', () => {
  let agent: AgentProcess;
  const tokens: Record<'agentRead' | 'agentWrite' | 'operator', string> = {
    agentRead: '',
    agentWrite: '',
    operator: '',
  };

  const call = (method: string, path: string, token = ROOT): Promise<Response> =>
    fetch(`${agent.url}${path}`, { method, headers: { 'X-Svc-Token': token } });
  const answer = async (res: Response): Promise<[number, string]> => [res.status, await res.text()];

  beforeAll(async () => {
    agent = await startAgent({
      args: ['-node', NODE],
      config: { acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: ROOT } } },
    });
    const rules = {
      agentRead: 'agent_prefix "" { policy = "read" }',
      agentWrite: 'agent_prefix "" { policy = "write" }\nnode_prefix "" { policy = "read" }',
      operator: 'operator = "write"',
    };
    for (const [name, rule] of Object.entries(rules) as [keyof typeof tokens, string][]) {
      const policy = await fetch(`${agent.url}/v1/acl/policy`, {
        method: 'PUT',
        headers: { 'X-Svc-Token': ROOT },
        body: JSON.stringify({ Name: name, Rules: rule }),
      });
      expect(policy.status).toBe(200);
      const token = await fetch(`${agent.url}/v1/acl/token`, {
        method: 'PUT',
        headers: { 'X-Svc-Token': ROOT },
        body: JSON.stringify({ Policies: [{ Name: name }] }),
      });
      tokens[name] = ((await token.json()) as { SecretID: string }).SecretID;
    }
  });
  afterAll(() => agent?.stop());

  it('streams a debug line a request causes, though the agent logs at info; as JSON with ?logjson', async () => {
    const text = openMonitor(agent, '?loglevel=debug', tokens.agentRead);
    const json = openMonitor(agent, '?loglevel=DEBUG&logjson', tokens.agentRead);
    try {
      await until(
        () => call('GET', '/v1/kv/monitor-probe'),
        () => text.text().includes('url=/v1/kv/monitor-probe') && json.text().includes('/v1/kv/monitor-probe'),
      );
      expect([await text.status, await json.status]).toEqual([200, 200]);
      const line = text
        .text()
        .split('\n')
        .find((l) => l.includes('url=/v1/kv/monitor-probe')) as string;
      expect(line).toMatch(
        /^\S+Z \[DEBUG\] agent\.http: Request finished: method=GET url=\/v1\/kv\/monitor-probe status=404 /,
      );
      const entry = json
        .text()
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((e) => e.url === '/v1/kv/monitor-probe');
      expect(entry).toMatchObject({ level: 'debug', component: 'agent.http', msg: 'Request finished', status: 404 });
      // The agent's own output stays at info: an info line logged after the debug one comes alone.
      const from = agent.logs.length;
      await call('PUT', '/v1/agent/join/10.255.0.1', tokens.agentWrite);
      await agent.waitForLog((l) => l.msg === 'join by address refused: agents share a cluster through etcd', from);
      expect(agent.logs.filter((l) => l.msg === 'Request finished')).toEqual([]);
    } finally {
      text.close();
      json.close();
    }
  });

  it('streams at info by default: a debug line is not sent', async () => {
    const monitor = openMonitor(agent, '', tokens.agentRead);
    try {
      await until(
        () => call('PUT', '/v1/agent/join/10.255.0.2', tokens.agentWrite),
        () => monitor.text().includes('address=10.255.0.2'),
      );
      expect(monitor.text()).toMatch(/\[INFO\] {2}agent: join by address refused: .* address=10\.255\.0\.2/);
      expect(monitor.text()).not.toContain('[DEBUG]');
    } finally {
      monitor.close();
    }
  });

  it('refuses a monitor without agent:read, and an unknown level', async () => {
    expect(await answer(await call('GET', '/v1/agent/monitor', tokens.operator))).toEqual([
      403,
      expect.stringContaining('Permission denied'),
    ]);
    expect(await answer(await call('GET', '/v1/agent/monitor?loglevel=verbose', tokens.agentRead))).toEqual(
      answerOf('AGENT_MONITOR_LOG_LEVEL', { level: 'verbose' }),
    );
  });

  it('`svc-agent monitor -log-level debug` prints the log until interrupted, then exits 0', async () => {
    const child = spawn(process.execPath, [MAIN, 'monitor', '-log-level', 'debug', '-http-addr', agent.url], {
      env: { ...process.env, CONSUL_HTTP_TOKEN: tokens.agentRead },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    await until(
      () => call('GET', '/v1/kv/cli-probe'),
      () => out.includes('url=/v1/kv/cli-probe'),
    );
    child.kill('SIGINT');
    expect(await exited).toBe(0);
  });

  it("the npm consul package's join and forceLeave, as a user calls them", async () => {
    const consul = new Consul({ host: '127.0.0.1', port: agent.port, defaults: { token: ROOT } });
    await consul.agent.join('127.0.0.1');
    await consul.agent.forceLeave(NODE);
    await expect(consul.agent.join('10.255.0.9')).rejects.toMatchObject({ statusCode: 501 });
    await expect(consul.agent.forceLeave('nobody')).rejects.toMatchObject({
      statusCode: 404,
      message: "agent: No node found with name 'nobody'",
    });
  });

  it('joins its own address only: any other is refused with what joining means here', async () => {
    expect((await call('PUT', '/v1/agent/join/127.0.0.1:8301', tokens.agentWrite)).status).toBe(200);
    expect(await answer(await call('PUT', '/v1/agent/join/10.255.0.3', tokens.agentWrite))).toEqual(
      answerOf('AGENT_JOIN_ALONE', { address: '10.255.0.3' }),
    );
    expect((await call('PUT', '/v1/agent/join/127.0.0.1', tokens.agentRead)).status).toBe(403);
  });

  it('force-leave needs operator:write; it refuses an unknown node and leaves the live agent as it is', async () => {
    expect((await call('PUT', `/v1/agent/force-leave/${NODE}`, tokens.agentWrite)).status).toBe(403);
    expect(await answer(await call('PUT', '/v1/agent/force-leave/nobody?prune', tokens.operator))).toEqual(
      answerOf('AGENT_FORCE_LEAVE_UNKNOWN', { node: 'nobody' }),
    );
    expect((await call('PUT', `/v1/agent/force-leave/${NODE}?prune`, tokens.operator)).status).toBe(200);
    const members = (await (await call('GET', '/v1/agent/members')).json()) as { Name: string; Status: number }[];
    expect(members.map((m) => [m.Name, m.Status])).toEqual([[NODE, 1]]);
    const cli = await runCli(['force-leave', '-http-addr', agent.url, '-token', tokens.operator, 'nobody']);
    expect([cli.code, cli.stderr]).toEqual([
      1,
      "Error force leaving: Unexpected response code: 404 (agent: No node found with name 'nobody')\n",
    ]);
  });

  it("is a server with Consul's consul service, at its HTTP port", async () => {
    const consul = (await (await call('GET', '/v1/catalog/service/consul')).json()) as {
      Node: string;
      ServiceID: string;
      ServicePort: number;
      ServiceMeta: Record<string, string>;
    }[];
    expect(consul.map((s) => [s.Node, s.ServiceID, s.ServicePort])).toEqual([[NODE, 'consul', agent.port]]);
    expect(consul[0]?.ServiceMeta).toMatchObject({ raft_version: '3', serf_protocol_current: '2' });
  });

  it('leave needs agent:write; it answers, and the agent exits 0, ending the monitors', async () => {
    expect((await call('PUT', '/v1/agent/leave', tokens.agentRead)).status).toBe(403);
    expect((await call('GET', '/v1/agent/self', tokens.agentRead)).status).toBe(200);
    const monitor = spawn(process.execPath, [MAIN, 'monitor', '-http-addr', agent.url], {
      env: { ...process.env, CONSUL_HTTP_TOKEN: tokens.agentRead },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    monitor.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const monitorExit = new Promise<number | null>((resolve) => monitor.once('exit', resolve));
    // The monitor is attached once it shows a line logged after it started.
    await until(
      () => call('PUT', '/v1/agent/join/10.255.0.4', tokens.agentWrite),
      () => out.includes('address=10.255.0.4'),
    );
    const exited = new Promise<number | null>((resolve) => agent.child.once('exit', resolve));
    const left = await runCli(['leave', '-http-addr', agent.url, '-token', tokens.agentWrite]);
    expect([left.code, left.stdout, left.stderr]).toEqual([0, 'Graceful leave complete\n', '']);
    expect(await exited).toBe(0);
    expect(await monitorExit).toBe(1);
    expect(out).toContain('Graceful leave complete');
    expect(out).toContain(
      '\nRemote side ended the monitor! This usually means that the\nremote side has exited or crashed.\n',
    );
  });
});
