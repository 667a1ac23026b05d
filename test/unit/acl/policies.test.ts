import { agentRejectionOf } from '../../support/errors.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GLOBAL_MANAGEMENT_POLICY_ID, GLOBAL_MANAGEMENT_RULES } from '../../../src/acl/builtin.js';
import { createAclDomain } from '../../../src/acl/domain.js';
import { initAclState } from '../../../src/acl/init.js';
import { ACL_POLICIES, type StoredPolicy } from '../../../src/acl/model.js';
import { AclPolicies, type PolicyInput } from '../../../src/acl/policies.js';
import { parseRules } from '../../../src/acl/rules/parse.js';
import { FakeClock } from '../../../src/core/clock.js';
import { isUuid } from '../../../src/core/ids.js';
import { silentLogger } from '../../../src/core/log.js';
import { openEmbeddedStore } from '../../../src/state/embedded/index.js';

const MISSING_ID = 'cccccccc-1111-2222-3333-444444444444';
const READ_KEYS = 'key_prefix "" { policy = "read" }';

async function setup() {
  const clock = new FakeClock(Date.UTC(2024, 4, 1, 10, 0, 0));
  const store = await openEmbeddedStore({ log: silentLogger, clock });
  await initAclState(store, { initialManagement: undefined }, clock);
  return {
    clock,
    store,
    ...createAclDomain(store, clock, { minExpirationTtlMs: 60_000, maxExpirationTtlMs: 86_400_000 }),
  };
}

describe('create', () => {
  it('stores the policy with its parsed rules and answers in Consul key order', async () => {
    const { policies, store } = await setup();
    const row = await policies.create({ Name: 'readers', Description: 'reads keys', Rules: READ_KEYS });
    expect(isUuid(row.key)).toBe(true);
    const json = policies.view(row);
    expect(Object.keys(json)).toEqual(['ID', 'Name', 'Description', 'Rules', 'Hash', 'CreateIndex', 'ModifyIndex']);
    expect(json).toMatchObject({ ID: row.key, Name: 'readers', Description: 'reads keys', Rules: READ_KEYS });
    expect(store.get<StoredPolicy>(ACL_POLICIES, row.key)?.value.Parsed).toEqual(await parseRules(READ_KEYS));
  });

  it('shows Datacenters after Rules when there are some', async () => {
    const { policies } = await setup();
    const row = await policies.create({ Name: 'dc', Datacenters: ['dc1'] });
    expect(Object.keys(policies.view(row))).toEqual([
      'ID',
      'Name',
      'Description',
      'Rules',
      'Datacenters',
      'Hash',
      'CreateIndex',
      'ModifyIndex',
    ]);
    expect(policies.view(row).Datacenters).toEqual(['dc1']);
  });

  it.each<[PolicyInput, string, string]>([
    [{ ID: MISSING_ID, Name: 'x' }, 'ACL_POLICY_ID_SET', 'Cannot specify the ID when creating a new policy'],
    [{}, 'ACL_POLICY_NO_NAME', 'Invalid Policy: no Name is set'],
    [{ Name: '' }, 'ACL_POLICY_NO_NAME', 'Invalid Policy: no Name is set'],
    [
      { Name: 'has space' },
      'ACL_POLICY_NAME_CHARS',
      "Invalid Policy: invalid Name. Only alphanumeric characters, a single '/', '-' and '_' are allowed",
    ],
    [
      { Name: 'a/b/c' },
      'ACL_POLICY_NAME_CHARS',
      "Invalid Policy: invalid Name. Only alphanumeric characters, a single '/', '-' and '_' are allowed",
    ],
    [
      { Name: '/lead' },
      'ACL_POLICY_NAME_PREFIX',
      "Invalid Policy: invalid Name. Names cannot be prefixed with '/' or 'builtin/'",
    ],
    [
      { Name: 'builtin/mine' },
      'ACL_POLICY_NAME_PREFIX',
      "Invalid Policy: invalid Name. Names cannot be prefixed with '/' or 'builtin/'",
    ],
    [
      { Name: 'x'.repeat(129) },
      'ACL_POLICY_NAME_LENGTH',
      'Invalid Policy: invalid Name. Length must be greater than 0 and less than 128',
    ],
    [{ Name: 'bad-level', Rules: 'acl = "bad"' }, 'ACL_RULES_BAD_LEVEL', 'Invalid acl policy: "bad"'],
  ])('%j → 400 %s %s', async (input, code, message) => {
    const { policies } = await setup();
    expect(await agentRejectionOf(policies.create(input))).toEqual([code, message]);
  });

  it('accepts one inner slash and a 128-character name', async () => {
    const { policies } = await setup();
    expect((await policies.create({ Name: 'team/readers' })).value.Name).toBe('team/readers');
    expect((await policies.create({ Name: 'y'.repeat(128) })).value.Name).toHaveLength(128);
  });

  it('refuses a name in use, whatever its case, with 409', async () => {
    const { policies } = await setup();
    await policies.create({ Name: 'dup' });
    expect(await agentRejectionOf(policies.create({ Name: 'DUP' }))).toEqual([
      'ACL_POLICY_NAME_IN_USE',
      'Invalid Policy: A Policy with Name "DUP" already exists',
    ]);
    expect(await agentRejectionOf(policies.create({ Name: 'global-management' }))).toEqual([
      'ACL_POLICY_NAME_IN_USE',
      'Invalid Policy: A Policy with Name "global-management" already exists',
    ]);
  });

  it('reports a rule parse failure after the name checks, as a 400 with the parser text', async () => {
    const { policies } = await setup();
    const [code, message] = await agentRejectionOf(policies.create({ Name: 'broken', Rules: 'key_prefix "" {' }));
    expect(code).toBe('ACL_RULES_INVALID');
    expect(message).toMatch(/^Failed to parse ACL rules: /);
    expect(await agentRejectionOf(policies.create({ Name: '', Rules: 'key_prefix "" {' }))).toEqual([
      'ACL_POLICY_NO_NAME',
      'Invalid Policy: no Name is set',
    ]);
  });

  it('parses the rules once, when written', async () => {
    const { store } = await setup();
    let parses = 0;
    const counted = new AclPolicies(store, {
      parseRules: (text) => {
        parses++;
        return parseRules(text);
      },
    });
    const row = await counted.create({ Name: 'once', Rules: READ_KEYS });
    counted.read(row.key);
    counted.readByName('once');
    counted.list();
    expect(parses).toBe(1);
  });
});

describe('read', () => {
  it('by ID, and by name ignoring case', async () => {
    const { policies } = await setup();
    const row = await policies.create({ Name: 'Finder' });
    expect(policies.read(row.key)?.value.Name).toBe('Finder');
    expect(policies.readByName('finder')?.key).toBe(row.key);
    expect(policies.read(MISSING_ID)).toBeUndefined();
    expect(policies.readByName('nobody')).toBeUndefined();
  });

  it('the built-in is there with Consul rules text', async () => {
    const { policies } = await setup();
    const gm = policies.readByName('global-management');
    expect(gm?.key).toBe(GLOBAL_MANAGEMENT_POLICY_ID);
    expect(gm && policies.view(gm).Rules).toBe(GLOBAL_MANAGEMENT_RULES);
  });
});

describe('update', () => {
  it('renames and re-rules, keeping CreateIndex and moving ModifyIndex and Hash', async () => {
    const { policies, store } = await setup();
    const created = await policies.create({ Name: 'old', Rules: READ_KEYS });
    const updated = await policies.update(created.key, { ID: created.key, Name: 'new', Rules: 'operator = "read"' });
    expect(updated.value).toMatchObject({ ID: created.key, Name: 'new', Rules: 'operator = "read"' });
    expect(updated.createIndex).toBe(created.createIndex);
    expect(updated.modifyIndex).toBeGreaterThan(created.modifyIndex);
    expect(updated.value.Hash).not.toBe(created.value.Hash);
    expect(store.get<StoredPolicy>(ACL_POLICIES, created.key)?.value.Parsed).toEqual({ operator: 'read' });
  });

  it('may change only the case of its own name', async () => {
    const { policies } = await setup();
    const row = await policies.create({ Name: 'case' });
    expect((await policies.update(row.key, { Name: 'CASE' })).value.Name).toBe('CASE');
  });

  it.each<[string, PolicyInput, string, string]>([
    ['other', { ID: MISSING_ID, Name: 'x' }, 'ACL_POLICY_ID_MISMATCH', 'Policy ID in URL and payload do not match'],
    ['not-a-uuid', { Name: 'x' }, 'ACL_POLICY_ID_NOT_UUID', 'Policy ID invalid UUID'],
    [MISSING_ID, { Name: 'x' }, 'ACL_POLICY_NOT_FOUND', `cannot find policy ${MISSING_ID}`],
    [
      'mine',
      { Name: 'taken' },
      'ACL_POLICY_RENAME_IN_USE',
      'Invalid Policy: A policy with name "taken" already exists',
    ],
    ['mine', {}, 'ACL_POLICY_NO_NAME', 'Invalid Policy: no Name is set'],
  ])('%s %j → %s %s', async (which, input, code, message) => {
    const { policies } = await setup();
    await policies.create({ Name: 'taken' });
    const mine = await policies.create({ Name: 'mine' });
    const id = which === 'mine' ? mine.key : which;
    expect(await agentRejectionOf(policies.update(id, input))).toEqual([code, message]);
  });

  it('an empty ID creates, as Consul does for PUT /v1/acl/policy/', async () => {
    const { policies } = await setup();
    const row = await policies.update('', { Name: 'via-empty' });
    expect(isUuid(row.key)).toBe(true);
  });

  it('the built-in may be renamed and re-described but keeps its rules and datacenters', async () => {
    const { policies } = await setup();
    expect(
      await agentRejectionOf(
        policies.update(GLOBAL_MANAGEMENT_POLICY_ID, { Name: 'global-management', Rules: READ_KEYS }),
      ),
    ).toEqual([
      'ACL_POLICY_BUILTIN_RULES',
      'Changing the Rules for the builtin global-management policy is not permitted',
    ]);
    expect(await agentRejectionOf(policies.update(GLOBAL_MANAGEMENT_POLICY_ID, { Name: 'global-management' }))).toEqual(
      ['ACL_POLICY_BUILTIN_RULES', 'Changing the Rules for the builtin global-management policy is not permitted'],
    );
    expect(
      await agentRejectionOf(
        policies.update(GLOBAL_MANAGEMENT_POLICY_ID, { Name: 'gm', Rules: GLOBAL_MANAGEMENT_RULES, Datacenters: [] }),
      ),
    ).toEqual([
      'ACL_POLICY_BUILTIN_DATACENTERS',
      'Changing the Datacenters of the builtin global-management policy is not permitted',
    ]);
    const renamed = await policies.update(GLOBAL_MANAGEMENT_POLICY_ID, {
      Name: 'root',
      Description: 'all of it',
      Rules: GLOBAL_MANAGEMENT_RULES,
    });
    expect(renamed.value).toMatchObject({ Name: 'root', Description: 'all of it', Rules: GLOBAL_MANAGEMENT_RULES });
  });
});

describe('delete', () => {
  it('removes a policy; a missing one is not an error', async () => {
    const { policies } = await setup();
    const row = await policies.create({ Name: 'short-lived' });
    await policies.delete(row.key);
    expect(policies.read(row.key)).toBeUndefined();
    await expect(policies.delete(row.key)).resolves.toBeUndefined();
    await expect(policies.delete('not-even-a-uuid')).resolves.toBeUndefined();
  });

  it('refuses the built-in', async () => {
    const { policies } = await setup();
    expect(await agentRejectionOf(policies.delete(GLOBAL_MANAGEMENT_POLICY_ID))).toEqual([
      'ACL_POLICY_BUILTIN_DELETE',
      'Delete operation not permitted on the builtin global-management policy',
    ]);
  });
});

describe('list', () => {
  it('lists stubs sorted by ID, with Datacenters null when none', async () => {
    const { policies } = await setup();
    await policies.create({ Name: 'b', Datacenters: ['dc1'] });
    await policies.create({ Name: 'a' });
    const rows = policies.list();
    expect(rows.map((r) => r.key)).toEqual([...rows.map((r) => r.key)].sort());
    expect(rows.map((r) => r.value.Name).sort()).toEqual(['a', 'b', 'global-management']);
    const stubs = rows.map((r) => policies.stub(r));
    for (const stub of stubs) {
      expect(Object.keys(stub)).toEqual([
        'ID',
        'Name',
        'Description',
        'Datacenters',
        'Hash',
        'CreateIndex',
        'ModifyIndex',
      ]);
    }
    expect(stubs.find((s) => s.Name === 'a')?.Datacenters).toBeNull();
    expect(stubs.find((s) => s.Name === 'b')?.Datacenters).toEqual(['dc1']);
  });
});

describe('concurrent writes', () => {
  it('two creates of one name on a durable store: exactly one wins', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'acl-policies-'));
    const clock = new FakeClock(0);
    const store = await openEmbeddedStore({ dataDir: dir, log: silentLogger, clock });
    try {
      const { policies } = createAclDomain(store, clock, {
        minExpirationTtlMs: 60_000,
        maxExpirationTtlMs: 86_400_000,
      });
      const results = await Promise.allSettled([
        policies.create({ Name: 'race', Rules: READ_KEYS }),
        policies.create({ Name: 'race', Rules: READ_KEYS }),
      ]);
      expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
      expect(policies.list().filter((r) => r.value.Name === 'race')).toHaveLength(1);
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
