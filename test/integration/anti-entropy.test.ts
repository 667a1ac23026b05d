// Anti-entropy on one agent (docs/decisions.md D26): what is registered through the agent API reaches
// the catalog and health endpoints, a check's status change at once, an output-only change only
// once check_update_interval has passed (ordered by the catalog's index, not by the clock), and a
// deregistration removes it. Every wait is a blocking query on the answer that should change.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from './support/agent-process.js';

const NODE = 'ae-node';

interface Check {
  CheckID: string;
  Status: string;
  Output: string;
  ModifyIndex: number;
}
interface Entry {
  Node: { Node: string };
  Service: { ID: string; Service: string; Port: number };
  Checks: Check[];
}

describe('anti-entropy on one agent', () => {
  let agent: AgentProcess;
  beforeAll(async () => {
    agent = await startAgent({ config: { node_name: NODE, check_update_interval: '2s' } });
  });
  afterAll(async () => {
    await agent.stop();
  });

  const put = async (path: string, body?: unknown): Promise<void> => {
    const res = await fetch(agent.url + path, {
      method: 'PUT',
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    expect(res.status, await res.clone().text()).toBe(200);
  };

  /** Reads `path` with blocking queries until `done` accepts the answer; resolves to it and its index. */
  async function waitFor<T>(path: string, done: (value: T) => boolean): Promise<{ value: T; index: number }> {
    let index = 0;
    for (;;) {
      const sep = path.includes('?') ? '&' : '?';
      const res = await fetch(`${agent.url}${path}${index === 0 ? '' : `${sep}index=${index}&wait=1m`}`);
      const value = (await res.json()) as T;
      const next = Number(res.headers.get('x-svc-index'));
      if (done(value)) return { value, index: next };
      // An index that went back starts the wait again from 0, as Consul's clients do.
      index = next >= index ? next : 0;
    }
  }
  const byId = (checks: readonly Check[], id: string): Check | undefined => checks.find((c) => c.CheckID === id);

  it('syncs a service and its checks: a status change at once, an output-only one after the interval', async () => {
    await put('/v1/agent/service/register', {
      ID: 'web-1',
      Name: 'web',
      Port: 8080,
      Checks: [
        { CheckID: 'web-ttl', Name: 'ttl', TTL: '10m', Status: 'passing' },
        { CheckID: 'web-out', Name: 'out', TTL: '10m' },
      ],
    });
    const listed = await waitFor<{ Node: string; ServiceID: string }[]>('/v1/catalog/service/web', (v) => v.length > 0);
    expect(listed.value.map((s) => [s.Node, s.ServiceID])).toEqual([[NODE, 'web-1']]);
    const health = await waitFor<Entry[]>('/v1/health/service/web', (v) => v.length === 1);
    const [entry] = health.value;
    expect([entry?.Node.Node, entry?.Service.ID, entry?.Service.Port]).toEqual([NODE, 'web-1', 8080]);
    expect(entry?.Checks.map((c) => [c.CheckID, c.Status]).sort()).toEqual([
      ['serfHealth', 'passing'],
      ['web-out', 'critical'],
      ['web-ttl', 'passing'],
    ]);

    await put('/v1/agent/check/fail/web-ttl?note=down');
    const failed = await waitFor<Check[]>('/v1/health/checks/web', (v) => byId(v, 'web-ttl')?.Status === 'critical');
    expect(byId(failed.value, 'web-ttl')?.Output).toBe('down');

    // A status change carries its output at once.
    await put('/v1/agent/check/pass/web-out?note=first');
    const first = await waitFor<Check[]>('/v1/health/checks/web', (v) => byId(v, 'web-out')?.Status === 'passing');
    expect(byId(first.value, 'web-out')?.Output).toBe('first');

    // An output-only change waits; a status change made after it is written before it.
    await put('/v1/agent/check/pass/web-out?note=second');
    await put('/v1/agent/check/pass/web-ttl?note=up');
    const flipped = await waitFor<Check[]>('/v1/health/checks/web', (v) => byId(v, 'web-ttl')?.Status === 'passing');
    expect(byId(flipped.value, 'web-out')?.Output).toBe('first');
    const second = await waitFor<Check[]>('/v1/health/checks/web', (v) => byId(v, 'web-out')?.Output === 'second');
    const ttl = byId(flipped.value, 'web-ttl') as Check;
    expect((byId(second.value, 'web-out') as Check).ModifyIndex).toBeGreaterThan(ttl.ModifyIndex);
    expect(second.index).toBeGreaterThan(flipped.index);

    await put('/v1/agent/service/deregister/web-1');
    await waitFor<unknown[]>('/v1/catalog/service/web', (v) => v.length === 0);
    expect(await (await fetch(`${agent.url}/v1/health/checks/web`)).json()).toEqual([]);
  });

  it('syncs a maintenance check and a node check', async () => {
    await put('/v1/agent/service/register', { ID: 'api-1', Name: 'api', Port: 9000 });
    await waitFor<unknown[]>('/v1/catalog/service/api', (v) => v.length === 1);
    await put('/v1/agent/service/maintenance/api-1?enable=true&reason=upgrade');
    const maintenance = await waitFor<Check[]>('/v1/health/checks/api', (v) => v.length === 1);
    expect(maintenance.value.map((c) => [c.CheckID, c.Status])).toEqual([['_service_maintenance:api-1', 'critical']]);
    await put('/v1/agent/service/maintenance/api-1?enable=false');
    await waitFor<Check[]>('/v1/health/checks/api', (v) => v.length === 0);

    await put('/v1/agent/check/register', { ID: 'disk', Name: 'disk', TTL: '10m', Status: 'warning' });
    const node = await waitFor<Check[]>(`/v1/health/node/${NODE}`, (v) => byId(v, 'disk') !== undefined);
    expect(byId(node.value, 'disk')?.Status).toBe('warning');
    await put('/v1/agent/check/deregister/disk');
    await waitFor<Check[]>(`/v1/health/node/${NODE}`, (v) => byId(v, 'disk') === undefined);
  });
});
