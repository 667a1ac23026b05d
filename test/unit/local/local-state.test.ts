// LocalState: Consul's registration defaults (IDs, names, statuses, weights, sidecar), replaced
// checks, maintenance, and the change events anti-entropy follows.
import { describe, expect, it } from 'vitest';
import { readServiceDefinition, readCheckDefinition } from '../../../src/local/definition.js';
import { LocalState, type LocalEvent } from '../../../src/local/local-state.js';
import { agentErrorOf } from '../../support/errors.js';

const def = (raw: Record<string, unknown>) => readServiceDefinition(raw);

describe('LocalState', () => {
  it('names service checks as Consul does and starts them critical', () => {
    const state = new LocalState('n1');
    state.addService(def({ Name: 'web', Checks: [{ TTL: '10s' }, { TTL: '5s', Status: 'passing', Name: 'b' }] }));
    const checks = state.checksOf('web');
    expect(checks.map((c) => [c.checkId, c.name, c.status])).toEqual([
      ['service:web:1', "Service 'web' check", 'critical'],
      ['service:web:2', 'b', 'passing'],
    ]);
    state.addService(def({ ID: 'api-1', Name: 'api', Check: { TTL: '1s' } }));
    expect(state.checksOf('api-1').map((c) => c.checkId)).toEqual(['service:api-1']);
    expect(state.service('web')?.weights).toEqual({ passing: 1, warning: 1 });
  });

  it('registers a sidecar with Consul defaults, the next free port, and default checks', () => {
    const state = new LocalState('n1');
    state.addService(def({ Name: 'web', Port: 8080, Tags: ['t'], Connect: { SidecarService: {} } }));
    state.addService(def({ Name: 'db', Port: 5432, Connect: { sidecar_service: { Port: 0 } } }));
    const proxy = state.service('web-sidecar-proxy');
    expect(proxy).toMatchObject({
      kind: 'connect-proxy',
      service: 'web-sidecar-proxy',
      port: 21000,
      tags: ['t'],
      sidecarOf: 'web',
      proxy: {
        destinationServiceName: 'web',
        destinationServiceId: 'web',
        localServiceAddress: '127.0.0.1',
        localServicePort: 8080,
      },
    });
    expect(state.service('db-sidecar-proxy')?.port).toBe(21001);
    expect(state.checksOf('web-sidecar-proxy').map((c) => [c.name, c.type, c.spec.tcp || c.spec.aliasService])).toEqual(
      [
        ['Connect Sidecar Listening', 'tcp', '127.0.0.1:21000'],
        ['Connect Sidecar Aliasing web', 'alias', 'web'],
      ],
    );
    // Re-registering keeps the port it had; deregistering the parent removes the sidecar.
    state.addService(def({ Name: 'web', Port: 8080, Connect: { SidecarService: {} } }));
    expect(state.service('web-sidecar-proxy')?.port).toBe(21000);
    state.removeService('web');
    expect(state.service('web-sidecar-proxy')).toBeUndefined();
    expect(state.checksOf('web-sidecar-proxy')).toEqual([]);
  });

  it('refuses a sidecar when the port range is used up', () => {
    const state = new LocalState('n1', { min: 21000, max: 21000 });
    state.addService(def({ Name: 'a', Connect: { SidecarService: {} } }));
    expect(agentErrorOf(() => state.addService(def({ Name: 'b', Connect: { SidecarService: {} } }))).code).toBe(
      'SERVICE_SIDECAR_PORT',
    );
  });

  it('keeps a re-registered check status; replace-existing-checks drops the unlisted ones', () => {
    const state = new LocalState('n1');
    state.addService(
      def({
        Name: 'web',
        Checks: [
          { CheckID: 'a', TTL: '1s' },
          { CheckID: 'b', TTL: '1s' },
        ],
      }),
    );
    state.updateCheck('a', 'passing', 'ok');
    state.addService(def({ Name: 'web', Checks: [{ CheckID: 'a', TTL: '1s' }] }));
    expect(state.check('a')?.status).toBe('passing');
    expect(state.check('b')).toBeDefined();
    state.addService(def({ Name: 'web', Checks: [{ CheckID: 'a', TTL: '1s' }] }), { replaceExistingChecks: true });
    expect(state.check('b')).toBeUndefined();
  });

  it('tells a status change from an output-only change', () => {
    const state = new LocalState('n1');
    const events: LocalEvent['type'][] = [];
    state.onChange((e) => events.push(e.type));
    state.addCheck(readCheckDefinition({ Name: 'mem', TTL: '10s' }));
    state.updateCheck('mem', 'passing', 'a');
    state.updateCheck('mem', 'passing', 'b');
    state.updateCheck('mem', 'passing', 'b');
    state.updateCheck('mem', 'warning', 'b');
    expect(events).toEqual(['check-registered', 'check-status', 'check-output', 'check-status']);
    expect(state.snapshot().checks.map((c) => [c.checkId, c.status])).toEqual([['mem', 'warning']]);
  });

  it('adds and removes the maintenance check', () => {
    const state = new LocalState('n1');
    state.addService(def({ Name: 'web' }));
    state.setMaintenance('web', true, '');
    expect(state.check('_service_maintenance:web')).toMatchObject({
      status: 'critical',
      name: 'Service Maintenance Mode',
      type: 'maintenance',
      notes: 'Maintenance mode is enabled for this service, but no reason was provided. This is a default message.',
    });
    state.setMaintenance('web', false, '');
    expect(state.check('_service_maintenance:web')).toBeUndefined();
    expect(agentErrorOf(() => state.setMaintenance('nope', true, '')).code).toBe('SERVICE_MAINTENANCE_UNKNOWN');
  });

  it('adds the node maintenance check once, with the reason or the default notes, and removes it', () => {
    const state = new LocalState('n1');
    const events: LocalEvent[] = [];
    state.onChange((e) => events.push(e));
    state.setNodeMaintenance(true, '');
    expect(state.check('_node_maintenance')).toMatchObject({
      status: 'critical',
      name: 'Node Maintenance Mode',
      serviceId: '',
      type: 'maintenance',
      notes: 'Maintenance mode is enabled for this node, but no reason was provided. This is a default message.',
    });
    // Enabled again, it keeps the first reason, as Consul's EnableNodeMaintenance does.
    state.setNodeMaintenance(true, 'later');
    expect(state.check('_node_maintenance')?.notes).toMatch(/^Maintenance mode is enabled for this node/);
    state.setNodeMaintenance(false, '');
    state.setNodeMaintenance(false, '');
    expect(state.check('_node_maintenance')).toBeUndefined();
    state.setNodeMaintenance(true, 'kernel upgrade');
    expect(state.check('_node_maintenance')?.notes).toBe('kernel upgrade');
    expect(events.map((e) => e.type)).toEqual(['check-registered', 'check-deregistered', 'check-registered']);
  });

  it('bumps a service version only when its content changes, and wakes its watchers', () => {
    const state = new LocalState('n1');
    state.addService(def({ Name: 'web', Port: 1 }));
    const v1 = state.serviceVersion('web');
    let woke = 0;
    state.watchService('web', () => woke++);
    state.addService(def({ Name: 'web', Port: 1 }));
    expect([state.serviceVersion('web'), woke]).toEqual([v1, 0]);
    state.addService(def({ Name: 'web', Port: 2 }));
    expect(state.serviceVersion('web')).toBeGreaterThan(v1);
    expect(woke).toBe(1);
  });

  it('refuses a check on a service that is not registered', () => {
    const state = new LocalState('n1');
    expect(
      agentErrorOf(() => state.addCheck(readCheckDefinition({ Name: 'x', TTL: '1s', ServiceID: 'nope' }))).code,
    ).toBe('CHECK_SERVICE_UNKNOWN');
  });
});
