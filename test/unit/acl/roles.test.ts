// ACL roles without HTTP: Consul's RoleSet checks and texts, links by ID with names on read, the
// `?policy` filter, and tokens linking roles (by ID or name; links to deleted roles drop out).
import { describe, expect, it } from 'vitest';
import { createAclDomain } from '../../../src/acl/domain.js';
import { initAclState } from '../../../src/acl/init.js';
import { FakeClock } from '../../../src/core/clock.js';
import { silentLogger } from '../../../src/core/log.js';
import { openEmbeddedStore } from '../../../src/state/embedded/index.js';
import { agentRejectionOf } from '../../support/errors.js';

const MISSING = 'dddddddd-1111-2222-3333-444444444444';

async function setup() {
  const clock = new FakeClock(Date.UTC(2024, 4, 1));
  const store = await openEmbeddedStore({ log: silentLogger, clock });
  await initAclState(store, { initialManagement: undefined }, clock);
  const acl = createAclDomain(store, clock, { minExpirationTtlMs: 60_000, maxExpirationTtlMs: 86_400_000 });
  const policy = await acl.policies.create({ Name: 'kv-read', Rules: 'key_prefix "" { policy = "read" }' });
  return { store, ...acl, policyId: policy.value.ID };
}

describe('AclRoles', () => {
  it("creates a role with Consul's key order; policies by name become IDs, shown with their current names", async () => {
    const { roles, policies, policyId } = await setup();
    const row = await roles.upsert('', {
      Name: 'ops',
      Description: 'operators',
      Policies: [{ Name: 'kv-read' }, { ID: policyId }],
      ServiceIdentities: [
        { ServiceName: 'web', Datacenters: ['dc2'] },
        { ServiceName: 'web', Datacenters: ['dc1'] },
      ],
      NodeIdentities: [{ NodeName: 'n1', Datacenter: 'dc1' }],
      TemplatedPolicies: [{ TemplateName: 'builtin/dns' }],
    });
    expect(row.value.Policies).toEqual([{ ID: policyId }]);
    const json = roles.view(row);
    expect(Object.keys(json)).toEqual([
      'ID',
      'Name',
      'Description',
      'Policies',
      'ServiceIdentities',
      'NodeIdentities',
      'TemplatedPolicies',
      'Hash',
      'CreateIndex',
      'ModifyIndex',
    ]);
    expect(json).toMatchObject({
      Name: 'ops',
      Policies: [{ ID: policyId, Name: 'kv-read' }],
      ServiceIdentities: [{ ServiceName: 'web', Datacenters: ['dc1', 'dc2'] }],
      TemplatedPolicies: [{ TemplateID: '00000000-0000-0000-0000-000000000005', TemplateName: 'builtin/dns' }],
    });
    await policies.update(policyId, { Name: 'kv-reader', Rules: 'key_prefix "" { policy = "read" }' });
    expect(roles.view(roles.read(row.key)!).Policies).toEqual([{ ID: policyId, Name: 'kv-reader' }]);
    await policies.delete(policyId);
    expect(roles.view(roles.read(row.key)!)).not.toHaveProperty('Policies');
  });

  it('a bare role shows only ID, Name, Description, Hash and the indexes', async () => {
    const { roles } = await setup();
    const json = roles.view(await roles.upsert('', { Name: 'bare' }));
    expect(Object.keys(json)).toEqual(['ID', 'Name', 'Description', 'Hash', 'CreateIndex', 'ModifyIndex']);
  });

  it.each([
    [{}, 'ACL_ROLE_NO_NAME', 'Invalid Role: no Name is set'],
    [
      { Name: 'a b' },
      'ACL_ROLE_NAME_CHARS',
      "Invalid Role: invalid Name. Only alphanumeric characters, '-' and '_' are allowed",
    ],
    [{ Name: 'r', Policies: [{ Name: 'nope' }] }, 'ACL_ROLE_NO_POLICY_NAME', 'No such ACL policy with name "nope"'],
    [
      { Name: 'r', Policies: [{ ID: MISSING }] },
      'ACL_ROLE_NO_POLICY_ID',
      `Failed to apply role upsert request: No such policy with ID: ${MISSING}`,
    ],
    [
      { Name: 'r', ServiceIdentities: [{ ServiceName: '' }] },
      'ACL_ROLE_SERVICE_IDENTITY_NO_NAME',
      'Service identity is missing the service name field on this role',
    ],
    [
      { Name: 'r', ServiceIdentities: [{ ServiceName: 'Web' }] },
      'ACL_ROLE_SERVICE_IDENTITY_NAME',
      `Service identity "Web" has an invalid name. Only alphanumeric characters, '-' and '_' are allowed`,
    ],
    [
      { Name: 'r', NodeIdentities: [{ NodeName: 'n' }] },
      'ACL_ROLE_NODE_IDENTITY_NO_DC',
      'Node identity is missing the datacenter field on this role',
    ],
    [
      { Name: 'r', TemplatedPolicies: [{ TemplateName: 'builtin/node' }] },
      'ACL_TEMPLATED_INVALID',
      'encountered role with invalid templated policy: 1 error occurred:\n\t* Invalid type. Expected: object, given: null\n\n',
    ],
    [
      { Name: 'r', TemplatedPolicies: [{ TemplateName: 'nope' }] },
      'ACL_TEMPLATED_UNKNOWN',
      'templated policy with an invalid templated name: nope for this role',
    ],
  ])('%j → %s', async (input, code, message) => {
    const { roles } = await setup();
    expect(await agentRejectionOf(roles.upsert('', input))).toEqual([code, message]);
  });

  it('refuses a second role of the same name (any case), a rename onto another, an unknown or bad ID, an ID mismatch', async () => {
    const { roles } = await setup();
    const ops = await roles.upsert('', { Name: 'ops' });
    const dev = await roles.upsert('', { Name: 'dev' });
    expect(await agentRejectionOf(roles.upsert('', { Name: 'OPS' }))).toEqual([
      'ACL_ROLE_NAME_IN_USE',
      'Invalid Role: A Role with Name "OPS" already exists',
    ]);
    expect(await agentRejectionOf(roles.upsert(dev.key, { Name: 'ops' }))).toEqual([
      'ACL_ROLE_RENAME_IN_USE',
      'Invalid Role: A role with name "ops" already exists',
    ]);
    expect(await agentRejectionOf(roles.upsert(MISSING, { Name: 'x' }))).toEqual([
      'ACL_ROLE_NOT_FOUND',
      `cannot find role ${MISSING}`,
    ]);
    expect(await agentRejectionOf(roles.upsert('abc', { Name: 'x' }))).toEqual([
      'ACL_ROLE_ID_NOT_UUID',
      'Role ID invalid UUID',
    ]);
    expect(await agentRejectionOf(roles.upsert(ops.key, { ID: dev.key, Name: 'x' }))).toEqual([
      'ACL_ROLE_ID_MISMATCH',
      'Role ID in URL and payload do not match',
    ]);
    const renamed = await roles.upsert(ops.key, { Name: 'operators', Description: 'v2' });
    expect([renamed.value.Name, renamed.createIndex < renamed.modifyIndex]).toEqual(['operators', true]);
    expect(roles.readByName('OPERATORS')?.key).toBe(ops.key);
  });

  it('lists by ID, filtered by ?policy; deleting a missing role succeeds', async () => {
    const { roles, policyId } = await setup();
    const a = await roles.upsert('', { Name: 'a', Policies: [{ ID: policyId }] });
    await roles.upsert('', { Name: 'b' });
    expect(
      roles
        .list()
        .map((r) => r.value.Name)
        .sort(),
    ).toEqual(['a', 'b']);
    expect(roles.list(policyId).map((r) => r.key)).toEqual([a.key]);
    await roles.delete(a.key);
    await roles.delete(a.key);
    expect(roles.list().map((r) => r.value.Name)).toEqual(['b']);
  });
});

describe('tokens linking roles', () => {
  it('links by ID or name (stored by ID, deduplicated), names shown on read, a deleted role drops out', async () => {
    const { roles, tokens } = await setup();
    const ops = await roles.upsert('', { Name: 'ops' });
    const token = await tokens.create({ Roles: [{ Name: 'ops' }, { ID: ops.key }] });
    expect(token.value.Roles).toEqual([{ ID: ops.key }]);
    expect(tokens.view(token, true).Roles).toEqual([{ ID: ops.key, Name: 'ops' }]);
    expect(tokens.list({ role: ops.key }).map((r) => r.key)).toEqual([token.key]);
    await roles.upsert(ops.key, { Name: 'operators' });
    expect(tokens.view(tokens.read(token.key)!, true).Roles).toEqual([{ ID: ops.key, Name: 'operators' }]);
    await roles.delete(ops.key);
    expect(tokens.view(tokens.read(token.key)!, true)).not.toHaveProperty('Roles');
    const clone = await tokens.clone(token.key);
    expect(clone.value.Roles).toBeUndefined();
  });

  it("refuses a role that does not exist with Consul's texts", async () => {
    const { tokens } = await setup();
    expect(await agentRejectionOf(tokens.create({ Roles: [{ Name: 'nope' }] }))).toEqual([
      'ACL_TOKEN_NO_ROLE_NAME',
      'No such ACL role with name "nope"',
    ]);
    expect(await agentRejectionOf(tokens.create({ Roles: [{ ID: MISSING }] }))).toEqual([
      'ACL_TOKEN_NO_ROLE_ID',
      `No such ACL role with ID "${MISSING}"`,
    ]);
  });
});
