// Config files' service and check blocks: taken out of each file before files merge (so several
// files add up), and HCL blocks folded with check lists and upstreams kept as lists.
import { describe, expect, it } from 'vitest';
import { parseHclConfig } from '../../../src/config/sources.js';
import { takeRegistrations } from '../../../src/config/registrations.js';

describe('registration blocks', () => {
  it('keeps repeated HCL service blocks apart, with their check lists and upstreams', async () => {
    const source = await parseHclConfig(
      'a.hcl',
      [
        'service {',
        '  name = "web"',
        '  meta { env = "prod" }',
        '  connect { sidecar_service { proxy { upstreams = [{ destination_name = "a" }, { destination_name = "b" }] } } }',
        '  checks = [{ id = "c1", ttl = "1s" }, { id = "c2", ttl = "1s" }]',
        '}',
        'service {',
        '  name = "api"',
        '}',
        'acl { enabled = true }',
      ].join('\n'),
    );
    if (!('values' in source)) throw new Error(source.problem);
    const { values, registrations } = takeRegistrations(source.values);
    expect({ ...values }).toEqual({ acl: { enabled: true } });
    expect(registrations.checks).toEqual([]);
    expect(registrations.services).toEqual([
      {
        name: 'web',
        meta: { env: 'prod' },
        connect: { sidecar_service: { proxy: { upstreams: [{ destination_name: 'a' }, { destination_name: 'b' }] } } },
        checks: [
          { id: 'c1', ttl: '1s' },
          { id: 'c2', ttl: '1s' },
        ],
      },
      { name: 'api' },
    ]);
  });

  it('takes a lone JSON service, a services list and checks', () => {
    const { registrations, problems } = takeRegistrations({
      service: { name: 'a' },
      services: [{ name: 'b' }],
      check: { name: 'c', ttl: '1s' },
      checks: [1],
    });
    expect(registrations.services.map((s) => s.name)).toEqual(['a', 'b']);
    expect(registrations.checks).toEqual([{ name: 'c', ttl: '1s' }]);
    expect(problems).toEqual(['checks: expected an object or a list of objects']);
  });
});
