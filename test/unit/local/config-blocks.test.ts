// The config files' service and check blocks, read as the agent reads them at start and as
// `svc-agent validate` does: a key no field reads is named with its file, its block and the key
// probably meant, as Consul's config parser names them, before any problem it would cause.
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/errors.js';
import { takeRegistrations } from '../../../src/config/registrations.js';
import { vetConfigRegistrations } from '../../../src/local/local-agent.js';

/** The registrations of one file's values, as loadConfig takes them, and what vetting them throws. */
function problemsOf(file: Record<string, unknown>): string[] {
  const { registrations } = takeRegistrations(file, '/etc/svc.d/web.hcl');
  try {
    vetConfigRegistrations(registrations);
  } catch (err) {
    if (err instanceof ConfigError) return [...err.problems];
    if (err instanceof Error) return [err.message];
  }
  return [];
}

describe('config blocks', () => {
  it("names a mistyped key of a service, its check or a check, with the key meant, in the file's spelling", () => {
    expect(
      problemsOf({
        service: {
          name: 'web',
          port: 80,
          tagz: ['a'],
          check: { htp: 'http://localhost/health', interval: '10s' },
        },
        check: { name: 'disk', ttl: '30s', deregister_critical_servce_after: '1m' },
      }),
    ).toEqual([
      '/etc/svc.d/web.hcl: service "web" (services[0]): invalid config key tagz (did you mean tags?)',
      '/etc/svc.d/web.hcl: service "web" (services[0]): invalid config key check.htp (did you mean check.http?)',
      '/etc/svc.d/web.hcl: check "disk" (checks[0]): invalid config key deregister_critical_servce_after (did you mean deregister_critical_service_after?)',
    ]);
    expect(problemsOf({ services: [{ Name: 'api', Checks: [{ Name: 'c', TTL: '5s', Intervall: '1s' }] }] })).toEqual([
      '/etc/svc.d/web.hcl: service "api" (services[0]): invalid config key Checks[0].Intervall (did you mean Checks[0].Interval?)',
    ]);
  });

  it("takes every field of Consul's definitions, those svc-agent does not use included", () => {
    expect(
      problemsOf({
        service: {
          name: 'web',
          id: 'web-1',
          port: 80,
          token: 'x',
          enable_tag_override: true,
          meta: { anything: 'goes' },
          check: {
            id: 'h',
            http: 'http://localhost/',
            interval: '10s',
            header: { 'X-Any': ['1'] },
            tls_skip_verify: true,
          },
        },
        check: { id: 'disk', name: 'disk', ttl: '30s', token: 'y', notes: 'n', status: 'passing' },
      }),
    ).toEqual([]);
  });

  it('names the file and the block of a problem the fields cause', () => {
    expect(problemsOf({ service: { name: 'web', check: { interval: '10s' } } })).toEqual([
      expect.stringMatching(/^\/etc\/svc\.d\/web\.hcl: service "web" \(services\[0\]\): Invalid check: /),
    ]);
  });
});
