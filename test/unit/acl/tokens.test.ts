import { agentRejectionOf } from '../../support/errors.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ANONYMOUS_ACCESSOR_ID,
  GLOBAL_MANAGEMENT_POLICY_ID,
  GLOBAL_MANAGEMENT_POLICY_NAME,
} from '../../../src/acl/builtin.js';
import { createAclDomain } from '../../../src/acl/domain.js';
import { initAclState, tokenHash } from '../../../src/acl/init.js';
import { ACL_META, ACL_TOKENS, BOOTSTRAP_KEY, HIDDEN_SECRET, type StoredToken } from '../../../src/acl/model.js';
import type { TokenInput } from '../../../src/acl/tokens.js';
import { FakeClock } from '../../../src/core/clock.js';
import { renderMessage } from '../../../src/core/errors.js';
import { isUuid } from '../../../src/core/ids.js';
import { silentLogger } from '../../../src/core/log.js';
import { openEmbeddedStore } from '../../../src/state/embedded/index.js';

const START = Date.UTC(2024, 4, 1, 10, 0, 0);
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const ID_A = 'aaaaaaaa-1111-2222-3333-444444444444';
const ID_B = 'bbbbbbbb-1111-2222-3333-444444444444';
const ID_C = 'cccccccc-1111-2222-3333-444444444444';

async function setup(options: { minTtlMs?: number; initialManagement?: string } = {}) {
  const clock = new FakeClock(START);
  const store = await openEmbeddedStore({ log: silentLogger, clock });
  await initAclState(store, { initialManagement: options.initialManagement }, clock);
  const acl = createAclDomain(store, clock, {
    minExpirationTtlMs: options.minTtlMs ?? MINUTE,
    maxExpirationTtlMs: 24 * HOUR,
  });
  return { clock, store, ...acl };
}

describe('bootstrap', () => {
  it('mints a global-management token once, answered with a leading ID equal to the SecretID', async () => {
    const { tokens } = await setup();
    const row = await tokens.bootstrap();
    const json = tokens.bootstrapView(row);
    expect(Object.keys(json)).toEqual([
      'ID',
      'AccessorID',
      'SecretID',
      'Description',
      'Policies',
      'Local',
      'CreateTime',
      'Hash',
      'Namespace',
      'CreateIndex',
      'ModifyIndex',
    ]);
    expect(json.ID).toBe(row.value.SecretID);
    expect(json.SecretID).toBe(row.value.SecretID);
    expect(isUuid(json.AccessorID as string) && isUuid(json.SecretID as string)).toBe(true);
    expect(json.Description).toBe('Bootstrap Token (Global Management)');
    expect(json.Policies).toEqual([{ ID: GLOBAL_MANAGEMENT_POLICY_ID, Name: GLOBAL_MANAGEMENT_POLICY_NAME }]);
    expect(json.Local).toBe(false);
    expect(json.CreateTime).toBe('2024-05-01T10:00:00Z');
    expect(json.Namespace).toBe('default');
    expect(json.CreateIndex).toBe(row.createIndex);
  });

  it('refuses a second bootstrap with the reset index of the first', async () => {
    const { tokens, store } = await setup();
    const first = await tokens.bootstrap();
    const marker = store.get(ACL_META, BOOTSTRAP_KEY);
    expect(marker?.modifyIndex).toBe(first.createIndex);
    expect(await agentRejectionOf(tokens.bootstrap())).toEqual([
      'ACL_BOOTSTRAP_DONE',
      `Permission denied: ACL bootstrap no longer allowed (reset index: ${first.createIndex})`,
    ]);
  });

  it('is already used up by a configured initial management token', async () => {
    const { tokens, store } = await setup({ initialManagement: ID_C });
    const marker = store.get(ACL_META, BOOTSTRAP_KEY);
    expect(await agentRejectionOf(tokens.bootstrap())).toEqual([
      'ACL_BOOTSTRAP_DONE',
      `Permission denied: ACL bootstrap no longer allowed (reset index: ${marker?.modifyIndex})`,
    ]);
  });

  it('takes the SecretID from BootstrapSecret, which must be a usable UUID', async () => {
    const { tokens } = await setup();
    expect(await agentRejectionOf(tokens.bootstrap('not-a-uuid'))).toEqual([
      'ACL_TOKEN_ID_NOT_UUID',
      'Invalid Token: SecretID - not a valid UUID',
    ]);
    const row = await tokens.bootstrap(ID_A);
    expect(row.value.SecretID).toBe(ID_A);
  });
});

describe('create', () => {
  it('writes the full token JSON in Consul key order, Namespace after Hash, never ExpirationTTL', async () => {
    const { tokens, policies } = await setup({ minTtlMs: 1000 });
    await policies.create({ Name: 'readers', Rules: 'key_prefix "" { policy = "read" }' });
    const row = await tokens.create({
      Description: 'full',
      Policies: [{ Name: 'readers' }],
      ServiceIdentities: [{ ServiceName: 'web', Datacenters: ['dc2', 'dc1'] }],
      NodeIdentities: [{ NodeName: 'node-1', Datacenter: 'dc1' }],
      ExpirationTTL: 10 * MINUTE,
    });
    const json = tokens.view(row, true);
    expect(Object.keys(json)).toEqual([
      'AccessorID',
      'SecretID',
      'Description',
      'Policies',
      'ServiceIdentities',
      'NodeIdentities',
      'Local',
      'ExpirationTime',
      'CreateTime',
      'Hash',
      'Namespace',
      'CreateIndex',
      'ModifyIndex',
    ]);
    expect(json.ServiceIdentities).toEqual([{ ServiceName: 'web', Datacenters: ['dc1', 'dc2'] }]);
    expect(json.NodeIdentities).toEqual([{ NodeName: 'node-1', Datacenter: 'dc1' }]);
    expect(json.ExpirationTime).toBe('2024-05-01T10:10:00Z');
    expect(json.Hash).toBe(tokenHash(row.value));
    expect(row.createIndex).toBe(row.modifyIndex);
  });

  it('leaves out empty links (omitempty) and generates unreserved UUIDs', async () => {
    const { tokens } = await setup();
    const row = await tokens.create({});
    const json = tokens.view(row, true);
    expect(Object.keys(json)).toEqual([
      'AccessorID',
      'SecretID',
      'Description',
      'Local',
      'CreateTime',
      'Hash',
      'Namespace',
      'CreateIndex',
      'ModifyIndex',
    ]);
    for (const id of [row.value.AccessorID, row.secret]) {
      expect(isUuid(id)).toBe(true);
      expect(id.startsWith('00000000-0000-0000-0000-0000000000')).toBe(false);
    }
    expect(row.value.AccessorID).not.toBe(row.secret);
  });

  it('uses a supplied AccessorID and SecretID', async () => {
    const { tokens } = await setup();
    const row = await tokens.create({ AccessorID: ID_A, SecretID: ID_B });
    expect([row.key, row.value.AccessorID, row.value.SecretID]).toEqual([ID_A, ID_A, ID_B]);
  });

  it.each<[TokenInput, string, string]>([
    [{ AccessorID: 'nope' }, 'ACL_TOKEN_ID_NOT_UUID', 'Invalid Token: AccessorID - not a valid UUID'],
    [{ SecretID: 'nope' }, 'ACL_TOKEN_ID_NOT_UUID', 'Invalid Token: SecretID - not a valid UUID'],
    [
      { AccessorID: '00000000-0000-0000-0000-000000000099' },
      'ACL_TOKEN_ID_RESERVED',
      'Invalid Token: AccessorID - UUIDs with the prefix "00000000-0000-0000-0000-0000000000" are reserved',
    ],
    [
      { SecretID: '00000000-0000-0000-0000-000000000042' },
      'ACL_TOKEN_ID_RESERVED',
      'Invalid Token: SecretID - UUIDs with the prefix "00000000-0000-0000-0000-0000000000" are reserved',
    ],
    [{ AuthMethod: 'kube' }, 'ACL_TOKEN_AUTH_METHOD', 'AuthMethod field is disallowed outside of login'],
    [{ Policies: [{ Name: 'nope' }] }, 'ACL_TOKEN_NO_POLICY_NAME', 'No such ACL policy with name "nope"'],
    [{ Policies: [{ ID: ID_C }] }, 'ACL_TOKEN_NO_POLICY_ID', `No such ACL policy with ID "${ID_C}"`],
    [{ Roles: [{ Name: 'ops' }] }, 'ACL_TOKEN_NO_ROLE_NAME', 'No such ACL role with name "ops"'],
    [{ Roles: [{ ID: ID_C }] }, 'ACL_TOKEN_NO_ROLE_ID', `No such ACL role with ID "${ID_C}"`],
    // Roles are resolved before policies, as in Consul.
    [
      { Roles: [{ Name: 'ops' }], Policies: [{ Name: 'nope' }] },
      'ACL_TOKEN_NO_ROLE_NAME',
      'No such ACL role with name "ops"',
    ],
    [
      { ServiceIdentities: [{ ServiceName: '' }] },
      'ACL_TOKEN_SERVICE_IDENTITY_NO_NAME',
      'Service identity is missing the service name field on this token',
    ],
    [
      { ServiceIdentities: [{ ServiceName: 'Web' }] },
      'ACL_TOKEN_SERVICE_IDENTITY_NAME',
      `Service identity "Web" has an invalid name. Only lowercase alphanumeric characters, '-' and '_' are allowed`,
    ],
    [
      { ServiceIdentities: [{ ServiceName: 'web-' }] },
      'ACL_TOKEN_SERVICE_IDENTITY_NAME',
      `Service identity "web-" has an invalid name. Only lowercase alphanumeric characters, '-' and '_' are allowed`,
    ],
    [
      { Local: true, ServiceIdentities: [{ ServiceName: 'web', Datacenters: ['dc1'] }] },
      'ACL_TOKEN_SERVICE_IDENTITY_LOCAL_DCS',
      'Service identity "web" cannot specify a list of datacenters on a local token',
    ],
    [
      { NodeIdentities: [{ NodeName: '', Datacenter: 'dc1' }] },
      'ACL_TOKEN_NODE_IDENTITY_NO_NAME',
      'Node identity is missing the node name field on this token',
    ],
    [
      { NodeIdentities: [{ NodeName: 'n1' }] },
      'ACL_TOKEN_NODE_IDENTITY_NO_DC',
      'Node identity is missing the datacenter field on this token',
    ],
    [
      { NodeIdentities: [{ NodeName: 'N_1', Datacenter: 'dc1' }] },
      'ACL_TOKEN_NODE_IDENTITY_NAME',
      "Node identity has an invalid name. Only lowercase alphanumeric characters, '-' and '_' are allowed",
    ],
  ])('%j → %s %s', async (input, code, message) => {
    const { tokens } = await setup();
    expect(await agentRejectionOf(tokens.create(input))).toEqual([code, message]);
  });

  it('keeps templated policies (Consul 1.17) validated, deduplicated, with their TemplateID; checks them after the other links', async () => {
    const { tokens } = await setup();
    const made = await tokens.create({
      TemplatedPolicies: [
        { TemplateName: 'builtin/service', TemplateVariables: { Name: 'web' } },
        { TemplateName: 'builtin/service', TemplateVariables: { Name: 'web' }, Datacenters: ['dc2'] },
        { TemplateName: 'builtin/dns' },
        { TemplateName: 'builtin/dns', TemplateVariables: { Name: 'ignored' } },
      ],
    });
    expect(made.value.TemplatedPolicies).toEqual([
      {
        TemplateID: '00000000-0000-0000-0000-000000000003',
        TemplateName: 'builtin/service',
        TemplateVariables: { Name: 'web' },
      },
      { TemplateID: '00000000-0000-0000-0000-000000000005', TemplateName: 'builtin/dns' },
    ]);
    const missing = { TemplatedPolicies: [{ TemplateName: 'builtin/service', TemplateVariables: {} }] };
    expect(await agentRejectionOf(tokens.create(missing))).toEqual([
      'ACL_TEMPLATED_INVALID',
      'encountered token with invalid templated policy: 1 error occurred:\n\t* name is required\n\n',
    ]);
    expect((await agentRejectionOf(tokens.create({ ...missing, Policies: [{ Name: 'nope' }] })))[0]).toBe(
      'ACL_TOKEN_NO_POLICY_NAME',
    );
    expect(await agentRejectionOf(tokens.create({ TemplatedPolicies: [{ TemplateName: 'builtin/nope' }] }))).toEqual([
      'ACL_TEMPLATED_UNKNOWN',
      'templated policy with an invalid templated name: builtin/nope for this token',
    ]);
    expect(await agentRejectionOf(tokens.create({ TemplatedPolicies: [{}] }))).toEqual([
      'ACL_TEMPLATED_NO_NAME',
      'templated policy is missing the template name field on this token',
    ]);
    expect(
      await agentRejectionOf(
        tokens.create({ Local: true, TemplatedPolicies: [{ TemplateName: 'builtin/dns', Datacenters: ['dc1'] }] }),
      ),
    ).toEqual([
      'ACL_TEMPLATED_LOCAL_DCS',
      'templated policy "builtin/dns" cannot specify a list of datacenters on a local token',
    ]);
    await tokens.create({ AccessorID: ID_A, SecretID: ID_B, TemplatedPolicies: [] });
    expect(await agentRejectionOf(tokens.update(ID_A, missing))).toEqual([
      'ACL_TEMPLATED_INVALID',
      renderMessage('ACL_TEMPLATED_INVALID', {
        owner: 'token',
        detail: '1 error occurred:\n\t* name is required\n\n',
      }),
    ]);
    expect(tokens.read(ID_A)?.value.TemplatedPolicies).toBeUndefined();
  });

  it('refuses an ID already in use as an AccessorID or a SecretID with 409', async () => {
    const { tokens } = await setup();
    await tokens.create({ AccessorID: ID_A, SecretID: ID_B });
    expect(await agentRejectionOf(tokens.create({ AccessorID: ID_A }))).toEqual([
      'ACL_TOKEN_ID_IN_USE',
      'Invalid Token: AccessorID is already in use',
    ]);
    expect(await agentRejectionOf(tokens.create({ AccessorID: ID_B }))).toEqual([
      'ACL_TOKEN_ID_IN_USE',
      'Invalid Token: AccessorID is already in use',
    ]);
    expect(await agentRejectionOf(tokens.create({ SecretID: ID_B }))).toEqual([
      'ACL_TOKEN_ID_IN_USE',
      'Invalid Token: SecretID is already in use',
    ]);
    expect(await agentRejectionOf(tokens.create({ SecretID: ID_A }))).toEqual([
      'ACL_TOKEN_ID_IN_USE',
      'Invalid Token: SecretID is already in use',
    ]);
    expect(await agentRejectionOf(tokens.create({ SecretID: 'anonymous' }))).toEqual([
      'ACL_TOKEN_ID_NOT_UUID',
      'Invalid Token: SecretID - not a valid UUID',
    ]);
  });

  it('links policies by ID or by name (any case), stores IDs only and drops duplicates', async () => {
    const { tokens, policies } = await setup();
    const p = await policies.create({ Name: 'Readers' });
    const row = await tokens.create({
      Policies: [{ Name: 'readers' }, { ID: p.key }, { ID: GLOBAL_MANAGEMENT_POLICY_ID }],
    });
    expect(row.value.Policies).toEqual([{ ID: p.key }, { ID: GLOBAL_MANAGEMENT_POLICY_ID }]);
    expect(tokens.view(row, true).Policies).toEqual([
      { ID: p.key, Name: 'Readers' },
      { ID: GLOBAL_MANAGEMENT_POLICY_ID, Name: 'global-management' },
    ]);
  });

  it('merges service identities by name and drops duplicate node identities', async () => {
    const { tokens } = await setup();
    const row = await tokens.create({
      ServiceIdentities: [
        { ServiceName: 'db', Datacenters: ['dc3'] },
        { ServiceName: 'web' },
        { ServiceName: 'db', Datacenters: ['dc1', 'dc3'] },
      ],
      NodeIdentities: [
        { NodeName: 'n1', Datacenter: 'dc1' },
        { NodeName: 'n1', Datacenter: 'dc1' },
        { NodeName: 'n1', Datacenter: 'dc2' },
      ],
    });
    expect(row.value.ServiceIdentities).toEqual([
      { ServiceName: 'db', Datacenters: ['dc1', 'dc3'] },
      { ServiceName: 'web' },
    ]);
    expect(row.value.NodeIdentities).toEqual([
      { NodeName: 'n1', Datacenter: 'dc1' },
      { NodeName: 'n1', Datacenter: 'dc2' },
    ]);
  });
});

describe('expiration', () => {
  it.each<[TokenInput, string, string]>([
    [{ ExpirationTTL: -MINUTE }, 'ACL_TOKEN_TTL_NEGATIVE', "Token Expiration TTL '-1m0s' should be > 0"],
    [
      { ExpirationTTL: 5 * MINUTE, ExpirationTime: START + 10 * MINUTE },
      'ACL_TOKEN_TTL_AND_TIME',
      'Token Expiration TTL and Expiration Time cannot both be set',
    ],
    [{ ExpirationTime: START - 1000 }, 'ACL_TOKEN_EXPIRES_BEFORE_CREATE', 'ExpirationTime cannot be before CreateTime'],
    [
      { ExpirationTTL: 48 * HOUR },
      'ACL_TOKEN_EXPIRES_TOO_LATE',
      'ExpirationTime cannot be more than 24h0m0s in the future (was 48h0m0s)',
    ],
    [
      { ExpirationTime: START + 25 * HOUR },
      'ACL_TOKEN_EXPIRES_TOO_LATE',
      'ExpirationTime cannot be more than 24h0m0s in the future (was 25h0m0s)',
    ],
    [
      { ExpirationTTL: 30_000 },
      'ACL_TOKEN_EXPIRES_TOO_SOON',
      'ExpirationTime cannot be less than 1m0s in the future (was 30s)',
    ],
  ])('%j → %s %s', async (input, code, message) => {
    const { tokens } = await setup();
    expect(await agentRejectionOf(tokens.create(input))).toEqual([code, message]);
  });

  it('honours a smaller configured minimum', async () => {
    const { tokens } = await setup({ minTtlMs: 1000 });
    const row = await tokens.create({ ExpirationTTL: 2000 });
    expect(row.value.ExpirationTime).toBe(new Date(START + 2000).toISOString());
  });

  it('takes an ExpirationTime within the bounds as is', async () => {
    const { tokens } = await setup();
    const row = await tokens.create({ ExpirationTime: START + 2 * HOUR });
    expect(tokens.view(row, true).ExpirationTime).toBe('2024-05-01T12:00:00Z');
  });

  it('an expired token is gone for read, list, update and clone, but can still be deleted', async () => {
    const { tokens, clock, store } = await setup({ minTtlMs: 1000 });
    await tokens.create({ AccessorID: ID_A, ExpirationTTL: 2000 });
    expect(tokens.read(ID_A)).toBeDefined();
    clock.advance(2000);
    expect(tokens.read(ID_A)).toBeUndefined();
    expect(tokens.list().map((r) => r.key)).not.toContain(ID_A);
    expect(await agentRejectionOf(tokens.update(ID_A, {}))).toEqual([
      'ACL_TOKEN_NOT_FOUND',
      `Cannot find token "${ID_A}"`,
    ]);
    expect(await agentRejectionOf(tokens.clone(ID_A))).toEqual(['ACL_TOKEN_CLONE_NOT_FOUND', 'ACL not found']);
    await tokens.delete(ID_A, ID_B);
    expect(store.get(ACL_TOKENS, ID_A)).toBeUndefined();
  });
});

describe('namespaces (D2)', () => {
  it('puts a token in "default" unless the body or the caller names another', async () => {
    const { tokens } = await setup();
    expect((await tokens.create({})).value.Namespace).toBe('default');
    expect((await tokens.create({}, 'team-b')).value.Namespace).toBe('team-b');
    const row = await tokens.create({ Namespace: 'team-a' }, 'team-b');
    expect(tokens.view(row, true).Namespace).toBe('team-a');
  });

  it('refuses a namespace name that is not a DNS label', async () => {
    const { tokens } = await setup();
    for (const ns of ['bad_ns', '-x', '*', 'a'.repeat(65)]) {
      const [code, message] = await agentRejectionOf(tokens.create({ Namespace: ns }));
      expect(code).toBe('NAMESPACE_INVALID');
      expect(message).toMatch(new RegExp(`^Invalid Namespace ${JSON.stringify(ns).replace(/[*]/g, '\\*')}`));
    }
  });

  it('lists one namespace, or all with * or none given', async () => {
    const { tokens } = await setup();
    await tokens.create({ AccessorID: ID_A, Namespace: 'team-a' });
    await tokens.create({ AccessorID: ID_B });
    expect(tokens.list({ namespace: 'team-a' }).map((r) => r.key)).toEqual([ID_A]);
    expect(tokens.list({ namespace: '*' }).map((r) => r.key)).toEqual(expect.arrayContaining([ID_A, ID_B]));
    expect(tokens.list().map((r) => r.key)).toEqual(expect.arrayContaining([ID_A, ID_B]));
  });

  it('keeps a token in its namespace on update', async () => {
    const { tokens } = await setup();
    await tokens.create({ AccessorID: ID_A, Namespace: 'team-a' });
    expect((await tokens.update(ID_A, { Description: 'x' })).value.Namespace).toBe('team-a');
    expect(await agentRejectionOf(tokens.update(ID_A, { Namespace: 'team-b' }))).toEqual([
      'ACL_TOKEN_NAMESPACE_CHANGE',
      `Cannot change the namespace of ${ID_A}`,
    ]);
  });
});

describe('read', () => {
  it('hides the SecretID from a caller without acl:write', async () => {
    const { tokens } = await setup();
    const row = await tokens.create({ AccessorID: ID_A, SecretID: ID_B });
    expect(tokens.view(row, false).SecretID).toBe(HIDDEN_SECRET);
    expect(tokens.view(row, true).SecretID).toBe(ID_B);
    expect(tokens.stub(row, false).SecretID).toBe(HIDDEN_SECRET);
  });

  it('fills in current policy names and leaves out links to deleted policies', async () => {
    const { tokens, policies } = await setup();
    const kept = await policies.create({ Name: 'kept' });
    const gone = await policies.create({ Name: 'gone' });
    await tokens.create({ AccessorID: ID_A, Policies: [{ ID: gone.key }, { ID: kept.key }] });
    await policies.update(kept.key, { Name: 'renamed' });
    await policies.delete(gone.key);
    const row = tokens.read(ID_A);
    expect(row && tokens.view(row, true).Policies).toEqual([{ ID: kept.key, Name: 'renamed' }]);
    // A token whose only link is gone shows no Policies key at all.
    await policies.delete(kept.key);
    const again = tokens.read(ID_A);
    expect(again && Object.keys(tokens.view(again, true))).not.toContain('Policies');
  });

  it('returns nothing for an unknown accessor', async () => {
    const { tokens } = await setup();
    expect(tokens.read(ID_C)).toBeUndefined();
  });
});

describe('update', () => {
  it('replaces description and links, keeps IDs, CreateTime and CreateIndex', async () => {
    const { tokens, clock } = await setup();
    const created = await tokens.create({
      AccessorID: ID_A,
      SecretID: ID_B,
      Description: 'old',
      Policies: [{ ID: GLOBAL_MANAGEMENT_POLICY_ID }],
    });
    clock.advance(5000);
    const updated = await tokens.update(ID_A, { Description: 'new', ServiceIdentities: [{ ServiceName: 'web' }] });
    expect(updated.value).toMatchObject({
      AccessorID: ID_A,
      SecretID: ID_B,
      Description: 'new',
      Policies: [],
      CreateTime: created.value.CreateTime,
    });
    expect(updated.createIndex).toBe(created.createIndex);
    expect(updated.modifyIndex).toBeGreaterThan(created.modifyIndex);
    expect(updated.value.Hash).not.toBe(created.value.Hash);
    expect(await tokens.update(ID_A, { AccessorID: ID_A, SecretID: ID_B, Description: 'same ids' })).toBeDefined();
  });

  it.each<[string, TokenInput, string, string]>([
    [ID_A, { AccessorID: ID_B }, 'ACL_TOKEN_ID_MISMATCH', 'Token Accessor ID in URL and payload do not match'],
    ['not-a-uuid', {}, 'ACL_TOKEN_ACCESSOR_NOT_UUID', 'AccessorID is not a valid UUID'],
    [ID_C, {}, 'ACL_TOKEN_NOT_FOUND', `Cannot find token "${ID_C}"`],
    [ID_A, { SecretID: ID_C }, 'ACL_TOKEN_SECRET_CHANGE', "Changing a token's SecretID is not permitted"],
    [ID_A, { Local: true }, 'ACL_TOKEN_LOCAL_CHANGE', `Cannot toggle local mode of ${ID_A}`],
    [ID_A, { ExpirationTTL: 10 * MINUTE }, 'ACL_TOKEN_EXPIRATION_CHANGE', `Cannot change expiration time of ${ID_A}`],
    [
      ID_A,
      { ExpirationTime: START + 2 * HOUR },
      'ACL_TOKEN_EXPIRATION_CHANGE',
      `Cannot change expiration time of ${ID_A}`,
    ],
    [ID_A, { AuthMethod: 'kube' }, 'ACL_TOKEN_AUTH_METHOD_CHANGE', `Cannot change AuthMethod of ${ID_A}`],
    [ID_A, { Policies: [{ Name: 'nope' }] }, 'ACL_TOKEN_NO_POLICY_NAME', 'No such ACL policy with name "nope"'],
  ])('%s %j → %s %s', async (accessor, input, code, message) => {
    const { tokens } = await setup();
    await tokens.create({ AccessorID: ID_A, SecretID: ID_B });
    expect(await agentRejectionOf(tokens.update(accessor, input))).toEqual([code, message]);
  });

  it('accepts the ExpirationTime it already has', async () => {
    const { tokens } = await setup();
    const created = await tokens.create({ AccessorID: ID_A, ExpirationTTL: HOUR });
    const expires = Date.parse(created.value.ExpirationTime ?? '');
    expect(await agentRejectionOf(tokens.update(ID_A, { ExpirationTime: expires + 1000 }))).toEqual([
      'ACL_TOKEN_EXPIRATION_CHANGE',
      `Cannot change expiration time of ${ID_A}`,
    ]);
    const updated = await tokens.update(ID_A, { ExpirationTime: expires, Description: 'x' });
    expect(updated.value.ExpirationTime).toBe(created.value.ExpirationTime);
    // Left out, it is kept.
    expect((await tokens.update(ID_A, {})).value.ExpirationTime).toBe(created.value.ExpirationTime);
  });

  it('a local token stays local only when the body says so', async () => {
    const { tokens } = await setup();
    await tokens.create({ AccessorID: ID_A, Local: true });
    expect(await agentRejectionOf(tokens.update(ID_A, {}))).toEqual([
      'ACL_TOKEN_LOCAL_CHANGE',
      `Cannot toggle local mode of ${ID_A}`,
    ]);
    expect((await tokens.update(ID_A, { Local: true })).value.Local).toBe(true);
  });

  it('may give the anonymous token policies', async () => {
    const { tokens } = await setup();
    const row = await tokens.update(ANONYMOUS_ACCESSOR_ID, { Policies: [{ ID: GLOBAL_MANAGEMENT_POLICY_ID }] });
    expect(row.value.SecretID).toBe('anonymous');
    expect(row.value.Policies).toEqual([{ ID: GLOBAL_MANAGEMENT_POLICY_ID }]);
  });
});

describe('delete', () => {
  it('removes the token', async () => {
    const { tokens, store } = await setup();
    await tokens.create({ AccessorID: ID_A });
    await tokens.delete(ID_A, ID_B);
    expect(store.get<StoredToken>(ACL_TOKENS, ID_A)).toBeUndefined();
  });

  it.each<[string, string, string, string]>([
    ['nope', ID_B, 'ACL_TOKEN_DELETE_BAD_ID', 'Accessor ID is missing or an invalid UUID'],
    [
      ANONYMOUS_ACCESSOR_ID,
      ID_B,
      'ACL_TOKEN_DELETE_ANONYMOUS',
      'Delete operation not permitted on the anonymous token',
    ],
    [ID_C, ID_B, 'ACL_TOKEN_DELETE_NOT_FOUND', 'Cannot find token to delete'],
    [ID_A, ID_A, 'ACL_TOKEN_DELETE_SELF', "Deletion of the request's authorization token is not permitted"],
  ])('%s by %s → %s %s', async (accessor, caller, code, message) => {
    const { tokens } = await setup();
    await tokens.create({ AccessorID: ID_A });
    expect(await agentRejectionOf(tokens.delete(accessor, caller))).toEqual([code, message]);
  });
});

describe('clone', () => {
  it('copies the links under new IDs, keeping or replacing the description', async () => {
    const { tokens, policies } = await setup();
    const p = await policies.create({ Name: 'p' });
    const source = await tokens.create({
      AccessorID: ID_A,
      Description: 'source',
      Policies: [{ ID: p.key }],
      ServiceIdentities: [{ ServiceName: 'web' }],
      NodeIdentities: [{ NodeName: 'n1', Datacenter: 'dc1' }],
      Namespace: 'team-a',
    });
    const copy = await tokens.clone(ID_A);
    expect(copy.value.AccessorID).not.toBe(ID_A);
    expect(copy.value.SecretID).not.toBe(source.value.SecretID);
    expect(copy.value).toMatchObject({
      Description: 'source',
      Policies: [{ ID: p.key }],
      ServiceIdentities: [{ ServiceName: 'web' }],
      NodeIdentities: [{ NodeName: 'n1', Datacenter: 'dc1' }],
      Namespace: 'team-a',
    });
    expect((await tokens.clone(ID_A, 'the copy')).value.Description).toBe('the copy');
  });

  it('answers 404 ACL not found for an unknown token', async () => {
    const { tokens } = await setup();
    expect(await agentRejectionOf(tokens.clone(ID_C))).toEqual(['ACL_TOKEN_CLONE_NOT_FOUND', 'ACL not found']);
  });
});

describe('list', () => {
  it('lists unexpired tokens sorted by AccessorID, as stubs in Consul key order', async () => {
    const { tokens } = await setup();
    await tokens.create({ AccessorID: ID_B, Policies: [{ ID: GLOBAL_MANAGEMENT_POLICY_ID }] });
    await tokens.create({ AccessorID: ID_A });
    const rows = tokens.list();
    expect(rows.map((r) => r.key)).toEqual([ANONYMOUS_ACCESSOR_ID, ID_A, ID_B]);
    const stub = tokens.stub(rows[2]!, true);
    expect(Object.keys(stub)).toEqual([
      'AccessorID',
      'SecretID',
      'Description',
      'Policies',
      'Local',
      'CreateTime',
      'Hash',
      'CreateIndex',
      'ModifyIndex',
      'Namespace',
    ]);
  });

  it('filters by policy ID or service name; role and auth method find nothing', async () => {
    const { tokens } = await setup();
    await tokens.create({ AccessorID: ID_A, Policies: [{ ID: GLOBAL_MANAGEMENT_POLICY_ID }] });
    await tokens.create({ AccessorID: ID_B, ServiceIdentities: [{ ServiceName: 'web' }] });
    expect(tokens.list({ policy: GLOBAL_MANAGEMENT_POLICY_ID }).map((r) => r.key)).toEqual([ID_A]);
    expect(tokens.list({ serviceName: 'web' }).map((r) => r.key)).toEqual([ID_B]);
    expect(tokens.list({ role: ID_C })).toEqual([]);
    expect(tokens.list({ authMethod: 'kube' })).toEqual([]);
  });

  it('refuses two filters at once', async () => {
    const { tokens } = await setup();
    expect(() => tokens.list({ policy: ID_A, role: ID_B })).toThrow(
      expect.objectContaining({
        code: 'ACL_TOKEN_FILTER_CONFLICT',
        message: 'can only filter by one of policy, role, serviceName, or authmethod at once',
      }),
    );
  });
});

describe('concurrent writes', () => {
  it('two creates with the same SecretID on a durable store: exactly one wins', async () => {
    // With a data directory a commit is applied only once it is on disk, so without the write
    // lock both creates would pass the in-use check.
    const dir = await mkdtemp(join(tmpdir(), 'acl-tokens-'));
    const clock = new FakeClock(START);
    const store = await openEmbeddedStore({ dataDir: dir, log: silentLogger, clock });
    try {
      const { tokens } = createAclDomain(store, clock, { minExpirationTtlMs: MINUTE, maxExpirationTtlMs: 24 * HOUR });
      const results = await Promise.allSettled([tokens.create({ SecretID: ID_A }), tokens.create({ SecretID: ID_A })]);
      expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
      expect(tokens.list().filter((r) => r.value.SecretID === ID_A)).toHaveLength(1);
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
