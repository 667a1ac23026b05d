// agent.authorize(): the embedded decision, through the real agent object (no HTTP): the same
// checks and messages as the endpoint, the ACL rule with an explicit or the default token, and
// the namespace steps that exist without a request.
import { afterEach, describe, expect, it } from 'vitest';
import { createAgent, type Agent } from '../../../src/agent/index.js';
import { loadConfig } from '../../../src/config/load.js';
import type { RawConfig } from '../../../src/config/schema.js';
import { AgentError } from '../../../src/core/errors.js';

const MANAGEMENT = '0b6e2c44-1d9f-4c83-a0a5-6f2b7d9e1c30';
const agents: Agent[] = [];
afterEach(async () => {
  for (const agent of agents.splice(0)) await agent.close();
});

async function agentWith(config: Record<string, unknown> = {}): Promise<Agent> {
  const agent = await createAgent(loadConfig({ files: [], flags: config as RawConfig, dev: true }));
  agents.push(agent);
  return agent;
}

function failure(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof AgentError) return `${err.kind}: ${err.message}`;
    throw err;
  }
  return 'no error';
}

const web = 'spiffe://11111111-2222-3333-4444-555555555555.consul/ns/default/dc/dc1/svc/web';

describe('agent.authorize (ACLs off)', () => {
  it('decides from the intentions, sees a write at once, and checks input as the endpoint does', async () => {
    const agent = await agentWith();
    expect(agent.authorize({ Target: 'db', ClientCertURI: web })).toEqual({
      Authorized: true,
      Reason: 'Default behavior configured by ACLs',
    });
    await agent.intentions.upsertExact({
      Description: '',
      SourceNS: 'default',
      SourceName: 'web',
      DestinationNS: 'default',
      DestinationName: 'db',
      SourcePartition: '',
      DestinationPartition: '',
      SourcePeer: '',
      SourceType: 'consul',
      Action: 'deny',
      Permissions: [],
      Meta: {},
    });
    expect(agent.authorize({ Target: 'db', ClientCertURI: web, ClientCertSerial: 'ignored' })).toEqual({
      Authorized: false,
      Reason: 'Matched L4 intention: default/web => default/db (Precedence: 9, Action: DENY)',
    });
    // The request's Namespace picks the destination namespace: nothing there, so the default.
    expect(agent.authorize({ Target: 'db', ClientCertURI: web, Namespace: 'other' }).Authorized).toBe(true);
    expect(failure(() => agent.authorize({ Target: '', ClientCertURI: web }))).toBe(
      'invalid: Target service must be specified',
    );
    expect(failure(() => agent.authorize({ Target: 'db', ClientCertURI: 'tubes' }))).toBe(
      'invalid: ClientCertURI not a valid Connect identifier',
    );
    expect(failure(() => agent.authorize({ Target: 'db', ClientCertURI: 'spiffe://1234.consul' }))).toBe(
      'invalid: ClientCertURI not a valid Service identifier',
    );
    expect(failure(() => agent.authorize({ Target: 5 as unknown as string, ClientCertURI: web }))).toBe(
      'invalid: Request decode failed: Target must be a string',
    );
  });
});

describe('agent.authorize (ACLs on)', () => {
  it('needs service:write on the target from the given token, else the default token, else anonymous', async () => {
    const acl = await agentWith({
      acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: MANAGEMENT } },
    });
    expect(acl.authorize({ Target: 'db', ClientCertURI: web }, MANAGEMENT)).toEqual({
      Authorized: false,
      Reason: 'Default behavior configured by ACLs',
    });
    expect(failure(() => acl.authorize({ Target: 'db', ClientCertURI: web }))).toBe(
      'permission-denied: Permission denied: anonymous token lacks permission \'service:write\' on "db". The anonymous token is used implicitly when a request does not specify a token.',
    );
    expect(failure(() => acl.authorize({ Target: 'db', ClientCertURI: web }, 'not-a-token'))).toBe(
      'permission-denied: ACL not found',
    );
    const withDefault = await agentWith({
      acl: { enabled: true, default_policy: 'allow', tokens: { initial_management: MANAGEMENT, default: MANAGEMENT } },
    });
    expect(withDefault.authorize({ Target: 'db', ClientCertURI: web })).toEqual({
      Authorized: true,
      Reason: 'Default behavior configured by ACLs',
    });
  });

  it('refuses every call when connect is disabled', async () => {
    const agent = await agentWith({ connect: { enabled: false } });
    expect(failure(() => agent.authorize({ Target: 'db', ClientCertURI: web }))).toBe(
      'invalid: Connect must be enabled in order to use this endpoint',
    );
  });
});
