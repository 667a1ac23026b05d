// PUT /v1/agent/token/<kind> and acl.tokens.{default,agent} against the real agent
// (docs/decisions.md D21): the default token a request without one acts with can be replaced at run
// time and comes back from the config on a reload; the agent token is accepted and changes nothing;
// Consul's checks come in Consul's order, each refusal asserted by its code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { permissionDenied } from '../../src/acl/errors.js';
import { answerOf, answerOfError } from '../support/errors.js';
import { startAgent, type AgentProcess } from './support/agent-process.js';

const MANAGEMENT = '0c8f2a61-3b7d-4e59-8a1c-2d4f6b8e0a13';
const CONFIG_DEFAULT = '7e1d3c5b-9a2f-4b6d-8c0e-1f3a5b7d9c24';
const NODE = 'token-node';

async function put(agent: AgentProcess, path: string, body: unknown, token?: string): Promise<[number, string]> {
  const res = await fetch(`${agent.url}${path}`, {
    method: 'PUT',
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...(token === undefined ? {} : { headers: { 'X-Svc-Token': token } }),
  });
  return [res.status, await res.text()];
}

describe('agent tokens with ACLs on', () => {
  let agent: AgentProcess;
  const made: Record<'configDefault' | 'apiDefault', { AccessorID: string; SecretID: string }> = {} as never;

  /** The AccessorID of the token a request without one acts with. */
  const actingAs = async (): Promise<string> =>
    ((await (await fetch(`${agent.url}/v1/acl/token/self`)).json()) as { AccessorID: string }).AccessorID;

  beforeAll(async () => {
    agent = await startAgent({
      args: ['-node', NODE],
      config: {
        acl: {
          enabled: true,
          default_policy: 'deny',
          tokens: { initial_management: MANAGEMENT, default: CONFIG_DEFAULT, agent: 'some-agent-token' },
        },
      },
    });
    for (const [name, body] of [
      ['configDefault', { Description: 'config default', SecretID: CONFIG_DEFAULT }],
      ['apiDefault', { Description: 'api default' }],
    ] as const) {
      const [status, text] = await put(agent, '/v1/acl/token', body, MANAGEMENT);
      expect(status).toBe(200);
      made[name] = JSON.parse(text) as { AccessorID: string; SecretID: string };
    }
  });
  afterAll(() => agent.stop());

  it('replaces the default token until a reload puts the config one back', async () => {
    expect(await actingAs()).toBe(made.configDefault.AccessorID);
    const from = agent.logs.length;
    expect(await put(agent, '/v1/agent/token/default', { Token: made.apiDefault.SecretID }, MANAGEMENT)).toEqual([
      200,
      '',
    ]);
    expect(await agent.waitForLog((l) => l.msg === "Updated agent's ACL token", from)).toMatchObject({
      kind: 'default',
    });
    expect(await actingAs()).toBe(made.apiDefault.AccessorID);
    // Consul's legacy name for the same token.
    expect(await put(agent, '/v1/agent/token/acl_token', { token: made.configDefault.SecretID }, MANAGEMENT)).toEqual([
      200,
      '',
    ]);
    expect(await actingAs()).toBe(made.configDefault.AccessorID);
    expect(await put(agent, '/v1/agent/token/default', { Token: made.apiDefault.SecretID }, MANAGEMENT)).toEqual([
      200,
      '',
    ]);
    const reloaded = agent.logs.length;
    expect(await put(agent, '/v1/agent/reload', '', MANAGEMENT)).toEqual([200, '']);
    await agent.waitForLog((l) => l.msg === 'config reloaded', reloaded);
    expect(await actingAs()).toBe(made.configDefault.AccessorID);
  });

  it('accepts the agent token (and its legacy name) without changing what requests act as', async () => {
    for (const name of ['agent', 'acl_agent_token']) {
      expect(await put(agent, `/v1/agent/token/${name}`, { Token: made.apiDefault.SecretID }, MANAGEMENT)).toEqual([
        200,
        '',
      ]);
      expect(await actingAs()).toBe(made.configDefault.AccessorID);
    }
  });

  it('checks as Consul does: agent:write on this node before the body, then the body, then the kind', async () => {
    const denied = answerOfError(
      permissionDenied({ accessorId: made.apiDefault.AccessorID, anonymous: false }, 'agent', 'write', NODE),
    );
    expect(await put(agent, '/v1/agent/token/agent', { Token: 'x' }, made.apiDefault.SecretID)).toEqual(denied);
    expect(await put(agent, '/v1/agent/token/agent', '', made.apiDefault.SecretID)).toEqual(denied);
    expect(await put(agent, '/v1/agent/token/agent', { Token: 'x' }, 'no-such-token')).toEqual(
      answerOf('ACL_NOT_FOUND'),
    );
    const decodeFailed = (detail: string) => answerOf('BODY_DECODE', { prefix: 'Request decode failed', detail });
    expect(await put(agent, '/v1/agent/token/agent', '', MANAGEMENT)).toEqual(decodeFailed('EOF'));
    expect(await put(agent, '/v1/agent/token/agent', { Token: 'x', Bogus: 1 }, MANAGEMENT)).toEqual(
      decodeFailed('json: unknown field "Bogus"'),
    );
    expect(await put(agent, '/v1/agent/token/agent', { Token: 5 }, MANAGEMENT)).toEqual(
      decodeFailed('json: cannot unmarshal number into Go struct field AgentToken.Token of type string'),
    );
    expect(await put(agent, '/v1/agent/token/dns', { Token: 'x' }, MANAGEMENT)).toEqual(
      answerOf('AGENT_TOKEN_UNKNOWN', { name: 'dns' }),
    );
    expect(await put(agent, '/v1/agent/token/dns', '', MANAGEMENT)).toEqual(decodeFailed('EOF'));
    expect(await actingAs()).toBe(made.configDefault.AccessorID);
  });
});

describe('agent tokens with ACLs off', () => {
  it('answers 401 ACL support disabled, as every ACL endpoint does', async () => {
    const agent = await startAgent();
    try {
      expect(await put(agent, '/v1/agent/token/agent', { Token: 'x' })).toEqual(answerOf('ACL_DISABLED'));
    } finally {
      await agent.stop();
    }
  });
});
