// ACLs on the agent's local services and checks: service:write to register (and on the sidecar's
// name too), write on a check's service (node:write for a node check) to update it, and lists
// filtered by service:read, saying so to a caller that gave a token.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from './support/agent-process.js';

const MANAGEMENT = '5b1c7d2e-3f40-4a51-8b62-9c7d8e9fa0b1';

describe('agent services under ACLs', () => {
  let agent: AgentProcess;
  let webWriter: string;
  beforeAll(async () => {
    agent = await startAgent({
      args: ['-node', 'acl-node'],
      config: { acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: MANAGEMENT } } },
    });
    const api = async (path: string, body: unknown): Promise<Record<string, unknown>> =>
      (await (
        await fetch(agent.url + path, {
          method: 'PUT',
          headers: { 'X-Svc-Token': MANAGEMENT },
          body: JSON.stringify(body),
        })
      ).json()) as Record<string, unknown>;
    await api('/v1/acl/policy', { Name: 'web', Rules: 'service "web" { policy = "write" }' });
    webWriter = (await api('/v1/acl/token', { Policies: [{ Name: 'web' }] })).SecretID as string;
  });
  afterAll(async () => {
    await agent.stop();
  });

  const call = (method: string, path: string, token: string, body?: unknown): Promise<Response> =>
    fetch(agent.url + path, {
      method,
      headers: { 'X-Svc-Token': token },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  it('needs service:write on the service and on its sidecar', async () => {
    expect(
      (await call('PUT', '/v1/agent/service/register', webWriter, { Name: 'web', Check: { TTL: '1m' } })).status,
    ).toBe(200);
    const withSidecar = await call('PUT', '/v1/agent/service/register', webWriter, {
      Name: 'web',
      Connect: { SidecarService: {} },
    });
    expect(withSidecar.status).toBe(403);
    expect(await withSidecar.text()).toContain('lacks permission \'service:write\' on "web-sidecar-proxy"');
    expect((await call('PUT', '/v1/agent/service/register', webWriter, { Name: 'db' })).status).toBe(403);
    expect(
      (await call('PUT', '/v1/agent/service/register', MANAGEMENT, { Name: 'db', Check: { TTL: '1m' } })).status,
    ).toBe(200);
  });

  it('needs write on the check service, or node:write for a node check', async () => {
    expect((await call('PUT', '/v1/agent/check/pass/service:web', webWriter)).status).toBe(200);
    expect((await call('PUT', '/v1/agent/check/pass/service:db', webWriter)).status).toBe(403);
    const nodeCheck = await call('PUT', '/v1/agent/check/register', webWriter, { Name: 'mem', TTL: '1m' });
    expect(nodeCheck.status).toBe(403);
    expect(await nodeCheck.text()).toContain('lacks permission \'node:write\' on "acl-node"');
    expect((await call('PUT', '/v1/agent/service/deregister/db', webWriter)).status).toBe(403);
  });

  it('filters lists by service:read and says so to a caller with a token', async () => {
    const res = await call('GET', '/v1/agent/services', webWriter);
    expect(Object.keys((await res.json()) as object)).toEqual(['web']);
    expect(res.headers.get('X-Svc-Results-Filtered-By-ACLs')).toBe('true');
    const checks = await call('GET', '/v1/agent/checks', webWriter);
    expect(Object.keys((await checks.json()) as object)).toEqual(['service:web']);
    const all = await call('GET', '/v1/agent/services', MANAGEMENT);
    expect(Object.keys((await all.json()) as object).sort()).toEqual(['db', 'web']);
    expect(all.headers.get('X-Svc-Results-Filtered-By-ACLs')).toBeNull();
  });
});
