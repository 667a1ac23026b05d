// The agent's local services on the real agent: register with a sidecar, list and filter,
// deregister, hash-blocking reads, maintenance, health status codes, a restart with data_dir.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerOf } from '../support/errors.js';
import { startAgent, tempDir, type AgentProcess } from './support/agent-process.js';

describe('agent services', () => {
  let agent: AgentProcess;
  beforeAll(async () => {
    agent = await startAgent();
  });
  afterAll(async () => {
    await agent.stop();
  });

  const put = (path: string, body?: unknown): Promise<Response> =>
    fetch(agent.url + path, { method: 'PUT', ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const failure = async (res: Response): Promise<[number, string]> => [res.status, await res.text()];
  const services = async (query = ''): Promise<Record<string, Record<string, unknown>>> =>
    (await fetch(`${agent.url}/v1/agent/services${query}`)).json() as Promise<Record<string, Record<string, unknown>>>;

  it('registers a service with its sidecar, as Consul fills it in', async () => {
    const res = await put('/v1/agent/service/register', {
      Name: 'web',
      Port: 8080,
      Tags: ['v1'],
      Meta: { team: 'a' },
      Connect: { SidecarService: { Proxy: { Upstreams: [{ DestinationName: 'db', LocalBindPort: 9191 }] } } },
      Check: { TTL: '30s' },
    });
    expect(res.status).toBe(200);
    const all = await services();
    expect(all.web).toEqual({
      ID: 'web',
      Service: 'web',
      Tags: ['v1'],
      Meta: { team: 'a' },
      Port: 8080,
      Address: '',
      Weights: { Passing: 1, Warning: 1 },
      EnableTagOverride: false,
      Datacenter: 'dc1',
    });
    expect(all['web-sidecar-proxy']).toMatchObject({
      Kind: 'connect-proxy',
      ID: 'web-sidecar-proxy',
      Service: 'web-sidecar-proxy',
      Port: 21000,
      Tags: ['v1'],
      Meta: { team: 'a' },
      Proxy: {
        DestinationServiceName: 'web',
        DestinationServiceID: 'web',
        LocalServiceAddress: '127.0.0.1',
        LocalServicePort: 8080,
        Upstreams: [{ DestinationType: 'service', DestinationName: 'db', LocalBindPort: 9191, MeshGateway: {} }],
      },
    });
    const checks = (await (await fetch(`${agent.url}/v1/agent/checks`)).json()) as Record<string, { Name: string }>;
    expect(Object.keys(checks).sort()).toEqual([
      'service:web',
      'service:web-sidecar-proxy:1',
      'service:web-sidecar-proxy:2',
    ]);
    expect(Object.keys(await services('?filter=' + encodeURIComponent('Kind == "connect-proxy"')))).toEqual([
      'web-sidecar-proxy',
    ]);
  });

  it('refuses a bad registration with Consul texts', async () => {
    expect(await failure(await put('/v1/agent/service/register', { Port: 1 }))).toEqual(
      answerOf('SERVICE_MISSING_NAME'),
    );
    expect(await failure(await put('/v1/agent/service/register', { Name: 'x', Check: { HTTP: 'http://a' } }))).toEqual(
      answerOf('CHECK_INVALID', {
        detail: 'Interval must be > 0 for Script, HTTP, H2PING, TCP, UDP or OSService checks',
      }),
    );
    expect(
      await failure(await put('/v1/agent/service/register', { Name: 'x', Check: { Args: ['true'], Interval: '1s' } })),
    ).toEqual(answerOf('CHECK_SCRIPTS_DISABLED'));
    expect(await failure(await put('/v1/agent/service/deregister/nope'))).toEqual(
      answerOf('SERVICE_UNKNOWN', { id: 'nope' }),
    );
    expect(await failure(await put('/v1/agent/service/register'))).toEqual(
      answerOf('BODY_DECODE', { prefix: 'Request decode failed', detail: 'EOF' }),
    );
  });

  it('answers a hash-blocking read when the service changes', async () => {
    await put('/v1/agent/service/register', { Name: 'api', Port: 1 });
    const first = await fetch(`${agent.url}/v1/agent/service/api`);
    const hash = first.headers.get('X-Svc-ContentHash') as string;
    expect(((await first.json()) as { ContentHash: string }).ContentHash).toBe(hash);
    const blocked = fetch(`${agent.url}/v1/agent/service/api?hash=${hash}&wait=60s`);
    await put('/v1/agent/service/register', { Name: 'api', Port: 2 });
    const woken = await blocked;
    expect(woken.status).toBe(200);
    expect(woken.headers.get('X-Svc-ContentHash')).not.toBe(hash);
    expect(((await woken.json()) as { Port: number }).Port).toBe(2);
    expect(await failure(await fetch(`${agent.url}/v1/agent/service/nope`))).toEqual(
      answerOf('SERVICE_NOT_FOUND', { id: 'nope' }),
    );
  });

  it('answers health with Consul status codes and follows maintenance', async () => {
    await put('/v1/agent/service/register', { Name: 'db', ID: 'db1', Check: { CheckID: 'db-ttl', TTL: '60s' } });
    const health = async (path: string): Promise<[number, string]> => {
      const res = await fetch(`${agent.url}/v1/agent/health/service/${path}?format=text`);
      return [res.status, await res.text()];
    };
    expect(await health('id/db1')).toEqual([503, 'critical']);
    await put('/v1/agent/check/warn/db-ttl');
    expect(await health('id/db1')).toEqual([429, 'warning']);
    await put('/v1/agent/check/pass/db-ttl');
    expect(await health('id/db1')).toEqual([200, 'passing']);
    expect(await health('name/db')).toEqual([200, 'passing']);
    expect(await health('id/none')).toEqual([404, 'ServiceId none not found']);
    expect(await health('name/none')).toEqual([404, 'ServiceName none Not Found']);
    const json = (await (await fetch(`${agent.url}/v1/agent/health/service/id/db1`)).json()) as Record<string, unknown>;
    expect(json).toMatchObject({ AggregatedStatus: 'passing', Service: { ID: 'db1', Service: 'db' } });

    expect((await put('/v1/agent/service/maintenance/db1?enable=true&reason=upgrade')).status).toBe(200);
    expect(await health('id/db1')).toEqual([503, 'maintenance']);
    const checks = (await (await fetch(`${agent.url}/v1/agent/checks`)).json()) as Record<
      string,
      Record<string, unknown>
    >;
    expect(checks['_service_maintenance:db1']).toMatchObject({
      Status: 'critical',
      Notes: 'upgrade',
      ServiceID: 'db1',
    });
    await put('/v1/agent/service/maintenance/db1?enable=false');
    expect(await health('id/db1')).toEqual([200, 'passing']);
    expect(await failure(await put('/v1/agent/service/maintenance/db1'))).toEqual(
      answerOf('SERVICE_MAINTENANCE_NO_ENABLE'),
    );
  });

  it('deregisters a service with its sidecar and checks', async () => {
    expect((await put('/v1/agent/service/deregister/web')).status).toBe(200);
    const all = await services();
    expect(all.web).toBeUndefined();
    expect(all['web-sidecar-proxy']).toBeUndefined();
    const checks = (await (await fetch(`${agent.url}/v1/agent/checks`)).json()) as Record<string, unknown>;
    expect(Object.keys(checks).filter((id) => id.includes('web'))).toEqual([]);
  });
});

describe('agent services across a restart', () => {
  it('keeps API registrations and TTL check status in data_dir', async () => {
    const dir = await tempDir();
    try {
      let agent = await startAgent({ dataDir: dir.path });
      await fetch(`${agent.url}/v1/agent/service/register`, {
        method: 'PUT',
        body: JSON.stringify({
          Name: 'kept',
          Port: 7,
          Connect: { SidecarService: {} },
          Check: { CheckID: 'k', TTL: '1h' },
        }),
      });
      await fetch(`${agent.url}/v1/agent/check/pass/k?note=fine`, { method: 'PUT' });
      await agent.stop();
      agent = await startAgent({ dataDir: dir.path });
      try {
        const services = (await (await fetch(`${agent.url}/v1/agent/services`)).json()) as Record<string, unknown>;
        expect(Object.keys(services).sort()).toEqual(['kept', 'kept-sidecar-proxy']);
        const checks = (await (await fetch(`${agent.url}/v1/agent/checks`)).json()) as Record<
          string,
          Record<string, unknown>
        >;
        expect(checks.k).toMatchObject({ Status: 'passing', Output: 'fine' });
      } finally {
        await agent.stop();
      }
    } finally {
      await dir.remove();
    }
  });
});

describe('agent services from config files', () => {
  it('registers HCL and JSON service blocks from -config-dir, sidecars in its port range, and follows a reload', async () => {
    const dir = await tempDir('svc-config-');
    const hcl = [
      'service {',
      '  name = "web"',
      '  port = 80',
      '  connect { sidecar_service {} }',
      '  check {',
      '    id = "web-ttl"',
      '    ttl = "30s"',
      '  }',
      '}',
      'service {',
      '  name = "api"',
      '  checks = [{ id = "api-1", ttl = "10s" }, { id = "api-2", ttl = "10s" }]',
      '}',
    ].join('\n');
    await writeFile(join(dir.path, 'a.hcl'), hcl);
    await writeFile(
      join(dir.path, 'b.json'),
      JSON.stringify({
        services: [{ name: 'db', port: 5432 }],
        ports: { sidecar_min_port: 22000, sidecar_max_port: 22001 },
      }),
    );
    const agent = await startAgent({ args: ['-config-dir', dir.path] });
    try {
      const ports = async (): Promise<Record<string, number>> => {
        const all = (await (await fetch(`${agent.url}/v1/agent/services`)).json()) as Record<string, { Port: number }>;
        return Object.fromEntries(Object.entries(all).map(([id, s]) => [id, s.Port]));
      };
      expect(await ports()).toEqual({ web: 80, 'web-sidecar-proxy': 22000, api: 0, db: 5432 });
      const checks = (await (await fetch(`${agent.url}/v1/agent/checks`)).json()) as Record<string, unknown>;
      expect(Object.keys(checks).sort()).toEqual([
        'api-1',
        'api-2',
        'service:web-sidecar-proxy:1',
        'service:web-sidecar-proxy:2',
        'web-ttl',
      ]);

      await writeFile(join(dir.path, 'a.hcl'), 'service {\n  name = "web"\n  port = 81\n}\n');
      const from = agent.logs.length;
      agent.child.kill('SIGHUP');
      await agent.waitForLog((l) => l.msg === 'config reloaded', from);
      expect(await ports()).toEqual({ web: 81, db: 5432 });

      await writeFile(join(dir.path, 'b.json'), JSON.stringify({ service: { name: 'db', port: 'x' } }));
      const again = agent.logs.length;
      agent.child.kill('SIGHUP');
      const failed = await agent.waitForLog((l) => String(l.msg).startsWith('config reload failed'), again);
      expect(JSON.stringify(failed)).toContain(
        'b.json: service \\"db\\" (services[1]): Request decode failed: Port must be an integer',
      );
      expect(await ports()).toEqual({ web: 81, db: 5432 });
    } finally {
      await agent.stop();
      await dir.remove();
    }
  });
});
