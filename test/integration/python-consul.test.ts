// Debian's python3-consul (python-consul 0.7.1) as a real client: a small program
// (support/python-consul-client.py) registers a service and a sidecar, reads the catalog and
// health with passing=True, and runs a TTL check through its life, the agent's service found by
// health.service(passing=True) only while the check passes; each step's printed JSON is asserted
// here. scripts/ensure-python-consul.sh installs the package on a fresh Debian machine.
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from './support/agent-process.js';

const run = promisify(execFile);
const ENSURE = resolve(import.meta.dirname, '../../scripts/ensure-python-consul.sh');
const PROGRAM = resolve(import.meta.dirname, 'support/python-consul-client.py');

/** This process's environment without the CONSUL_ variables python-consul would take over its arguments. */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(CONSUL|SVC)_/.test(name)));
}

describe("Debian's python3-consul against the agent", () => {
  let agent: AgentProcess;
  beforeAll(async () => {
    // A Consul client library reads X-Consul-Index: the header brand it expects (docs/decisions.md D1).
    agent = await startAgent({ config: { http_config: { header_brand: 'Consul' } } });
  });
  afterAll(() => agent.stop());

  it(
    'registers, reads the catalog and health, and runs a TTL check through its life',
    { timeout: 300_000 },
    async () => {
      const python = (await run(ENSURE, [])).stdout.trim();
      const { stdout } = await run(python, [PROGRAM, String(agent.port)], { env: cleanEnv() });
      const steps = new Map<string, Record<string, unknown>>();
      for (const line of stdout.trim().split('\n')) {
        const { step, ...result } = JSON.parse(line) as { step: string } & Record<string, unknown>;
        steps.set(step, result);
      }
      expect(steps.get('register')).toEqual({ ok: true });
      // 0.7.1's agent.service.register has no `connect`: the sidecar goes through the library's c.http.
      expect(steps.get('register_sidecar')).toEqual({ ok: true });
      expect(steps.get('agent_services')).toEqual({
        services: {
          'api-1': { name: 'api', kind: '', port: 9000, destination: '' },
          'web-1': { name: 'web', kind: '', port: 8080, destination: '' },
          'web-1-sidecar-proxy': { name: 'web-sidecar-proxy', kind: 'connect-proxy', port: 21000, destination: 'web' },
        },
      });
      expect(steps.get('catalog_register')).toEqual({ ok: [true, true, true] });
      expect(steps.get('catalog_service')).toEqual({
        instances: [
          { node: 'node-b', address: '10.1.0.2', id: 'web-b', port: 8080, tags: ['v2'] },
          { node: 'node-c', address: '10.1.0.3', id: 'web-c', port: 8080, tags: [] },
        ],
      });
      expect(steps.get('catalog_sidecar')).toEqual({
        instances: [{ node: 'node-b', kind: 'connect-proxy', destination: 'web', port: 21000 }],
      });
      // passing=True leaves out node-c, whose instance's check is critical.
      expect(steps.get('health_passing')).toEqual({
        index: true,
        instances: [{ node: 'node-b', id: 'web-b', checks: ['passing'] }],
      });

      expect(steps.get('check_register')).toEqual({ ok: true, check: { status: 'critical', output: '' } });
      // The service registered on the agent, through health.service(passing=True) once anti-entropy
      // wrote its check's status: in while the TTL check passes, out while it warns or fails.
      expect(steps.get('api_health_critical')).toEqual({ passing: [] });
      expect(steps.get('ttl_pass_health')).toEqual({
        passing: [{ id: 'api-1', own_node: true, checks: ['api-ready', 'serfHealth'] }],
      });
      expect(steps.get('ttl_warn_health')).toEqual({ passing: [] });
      expect(steps.get('ttl_fail_health')).toEqual({ passing: [] });
      // 0.7.1 sends GET for pass/warn/fail/deregister; the agent, as Consul since 1.0, takes only PUT
      // (405): the library's method returns False and changes nothing; the PUT through c.http does it.
      expect(steps.get('ttl_pass')).toEqual({
        library: false,
        unchanged: { status: 'critical', output: '' },
        ok: true,
        check: { status: 'passing', output: 'ttl_pass' },
      });
      expect(steps.get('ttl_warn')).toEqual({
        library: false,
        unchanged: { status: 'passing', output: 'ttl_pass' },
        ok: true,
        check: { status: 'warning', output: 'ttl_warn' },
      });
      expect(steps.get('ttl_fail')).toEqual({
        library: false,
        unchanged: { status: 'warning', output: 'ttl_warn' },
        ok: true,
        check: { status: 'critical', output: 'ttl_fail' },
      });
      expect(steps.get('check_deregister')).toEqual({
        library: false,
        unchanged: { status: 'critical', output: 'ttl_fail' },
        ok: true,
        check: null,
      });
    },
  );
});
