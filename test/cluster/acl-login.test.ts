// Login on a cluster (servers a and b, client c, on a 3-member etcd; docs/decisions.md#auth-methods):
// an auth method and binding rule written through the client agent reach every agent's view; a
// login through the client agent is forwarded to a server, which validates the JWT (fetching the
// JWKS this test serves on loopback) and writes the token; the token then works on every agent,
// and a logout through the client agent deletes it everywhere. A refused login writes no token.
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from '../integration/support/agent-process.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { signJwt, testKey } from '../unit/acl/auth-methods/jwt-support.js';
import { until } from './support.js';

const MANAGEMENT = '7a6b5c4d-3e2f-4a1b-8c9d-0e1f2a3b4c5d';
const KEY = testKey('ec', 'k1');

async function call(
  agent: AgentProcess,
  method: string,
  path: string,
  body?: unknown,
  token: string | null = MANAGEMENT,
): Promise<{ status: number; text: string }> {
  const res = await fetch(`${agent.url}${path}`, {
    method,
    headers: token === null ? {} : { 'X-Svc-Token': token },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, text: await res.text() };
}

describe('login through a client agent', () => {
  let etcd: EtcdCluster;
  let jwks: Server;
  let jwksUrl = '';
  let fetches = 0;
  const agents: AgentProcess[] = [];
  const prefix = `/svc-login-${process.pid}/`;

  const start = (name: string, server: boolean) =>
    startAgent({
      config: {
        node_name: name,
        acl: {
          enabled: true,
          default_policy: 'deny',
          ...(server ? { tokens: { initial_management: MANAGEMENT } } : {}),
        },
        cluster: { etcd: { prefix }, member_ttl: '3s' },
      },
      args: [...etcd.endpoints.flatMap((url) => ['-etcd', url]), ...(server ? ['-server'] : [])],
    });

  beforeAll(async () => {
    jwks = createServer((_req, res) => {
      fetches++;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: [KEY.jwk] }));
    });
    await new Promise<void>((done) => jwks.listen(0, '127.0.0.1', done));
    const address = jwks.address();
    if (address === null || typeof address === 'string') throw new Error('no JWKS address');
    jwksUrl = `http://127.0.0.1:${address.port}/jwks`;
    etcd = await startEtcdCluster({ size: 3 });
    agents.push(await start('agent-a', true));
    agents.push(...(await Promise.all([start('agent-b', true), start('agent-c', false)])));
  }, 90_000);
  afterAll(async () => {
    await Promise.all(agents.map((a) => a.stop('SIGKILL')));
    await etcd?.stop();
    await new Promise((done) => jwks.close(done));
  });

  it('a token made through the client works on every agent; logout through the client ends it everywhere', async () => {
    const client = agents[2] as AgentProcess;
    const method = await call(client, 'PUT', '/v1/acl/auth-method', {
      Name: 'ci',
      Type: 'jwt',
      Config: { JWKSURL: jwksUrl, BoundAudiences: ['svc-agent'], ClaimMappings: { sub: 'name' } },
    });
    expect(method.status, method.text).toBe(200);
    const rule = await call(client, 'PUT', '/v1/acl/binding-rule', {
      AuthMethod: 'ci',
      BindType: 'service',
      BindName: '${value.name}',
    });
    expect(rule.status, rule.text).toBe(200);
    for (const agent of agents) {
      expect((await call(agent, 'GET', '/v1/acl/binding-rules?authmethod=ci')).text).toContain('${value.name}');
    }
    const now = Math.floor(Date.now() / 1000);
    const jwt = await signJwt(KEY, { sub: 'web', aud: 'svc-agent', iat: now, exp: now + 300 }, { kid: 'k1' });
    const tokensBefore = (JSON.parse((await call(client, 'GET', '/v1/acl/tokens')).text) as unknown[]).length;
    const forged = await signJwt(testKey('ec', 'k1'), { sub: 'web', aud: 'svc-agent', iat: now, exp: now + 300 });
    expect(await call(client, 'POST', '/v1/acl/login', { AuthMethod: 'ci', BearerToken: forged }, null)).toEqual({
      status: 403,
      text: 'error verifying token: failed to verify id token signature',
    });
    const login = await call(client, 'POST', '/v1/acl/login', { AuthMethod: 'ci', BearerToken: jwt }, null);
    expect(login.status, login.text).toBe(200);
    const token = JSON.parse(login.text) as { SecretID: string; AccessorID: string; AuthMethod: string };
    expect(token.AuthMethod).toBe('ci');
    const tokensAfter = (JSON.parse((await call(client, 'GET', '/v1/acl/tokens')).text) as unknown[]).length;
    expect(tokensAfter).toBe(tokensBefore + 1);
    // The servers fetched the JWKS (the client agent has no validator of its own).
    expect(fetches).toBeGreaterThanOrEqual(1);
    for (const agent of agents) {
      const self = await until(
        () => call(agent, 'GET', '/v1/acl/token/self', undefined, token.SecretID),
        (r) => r.status === 200,
      );
      expect(JSON.parse(self.text)).toMatchObject({ AccessorID: token.AccessorID, AuthMethod: 'ci' });
    }
    expect(await call(client, 'POST', '/v1/acl/logout', undefined, token.SecretID)).toEqual({
      status: 200,
      text: 'true',
    });
    for (const agent of agents) {
      const gone = await until(
        () => call(agent, 'GET', '/v1/acl/token/self', undefined, token.SecretID),
        (r) => r.status === 403,
      );
      expect(gone.text).toBe('ACL not found');
    }
  });
});
