// Config entries on a cluster (two server agents and a client agent on a 3-member etcd): an entry
// written through one agent governs the next request on every agent once that agent's view holds
// it. Each agent is waited on with a blocking read from the index before the write (no sleeps);
// then authorize on that agent answers from the new intentions. A write through the client agent
// is forwarded to a server, ?cas included (docs/decisions.md#config-entries).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentProcess } from '../integration/support/agent-process.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { startClusterAgents, type ClusterAgents } from './support.js';

const uri = (service: string, td: string): string => `spiffe://${td}/ns/default/dc/dc1/svc/${service}`;

async function call(agent: AgentProcess, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${agent.url}${path}`, {
    method,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** Waits (a blocking read) until the agent's view has changed `path` past `index`; its answer. */
async function past(agent: AgentProcess, path: string, index: string): Promise<Response> {
  for (;;) {
    const res = await call(agent, 'GET', `${path}${path.includes('?') ? '&' : '?'}index=${index}&wait=30s`);
    if (Number(res.headers.get('X-Svc-Index')) > Number(index)) return res;
  }
}

describe('config entries across a cluster', () => {
  let etcd: EtcdCluster;
  let cluster: ClusterAgents;
  let trustDomain: string;

  beforeAll(async () => {
    etcd = await startEtcdCluster({ size: 3 });
    cluster = await startClusterAgents(etcd, { prefix: `/svc-config-entries-${process.pid}/` });
    const roots = (await (await call(cluster.agents[0]!, 'GET', '/v1/agent/connect/ca/roots')).json()) as {
      TrustDomain: string;
    };
    trustDomain = roots.TrustDomain;
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
    await etcd?.stop();
  });

  const authorized = async (agent: AgentProcess, source: string, target: string): Promise<boolean> => {
    const res = await call(agent, 'POST', '/v1/agent/connect/authorize', {
      Target: target,
      ClientCertURI: uri(source, trustDomain),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { Authorized: boolean }).Authorized;
  };

  it('a service-intentions deny written through one agent denies the next authorize on every agent', async () => {
    const [a, b, c] = cluster.agents as [AgentProcess, AgentProcess, AgentProcess];
    const path = '/v1/config/service-intentions/db';
    let failures = 0;

    // Allow web through a server.
    let before = (await call(a, 'GET', path)).headers.get('X-Svc-Index')!;
    const allow = await call(a, 'PUT', '/v1/config', {
      Kind: 'service-intentions',
      Name: 'db',
      Sources: [{ Name: 'web', Action: 'allow' }],
    });
    if ((await allow.text()) !== 'true') failures++;
    for (const agent of cluster.agents) {
      await past(agent, path, before);
      if (!(await authorized(agent, 'web', 'db'))) failures++;
    }

    // Deny it through the client agent (forwarded to a server): every agent denies next.
    before = (await call(c, 'GET', path)).headers.get('X-Svc-Index')!;
    const deny = await call(c, 'PUT', '/v1/config', {
      Kind: 'service-intentions',
      Name: 'db',
      Sources: [{ Name: 'web', Action: 'deny' }],
    });
    if ((await deny.text()) !== 'true') failures++;
    for (const agent of cluster.agents) {
      const res = await past(agent, path, before);
      const entry = (await res.json()) as { Sources: { Name: string; Action: string }[] };
      expect(entry.Sources).toMatchObject([{ Name: 'web', Action: 'deny' }]);
      if (await authorized(agent, 'web', 'db')) failures++;
      // The same rows through the intentions API.
      const listed = (await (await call(agent, 'GET', '/v1/connect/intentions')).json()) as { Action: string }[];
      expect(listed.map((i) => i.Action)).toEqual(['deny']);
    }

    // An intention written through /v1/connect/intentions on another agent shows in the entry everywhere.
    before = (await call(b, 'GET', path)).headers.get('X-Svc-Index')!;
    expect(
      await (
        await call(b, 'PUT', '/v1/connect/intentions/exact?source=api&destination=db', { Action: 'allow' })
      ).text(),
    ).toBe('true');
    for (const agent of cluster.agents) {
      const entry = (await (await past(agent, path, before)).json()) as { Sources: { Name: string }[] };
      expect(entry.Sources.map((s) => s.Name)).toEqual(['web', 'api']);
      if (!(await authorized(agent, 'api', 'db'))) failures++;
    }
    expect(failures).toBe(0);
  });

  it('service-defaults written and deleted with ?cas through the client agent, read on every agent', async () => {
    const [a, , c] = cluster.agents as [AgentProcess, AgentProcess, AgentProcess];
    const path = '/v1/config/service-defaults/web';
    const before = (await call(a, 'GET', path)).headers.get('X-Svc-Index')!;
    const put = await call(c, 'PUT', '/v1/config?cas=0', { Kind: 'service-defaults', Name: 'web', Protocol: 'http' });
    expect(await put.text()).toBe('true');
    expect(await (await call(c, 'PUT', '/v1/config?cas=0', { Kind: 'service-defaults', Name: 'web' })).text()).toBe(
      'false',
    );
    let modifyIndex = 0;
    for (const agent of cluster.agents) {
      const entry = (await (await past(agent, path, before)).json()) as { Protocol: string; ModifyIndex: number };
      expect(entry.Protocol).toBe('http');
      modifyIndex = entry.ModifyIndex;
    }
    expect(await (await call(c, 'DELETE', `${path}?cas=${modifyIndex + 1}`)).text()).toBe('false');
    expect(await (await call(c, 'DELETE', `${path}?cas=${modifyIndex}`)).text()).toBe('true');
    for (const agent of cluster.agents) {
      const res = await past(agent, path, String(modifyIndex));
      expect(res.status).toBe(404);
    }
  });
});
