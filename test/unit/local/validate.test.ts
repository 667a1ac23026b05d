// Registration validation: Consul's rules and texts, raised by code.
import { describe, expect, it } from 'vitest';
import { readServiceDefinition } from '../../../src/local/definition.js';
import { refuseUnrunnable, validateService } from '../../../src/local/validate.js';
import { agentErrorOf } from '../../support/errors.js';

const fails = (raw: Record<string, unknown>): [string, string] => {
  const err = agentErrorOf(() => validateService(readServiceDefinition(raw)));
  return [err.code, err.message];
};

describe('validateService', () => {
  it('refuses what Consul refuses, with its texts', () => {
    expect(fails({})).toEqual(['SERVICE_MISSING_NAME', 'Missing service name']);
    expect(fails({ Name: 'a', Address: '0.0.0.0' })[0]).toBe('SERVICE_INVALID_ADDRESS');
    expect(fails({ Name: 'a', Weights: { Passing: 0 } })).toEqual([
      'SERVICE_INVALID_WEIGHTS',
      'Invalid Weights: Passing must be greater than 0',
    ]);
    expect(fails({ Name: 'a', Meta: { 'consul-x': 'y' } })[1]).toBe(
      "Invalid Service Meta: Couldn't load metadata pair('consul-x', 'y'): Key prefix 'consul-' is reserved for internal use",
    );
    expect(fails({ Name: 'p', Kind: 'connect-proxy' })).toEqual([
      'SERVICE_VALIDATION',
      'Validation failed: 2 errors occurred:\n\t* Proxy.DestinationServiceName must be non-empty for Connect proxy services\n' +
        '\t* Port must be set for a Connect proxy\n\n',
    ]);
    expect(fails({ Name: 'a', Check: { HTTP: 'http://x' } })).toEqual([
      'CHECK_INVALID',
      'Invalid check: Interval must be > 0 for Script, HTTP, H2PING, TCP, UDP or OSService checks',
    ]);
    expect(fails({ Name: 'a', Check: { TTL: '1s', Status: 'up' } })[0]).toBe('SERVICE_CHECK_STATUS');
    expect(fails({ Name: 'a', Connect: { SidecarService: { ID: 'x' } } })[1]).toContain(
      'A SidecarService cannot specify an ID',
    );
    expect(fails({ Name: 'a', Connect: { SidecarService: { Check: { Interval: '1s', TTL: '1s' } } } })).toEqual([
      'SERVICE_SIDECAR_CHECK',
      'Invalid check in sidecar_service: Interval and TTL cannot both be specified',
    ]);
    expect(fails({ Name: 'a', Port: '80' })).toEqual([
      'SERVICE_INVALID_FIELD',
      'Request decode failed: Port must be an integer',
    ]);
  });

  it('accepts a sound proxy, snake_case fields and durations in nanoseconds', () => {
    const def = readServiceDefinition({
      name: 'p',
      kind: 'connect-proxy',
      port: 21000,
      proxy: { destination_service_name: 'web', upstreams: [{ destination_name: 'db', local_bind_port: 9191 }] },
      enable_tag_override: true,
      check: { tcp: '127.0.0.1:1', interval: 10_000_000_000 },
    });
    expect(() => validateService(def)).not.toThrow();
    expect(def.enableTagOverride).toBe(true);
    expect(def.checks[0]?.intervalMs).toBe(10_000);
    expect(def.proxy?.upstreams[0]).toMatchObject({
      destinationType: 'service',
      destinationName: 'db',
      localBindPort: 9191,
    });
  });

  it('refuses script checks and check kinds the agent does not run', () => {
    const spec = (raw: Record<string, unknown>) => readServiceDefinition({ Name: 'a', Check: raw }).checks[0]!;
    const script = agentErrorOf(() => refuseUnrunnable(spec({ Args: ['true'], Interval: '1s' })));
    expect(script.code).toBe('CHECK_SCRIPTS_DISABLED');
    // It advises no setting: svc-agent ignores enable_script_checks, and runs no script at all.
    expect(script.message).toMatch(/never runs script or docker checks/);
    expect(script.message).not.toMatch(/to enable|to true/);
    expect(agentErrorOf(() => refuseUnrunnable(spec({ UDP: '127.0.0.1:1', Interval: '1s' }))).code).toBe(
      'CHECK_UNSUPPORTED',
    );
  });
});
