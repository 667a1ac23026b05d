// The npm `consul` client (a devDependency, as a user installs it) against the real agent: it
// registers a service with a sidecar, reads the agent's services and checks, runs a TTL check
// through pass, warn and fail (its typings ask a TTL check for a timeout too), and finds the
// instance in catalog.service and health.service with passing while the check passes.
import Consul from 'consul';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../cluster/support.js';
import { startAgent, type AgentProcess } from './support/agent-process.js';

/** The catalog follows the agent's state a sync later: reads are repeated until they show it. */
const same =
  (want: string[]) =>
  (got: string[]): boolean =>
    JSON.stringify(got) === JSON.stringify(want);

describe('the npm consul client on local services', () => {
  let agent: AgentProcess;
  let consul: Consul;
  beforeAll(async () => {
    agent = await startAgent();
    consul = new Consul({ host: '127.0.0.1', port: agent.port });
  });
  afterAll(async () => {
    await agent.stop();
  });

  it('registers a service with a sidecar and runs its TTL check', async () => {
    await consul.agent.service.register({
      name: 'web',
      port: 8080,
      connect: { sidecarservice: {} },
      check: { checkid: 'web-ttl', name: 'web ttl', ttl: '30s', timeout: '1s' },
    });
    const services = (await consul.agent.service.list()) as Record<string, { Service: string; Port: number }>;
    expect(services.web?.Port).toBe(8080);
    expect(services['web-sidecar-proxy']).toMatchObject({ Service: 'web-sidecar-proxy', Port: 21000 });

    const status = async (): Promise<string> =>
      ((await consul.agent.check.list()) as Record<string, { Status: string }>)['web-ttl']?.Status ?? 'missing';
    expect(await status()).toBe('critical');
    // The agent syncs its services into the catalog (anti-entropy): the instance is there, not passing yet.
    await until(async () => (await consul.catalog.service.nodes('web')).map((n) => n.ServiceID), same(['web']));
    const passing = async (): Promise<string[]> =>
      (await consul.health.service({ service: 'web', passing: true })).map((e) => e.Service.ID);
    expect(await passing()).toEqual([]);
    await consul.agent.check.pass({ id: 'web-ttl', note: 'ok' });
    expect(await status()).toBe('passing');
    await until(passing, same(['web']));
    await consul.agent.check.warn('web-ttl');
    expect(await status()).toBe('warning');
    await until(passing, same([]));
    await consul.agent.check.fail('web-ttl');
    expect(await status()).toBe('critical');
    expect(await passing()).toEqual([]);

    await consul.agent.service.deregister('web');
    expect(Object.keys((await consul.agent.service.list()) as object)).toEqual([]);
  });
});
