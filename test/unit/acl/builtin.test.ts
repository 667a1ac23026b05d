import { describe, expect, it } from 'vitest';
import {
  ANONYMOUS_ACCESSOR_ID,
  ANONYMOUS_SECRET,
  GLOBAL_MANAGEMENT_PARSED,
  GLOBAL_MANAGEMENT_POLICY_DESCRIPTION,
  GLOBAL_MANAGEMENT_POLICY_ID,
  GLOBAL_MANAGEMENT_POLICY_NAME,
  GLOBAL_MANAGEMENT_RULES,
  GLOBAL_READ_ONLY_PARSED,
  GLOBAL_READ_ONLY_POLICY_ID,
  GLOBAL_READ_ONLY_POLICY_NAME,
  GLOBAL_READ_ONLY_RULES,
  globalManagementPolicy,
  RESERVED_ID_PREFIX,
} from '../../../src/acl/builtin.js';
import { identityRules, nodeIdentityRules, serviceIdentityRules } from '../../../src/acl/rules/identities.js';
import { parseRules } from '../../../src/acl/rules/parse.js';

describe('built-ins', () => {
  it('has Consul IDs, names and description', () => {
    expect(GLOBAL_MANAGEMENT_POLICY_ID).toBe('00000000-0000-0000-0000-000000000001');
    expect(GLOBAL_MANAGEMENT_POLICY_NAME).toBe('global-management');
    expect(GLOBAL_MANAGEMENT_POLICY_DESCRIPTION).toBe(
      'A built-in policy that grants read and write access to all Consul features',
    );
    expect(GLOBAL_READ_ONLY_POLICY_ID).toBe('00000000-0000-0000-0000-000000000002');
    expect(GLOBAL_READ_ONLY_POLICY_NAME).toBe('builtin/global-read-only');
    expect(ANONYMOUS_ACCESSOR_ID).toBe('00000000-0000-0000-0000-000000000002');
    expect(ANONYMOUS_SECRET).toBe('anonymous');
    expect(GLOBAL_MANAGEMENT_POLICY_ID.startsWith(RESERVED_ID_PREFIX)).toBe(true);
    expect(ANONYMOUS_ACCESSOR_ID.startsWith(RESERVED_ID_PREFIX)).toBe(true);
    expect(RESERVED_ID_PREFIX).toHaveLength(34);
  });

  it('the parsed literals are exactly what parseRules makes of the Rules text', async () => {
    expect(JSON.stringify(await parseRules(GLOBAL_MANAGEMENT_RULES))).toBe(JSON.stringify(GLOBAL_MANAGEMENT_PARSED));
    expect(JSON.stringify(await parseRules(GLOBAL_READ_ONLY_RULES))).toBe(JSON.stringify(GLOBAL_READ_ONLY_PARSED));
  });

  it("the management Rules text is Consul's: every global rule at write, intentions included", () => {
    expect(GLOBAL_MANAGEMENT_RULES.startsWith('\nacl = "write"\nagent_prefix "" {\n\tpolicy = "write"\n}\n')).toBe(
      true,
    );
    expect(GLOBAL_MANAGEMENT_RULES).toContain('service_prefix "" {\n\tpolicy = "write"\n\tintentions = "write"\n}');
    expect(GLOBAL_MANAGEMENT_RULES.endsWith('session_prefix "" {\n\tpolicy = "write"\n}')).toBe(true);
    expect(GLOBAL_READ_ONLY_RULES).not.toContain('write');
  });

  it('globalManagementPolicy() is the stored policy, hashed and with its parsed rules', () => {
    const p = globalManagementPolicy();
    expect(p).toMatchObject({
      ID: GLOBAL_MANAGEMENT_POLICY_ID,
      Name: 'global-management',
      Description: GLOBAL_MANAGEMENT_POLICY_DESCRIPTION,
      Rules: GLOBAL_MANAGEMENT_RULES,
      Datacenters: null,
      Parsed: GLOBAL_MANAGEMENT_PARSED,
    });
    expect(p.Hash).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(globalManagementPolicy().Hash).toBe(p.Hash);
  });
});

describe('identity policies', () => {
  it('are the Consul templates as ParsedRules', async () => {
    expect(serviceIdentityRules('web')).toEqual(
      await parseRules(
        'service "web" { policy = "write" }\nservice "web-sidecar-proxy" { policy = "write" }\nservice_prefix "" { policy = "read" }\nnode_prefix "" { policy = "read" }',
      ),
    );
    expect(nodeIdentityRules('n1')).toEqual(
      await parseRules('node "n1" { policy = "write" }\nservice_prefix "" { policy = "read" }'),
    );
  });

  it('apply by datacenter', () => {
    const rules = identityRules(
      'dc1',
      [{ ServiceName: 'a' }, { ServiceName: 'b', Datacenters: ['dc2'] }, { ServiceName: 'c', Datacenters: ['dc1'] }],
      [
        { NodeName: 'n1', Datacenter: 'dc1' },
        { NodeName: 'n2', Datacenter: 'dc2' },
      ],
    );
    expect(rules.map((r) => r.service?.[0]?.name ?? r.node?.[0]?.name)).toEqual(['a', 'c', 'n1']);
  });
});
