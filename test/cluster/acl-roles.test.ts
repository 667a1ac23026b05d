// ACL roles across a cluster (servers a and b, client c, on a 3-member etcd; docs/decisions.md#acl-roles):
// a role edit made through any one agent, a client agent's forwarded write included, governs the
// next request of a token that links it on every agent. Each agent's view is awaited with a blocking
// read of the role (no sleeps); the request after it must already be judged by the edit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from '../integration/support/agent-process.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';

const MANAGEMENT = '7d1c1d2e-8a7b-4c6d-9e0f-a1b2c3d4e5f6';
const PREFIX = `/svc-acl-roles-${process.pid}/`;

let etcd: EtcdCluster;
let agents: AgentProcess[] = [];

/** One agent of the mesh with ACLs on (default deny), as test/cluster/support.ts's startClusterAgent starts one. */
function startAclAgent(name: string, server: boolean): Promise<AgentProcess> {
  return startAgent({
    config: {
      node_name: name,
      acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: MANAGEMENT } },
      cluster: { etcd: { prefix: PREFIX }, member_ttl: '3s' },
    },
    args: [...etcd.endpoints.flatMap((url) => ['-etcd', url]), ...(server ? ['-server'] : [])],
  });
}

async function call(agent: AgentProcess, method: string, path: string, body?: unknown, token = MANAGEMENT) {
  const res = await fetch(`${agent.url}${path}`, {
    method,
    headers: { 'X-Svc-Token': token },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  return { status: res.status, index: Number(res.headers.get('x-svc-index')), text: await res.text() };
}

async function json<T>(agent: AgentProcess, method: string, path: string, body?: unknown): Promise<T> {
  const answer = await call(agent, method, path, body);
  expect(answer.status, answer.text).toBe(200);
  return JSON.parse(answer.text) as T;
}

/** Waits, with blocking reads of the role, until every agent's view holds it at `modifyIndex` or later. */
async function roleSeenEverywhere(id: string, modifyIndex: number): Promise<void> {
  await Promise.all(
    agents.map(async (agent) => {
      let index = 0;
      for (;;) {
        const answer = await call(agent, 'GET', `/v1/acl/role/${id}?index=${index}&wait=5s`);
        if (answer.status === 200 && (JSON.parse(answer.text) as { ModifyIndex: number }).ModifyIndex >= modifyIndex)
          return;
        index = answer.index;
      }
    }),
  );
}

/** The status of a KV write to app/x with `token` on each agent, in agent order. */
async function kvWrites(token: string): Promise<number[]> {
  return Promise.all(agents.map(async (agent) => (await call(agent, 'PUT', '/v1/kv/app/x', 'v', token)).status));
}

beforeAll(async () => {
  etcd = await startEtcdCluster({ size: 3 });
  const a = await startAclAgent('agent-a', true);
  agents = [a];
  const [b, c] = await Promise.all([startAclAgent('agent-b', true), startAclAgent('agent-c', false)]);
  agents = [a, b, c];
}, 120_000);
afterAll(async () => {
  await Promise.all(agents.map((agent) => agent.stop('SIGKILL')));
  await etcd?.stop();
});

describe('ACL roles across a cluster', () => {
  it('a role edit through one agent governs the next request on every agent', async () => {
    const [a, b, c] = agents as [AgentProcess, AgentProcess, AgentProcess];
    const policy = await json<{ ID: string }>(a, 'PUT', '/v1/acl/policy', {
      Name: 'app-kv',
      Rules: 'key_prefix "app/" { policy = "write" }',
    });
    const role = await json<{ ID: string; ModifyIndex: number }>(a, 'PUT', '/v1/acl/role', {
      Name: 'app',
      Policies: [{ ID: policy.ID }],
    });
    // The token is made through the client agent (forwarded to a server), linking the role by name.
    const token = await json<{ SecretID: string; AccessorID: string; Roles: unknown }>(c, 'PUT', '/v1/acl/token', {
      Roles: [{ Name: 'app' }],
    });
    expect(token.Roles).toEqual([{ ID: role.ID, Name: 'app' }]);
    await Promise.all(
      agents.map(async (agent) => {
        let index = 0;
        for (;;) {
          const answer = await call(agent, 'GET', `/v1/acl/token/${token.AccessorID}?index=${index}&wait=5s`);
          if (answer.status === 200) return;
          index = answer.index;
        }
      }),
    );
    await roleSeenEverywhere(role.ID, role.ModifyIndex);
    expect(await kvWrites(token.SecretID)).toEqual([200, 200, 200]);

    // Through server b: the role loses the KV policy and gains builtin/service.
    const edited = await json<{ ModifyIndex: number }>(b, 'PUT', `/v1/acl/role/${role.ID}`, {
      Name: 'app',
      TemplatedPolicies: [{ TemplateName: 'builtin/service', TemplateVariables: { Name: 'web' } }],
    });
    await roleSeenEverywhere(role.ID, edited.ModifyIndex);
    expect(await kvWrites(token.SecretID)).toEqual([403, 403, 403]);

    // Through client c (forwarded): the policy is back.
    const restored = await json<{ ModifyIndex: number }>(c, 'PUT', `/v1/acl/role/${role.ID}`, {
      Name: 'app',
      Policies: [{ Name: 'app-kv' }],
    });
    await roleSeenEverywhere(role.ID, restored.ModifyIndex);
    expect(await kvWrites(token.SecretID)).toEqual([200, 200, 200]);

    // Every agent shows the same role, names filled in.
    const shown = await Promise.all(agents.map((agent) => json(agent, 'GET', `/v1/acl/role/name/app`)));
    expect(shown[1]).toEqual(shown[0]);
    expect(shown[2]).toEqual(shown[0]);
    expect(shown[0]).toMatchObject({ Policies: [{ ID: policy.ID, Name: 'app-kv' }] });
  });
});
