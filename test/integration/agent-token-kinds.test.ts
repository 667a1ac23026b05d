// Every agent token kind of Consul 1.17 against the real agent (docs/decisions.md#agent-token-kinds):
// each name, legacy ones included, is set through PUT /v1/agent/token/<kind> and through
// `svc-agent acl set-agent-token`; the agent recovery token acts on this agent's endpoints (and
// nothing else) from the config, the legacy acl.tokens.agent_master key, the API or the CLI, and
// stops when replaced; with acl.enable_token_persistence the tokens set through the API outlive a
// restart in a 0600 data_dir/acl-tokens.json. The ACL group's ?dc= is here, where ACLs are on.
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { permissionDenied } from '../../src/acl/errors.js';
import { answerOf, answerOfError } from '../support/errors.js';
import { runCli, startAgent, type AgentProcess } from './support/agent-process.js';

const MANAGEMENT = '5d1c3b7a-2e4f-4a6b-9c8d-0e1f2a3b4c5d';
const RECOVERY = '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d';
const NODE = 'kinds-node';

async function call(agent: AgentProcess, method: string, path: string, token?: string, body?: unknown) {
  const res = await fetch(`${agent.url}${path}`, {
    method,
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    ...(token === undefined ? {} : { headers: { 'X-Svc-Token': token } }),
  });
  return [res.status, await res.text()] as [number, string];
}

const aclConfig = (tokens: Record<string, string>, extra: Record<string, unknown> = {}) => ({
  acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: MANAGEMENT, ...tokens }, ...extra },
});

describe('agent token kinds', () => {
  let agent: AgentProcess;
  const cli = (...args: string[]) =>
    runCli(args, { SVC_HTTP_ADDR: `127.0.0.1:${agent.port}`, SVC_HTTP_TOKEN: MANAGEMENT });

  beforeAll(async () => {
    agent = await startAgent({ args: ['-node', NODE], config: aclConfig({ agent_recovery: RECOVERY }) });
  });
  afterAll(() => agent?.stop());

  it('accepts every name Consul 1.17 accepts, each logged under the name it was given', async () => {
    for (const name of [
      'default',
      'acl_token',
      'agent',
      'acl_agent_token',
      'agent_recovery',
      'agent_master',
      'acl_agent_master_token',
      'replication',
      'acl_replication_token',
      'config_file_service_registration',
    ]) {
      const from = agent.logs.length;
      // The recovery kinds are set back to RECOVERY, so the other tests keep their token.
      const token = name.includes('master') || name === 'agent_recovery' ? RECOVERY : '';
      expect([name, await call(agent, 'PUT', `/v1/agent/token/${name}`, MANAGEMENT, { Token: token })]).toEqual([
        name,
        [200, ''],
      ]);
      expect(await agent.waitForLog((l) => l.msg === "Updated agent's ACL token", from)).toMatchObject({ kind: name });
    }
    for (const name of ['dns', 'master', 'recovery', 'acl_replication'])
      expect(await call(agent, 'PUT', `/v1/agent/token/${name}`, MANAGEMENT, { Token: 'x' })).toEqual(
        answerOf('AGENT_TOKEN_UNKNOWN', { name }),
      );
  });

  it('grants the recovery token agent:write on this agent and node:read, and nothing more', async () => {
    expect((await call(agent, 'GET', '/v1/agent/self', RECOVERY))[0]).toBe(200);
    expect((await call(agent, 'GET', '/v1/agent/members', RECOVERY))[0]).toBe(200);
    expect(await call(agent, 'PUT', '/v1/agent/token/replication', RECOVERY, { Token: 'r' })).toEqual([200, '']);
    const [nodesStatus, nodes] = await call(agent, 'GET', '/v1/catalog/nodes', RECOVERY);
    expect([nodesStatus, (JSON.parse(nodes) as { Node: string }[]).map((n) => n.Node)]).toEqual([200, [NODE]]);
    const identity = { accessorId: `agent-recovery:${NODE}`, anonymous: false };
    expect(await call(agent, 'GET', '/v1/kv/secret', RECOVERY)).toEqual(
      answerOfError(permissionDenied(identity, 'key', 'read', 'secret')),
    );
    expect(await call(agent, 'PUT', `/v1/agent/maintenance?enable=true`, RECOVERY)).toEqual(
      answerOfError(permissionDenied(identity, 'node', 'write', NODE)),
    );
    // Not a stored token: token/self finds none to show.
    expect(await call(agent, 'GET', '/v1/acl/token/self', RECOVERY)).toEqual(answerOf('ACL_TOKEN_SELF_NOT_FOUND'));
  });

  it('replaced through the CLI, the old secret stops working at once and the new one works', async () => {
    const next = '1b2c3d4e-5f60-4718-a9b0-c1d2e3f40516';
    expect(await cli('acl', 'set-agent-token', 'recovery', next)).toEqual({
      code: 0,
      stdout: 'ACL token "recovery" set successfully\n',
      stderr: '',
    });
    expect(await call(agent, 'GET', '/v1/agent/self', RECOVERY)).toEqual(answerOf('ACL_NOT_FOUND'));
    expect((await call(agent, 'GET', '/v1/agent/self', next))[0]).toBe(200);
    // Put back through the API, under the name before Consul 1.11.
    expect(await call(agent, 'PUT', '/v1/agent/token/agent_master', next, { Token: RECOVERY })).toEqual([200, '']);
    expect(await call(agent, 'GET', '/v1/agent/self', next)).toEqual(answerOf('ACL_NOT_FOUND'));
    expect((await call(agent, 'GET', '/v1/agent/self', RECOVERY))[0]).toBe(200);
  });

  it("sets every type through the CLI, with Consul's lines and refusals", async () => {
    for (const type of ['default', 'agent', 'replication', 'config_file_service_registration'])
      expect(await cli('acl', 'set-agent-token', type, '')).toEqual({
        code: 0,
        stdout: `ACL token ${JSON.stringify(type)} set successfully\n`,
        stderr: '',
      });
    const fails = async (args: string[], stderr: string, token = MANAGEMENT) => {
      const out = await runCli(['acl', 'set-agent-token', ...args], {
        SVC_HTTP_ADDR: `127.0.0.1:${agent.port}`,
        SVC_HTTP_TOKEN: token,
      });
      expect([args, out]).toEqual([args, { code: 1, stdout: '', stderr }]);
    };
    await fails([], 'Error! Missing TYPE and TOKEN arguments\n');
    await fails(['agent'], 'Error! Missing TOKEN argument\n');
    await fails(['some-token'], 'Error! MISSING TYPE argument\n');
    await fails(['agent', 'a', 'b'], 'Error! Too many arguments: expected 2 got 3\n');
    await fails(['dns', 'x'], 'Unknown token type\n');
    const [, denied] = answerOfError(
      permissionDenied({ accessorId: '00000000-0000-0000-0000-000000000002', anonymous: true }, 'agent', 'write', NODE),
    );
    await fails(
      ['agent', 'x'],
      `Failed to set ACL token "agent": Unexpected response code: 403 (${denied})\n`,
      'anonymous',
    );
  });

  it('answers the ACL group No path to datacenter for another datacenter', async () => {
    for (const path of ['/v1/acl/tokens', '/v1/acl/policies', '/v1/acl/token/self'])
      expect([path, await call(agent, 'GET', `${path}?dc=dc2`, MANAGEMENT)]).toEqual([path, answerOf('DC_NO_PATH')]);
    expect((await call(agent, 'GET', '/v1/acl/tokens?dc=dc1', MANAGEMENT))[0]).toBe(200);
  });
});

describe('the recovery token from the legacy config key, and without one', () => {
  it('acl.tokens.agent_master is read as agent_recovery; with none set, no secret is the recovery token', async () => {
    const legacy = await startAgent({ args: ['-node', NODE], config: aclConfig({ agent_master: RECOVERY }) });
    const none = await startAgent({ args: ['-node', NODE], config: aclConfig({}) });
    try {
      expect((await call(legacy, 'GET', '/v1/agent/self', RECOVERY))[0]).toBe(200);
      expect(await call(none, 'GET', '/v1/agent/self', RECOVERY)).toEqual(answerOf('ACL_NOT_FOUND'));
    } finally {
      await Promise.all([legacy.stop(), none.stop()]);
    }
  });
});

describe('acl.enable_token_persistence', () => {
  let dataDir: string;
  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-token-persist-'));
  });
  afterAll(() => rm(dataDir, { recursive: true, force: true }));

  it('keeps the tokens set through the API across a restart, in a 0600 file, over the config', async () => {
    const config = aclConfig({ agent_recovery: 'config-recovery' }, { enable_token_persistence: true });
    const first = await startAgent({ args: ['-node', NODE], dataDir, config });
    try {
      expect(await call(first, 'PUT', '/v1/agent/token/agent_recovery', MANAGEMENT, { Token: RECOVERY })).toEqual([
        200,
        '',
      ]);
      expect(await call(first, 'PUT', '/v1/agent/token/replication', MANAGEMENT, { Token: 'repl' })).toEqual([200, '']);
    } finally {
      await first.stop();
    }
    const file = join(dataDir, 'acl-tokens.json');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ agent_recovery: RECOVERY, replication: 'repl' });
    const second = await startAgent({ args: ['-node', NODE], dataDir, config });
    try {
      expect(
        await second.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('"agent_recovery" token present')),
      ).toMatchObject({ kind: 'agent_recovery' });
      expect((await call(second, 'GET', '/v1/agent/self', RECOVERY))[0]).toBe(200);
      expect(await call(second, 'GET', '/v1/agent/self', 'config-recovery')).toEqual(answerOf('ACL_NOT_FOUND'));
    } finally {
      await second.stop();
    }
  });

  it('keeps nothing without it: a restart brings the config tokens back', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-token-nopersist-'));
    try {
      const config = aclConfig({ agent_recovery: 'config-recovery' });
      const first = await startAgent({ args: ['-node', NODE], dataDir: dir, config });
      expect(await call(first, 'PUT', '/v1/agent/token/agent_recovery', MANAGEMENT, { Token: RECOVERY })).toEqual([
        200,
        '',
      ]);
      expect((await call(first, 'GET', '/v1/agent/self', RECOVERY))[0]).toBe(200);
      await first.stop();
      await expect(stat(join(dir, 'acl-tokens.json'))).rejects.toThrow();
      const second = await startAgent({ args: ['-node', NODE], dataDir: dir, config });
      try {
        expect((await call(second, 'GET', '/v1/agent/self', 'config-recovery'))[0]).toBe(200);
        expect(await call(second, 'GET', '/v1/agent/self', RECOVERY)).toEqual(answerOf('ACL_NOT_FOUND'));
      } finally {
        await second.stop();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
