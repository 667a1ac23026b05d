// Token resolution: secret → identity, Consul's `ACL not found` for unknown and expired tokens,
// and a cache that is dropped the moment a token or policy changes.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAclDomain, type AclDomain } from '../../../src/acl/domain.js';
import { ANONYMOUS_ACCESSOR_ID, ANONYMOUS_SECRET } from '../../../src/acl/builtin.js';
import { initAclState } from '../../../src/acl/init.js';
import { ACLS_DISABLED_IDENTITY, AclResolver } from '../../../src/acl/resolver.js';
import { FakeClock } from '../../../src/core/clock.js';
import { agentErrorOf } from '../../support/errors.js';
import { silentLogger } from '../../../src/core/log.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../../src/state/embedded/index.js';

const MANAGEMENT = '0e6c1bb3-8a1a-4d0e-9b35-6f2a3c4d5e6f';

let store: EmbeddedStore;
let clock: FakeClock;
let domain: AclDomain;
let resolver: AclResolver;

beforeEach(async () => {
  clock = new FakeClock(Date.parse('2026-11-22T08:00:00Z'));
  store = await openEmbeddedStore({ log: silentLogger, clock });
  await initAclState(store, { initialManagement: MANAGEMENT }, clock);
  domain = createAclDomain(store, clock, { minExpirationTtlMs: 1_000, maxExpirationTtlMs: 86_400_000 });
  resolver = new AclResolver(store, { enabled: true, defaultPolicy: 'deny', datacenter: 'dc1' }, clock);
});
afterEach(() => store.close());

async function tokenWith(
  rules: string,
  extra: Record<string, unknown> = {},
): Promise<{ secret: string; accessor: string; policyId: string }> {
  const policy = await domain.policies.create({ Name: `p${Math.random().toString(36).slice(2, 8)}`, Rules: rules });
  const token = await domain.tokens.create({ Policies: [{ ID: policy.value.ID }], ...extra });
  return { secret: token.secret, accessor: token.value.AccessorID, policyId: policy.value.ID };
}

describe('AclResolver', () => {
  it('resolves the management token to an identity that may do anything', () => {
    const identity = resolver.resolve(MANAGEMENT);
    expect(identity.anonymous).toBe(false);
    expect(identity.authorizer.allowed('acl', 'write')).toBe(true);
    expect(identity.authorizer.allowed('key', 'write', 'any/key')).toBe(true);
  });

  it('resolves the anonymous secret to the anonymous token, which falls through to the default policy', () => {
    const identity = resolver.resolve(ANONYMOUS_SECRET);
    expect(identity.accessorId).toBe(ANONYMOUS_ACCESSOR_ID);
    expect(identity.anonymous).toBe(true);
    expect(identity.authorizer.allowed('key', 'read', 'x')).toBe(false);
  });

  it('answers an unknown secret with `ACL not found` (403)', () => {
    const err = agentErrorOf(() => resolver.resolve('11111111-2222-3333-4444-555555555555'));
    expect([err.code, err.kind, err.message]).toEqual(['ACL_NOT_FOUND', 'permission-denied', 'ACL not found']);
  });

  it("compiles the token's policies and carries its namespace", async () => {
    const { secret, accessor } = await tokenWith('key_prefix "app/" { policy = "write" }', { Namespace: 'team-a' });
    const identity = resolver.resolve(secret);
    expect(identity.accessorId).toBe(accessor);
    expect(identity.namespace).toBe('team-a');
    expect(identity.authorizer.allowed('key', 'write', 'app/x')).toBe(true);
    expect(identity.authorizer.allowed('key', 'read', 'other')).toBe(false);
  });

  it('serves a cached identity until a token or policy changes', async () => {
    const { secret } = await tokenWith('key "a" { policy = "read" }');
    const first = resolver.resolve(secret);
    expect(resolver.resolve(secret)).toBe(first);
    await domain.tokens.create({ Description: 'unrelated' });
    const second = resolver.resolve(secret);
    expect(second).not.toBe(first);
    expect(second.authorizer.allowed('key', 'read', 'a')).toBe(true);
  });

  it('keeps its identities over writes to other tables, and tells alternating secrets apart', async () => {
    const a = await tokenWith('key "a" { policy = "read" }');
    const b = await tokenWith('key "b" { policy = "read" }');
    const first = resolver.resolve(a.secret);
    await store.commit([{ op: 'set', table: 'kv', key: 'x', value: { Value: null, Flags: 0 } }]);
    expect(resolver.resolve(a.secret)).toBe(first);
    for (let i = 0; i < 3; i++) {
      expect(resolver.resolve(a.secret).accessorId).toBe(a.accessor);
      expect(resolver.resolve(b.secret).accessorId).toBe(b.accessor);
    }
    expect(resolver.resolve(b.secret).authorizer.allowed('key', 'read', 'a')).toBe(false);
  });

  it('stops honouring a deleted token on the very next resolve', async () => {
    const { secret, accessor } = await tokenWith('key "a" { policy = "read" }');
    resolver.resolve(secret);
    await domain.tokens.delete(accessor, MANAGEMENT_ACCESSOR());
    expect(agentErrorOf(() => resolver.resolve(secret)).code).toBe('ACL_NOT_FOUND');
  });

  it('applies an edited policy on the very next resolve, and drops a deleted one', async () => {
    const { secret, policyId } = await tokenWith('key "a" { policy = "read" }');
    expect(resolver.resolve(secret).authorizer.allowed('key', 'read', 'a')).toBe(true);
    const policy = store.get<{ Name: string }>('acl-policies', policyId)!;
    await domain.policies.update(policyId, {
      ID: policyId,
      Name: policy.value.Name,
      Rules: 'key "a" { policy = "deny" }',
    });
    expect(resolver.resolve(secret).authorizer.allowed('key', 'read', 'a')).toBe(false);
    await domain.policies.update(policyId, {
      ID: policyId,
      Name: policy.value.Name,
      Rules: 'key "a" { policy = "write" }',
    });
    expect(resolver.resolve(secret).authorizer.allowed('key', 'write', 'a')).toBe(true);
    await domain.policies.delete(policyId);
    expect(resolver.resolve(secret).authorizer.allowed('key', 'read', 'a')).toBe(false);
  });

  it('refuses a token once its expiration time passes, cached or not', async () => {
    const { secret } = await tokenWith('key "a" { policy = "read" }', { ExpirationTTL: 10_000 });
    expect(resolver.resolve(secret).authorizer.allowed('key', 'read', 'a')).toBe(true);
    clock.advance(9_999);
    expect(() => resolver.resolve(secret)).not.toThrow();
    clock.advance(1);
    expect(agentErrorOf(() => resolver.resolve(secret)).code).toBe('ACL_NOT_FOUND');
    const fresh = new AclResolver(store, { enabled: true, defaultPolicy: 'deny', datacenter: 'dc1' }, clock);
    expect(agentErrorOf(() => fresh.resolve(secret)).code).toBe('ACL_NOT_FOUND');
  });

  it('grants service identities their service and reads on the catalog', async () => {
    const token = await domain.tokens.create({ ServiceIdentities: [{ ServiceName: 'web' }] });
    const authz = resolver.resolve(token.secret).authorizer;
    expect(authz.allowed('service', 'write', 'web')).toBe(true);
    expect(authz.allowed('service', 'write', 'web-sidecar-proxy')).toBe(true);
    expect(authz.allowed('service', 'write', 'db')).toBe(false);
    expect(authz.allowed('service', 'read', 'db')).toBe(true);
    expect(authz.allowed('node', 'read', 'any-node')).toBe(true);
  });

  it('with ACLs disabled, every secret resolves to the allow-all identity', () => {
    const off = new AclResolver(store, { enabled: false, defaultPolicy: 'deny', datacenter: 'dc1' }, clock);
    expect(off.resolve('anything at all')).toBe(ACLS_DISABLED_IDENTITY);
    expect(off.resolve('x').authorizer.allowed('acl', 'write')).toBe(true);
  });

  it('a default policy of allow lets the anonymous token through where no rule speaks', () => {
    const allow = new AclResolver(store, { enabled: true, defaultPolicy: 'allow', datacenter: 'dc1' }, clock);
    expect(allow.resolve(ANONYMOUS_SECRET).authorizer.allowed('key', 'write', 'x')).toBe(true);
  });
});

/** The management token's accessor (the caller of the delete above). */
function MANAGEMENT_ACCESSOR(): string {
  return resolver.tokenForSecret(MANAGEMENT)!.AccessorID;
}

describe('AclResolver through roles and templated policies', () => {
  it("a token holds its role's policies, identities and templated policies; a role edit is in force on the next resolve", async () => {
    const kv = await domain.policies.create({ Name: 'kv-app', Rules: 'key_prefix "app/" { policy = "write" }' });
    const role = await domain.roles.upsert('', { Name: 'app', Policies: [{ ID: kv.value.ID }] });
    const token = await domain.tokens.create({ Roles: [{ ID: role.key }] });
    const before = resolver.resolve(token.secret);
    expect(before.authorizer.allowed('key', 'write', 'app/x')).toBe(true);
    expect(before.authorizer.allowed('service', 'write', 'web')).toBe(false);
    expect(resolver.resolve(token.secret)).toBe(before);

    await domain.roles.upsert(role.key, {
      Name: 'app',
      ServiceIdentities: [{ ServiceName: 'web' }],
      NodeIdentities: [{ NodeName: 'far', Datacenter: 'dc2' }],
      TemplatedPolicies: [{ TemplateName: 'builtin/node', TemplateVariables: { Name: 'n1' } }],
    });
    const after = resolver.resolve(token.secret);
    expect(after.authorizer.allowed('key', 'write', 'app/x')).toBe(false);
    expect(after.authorizer.allowed('service', 'write', 'web-sidecar-proxy')).toBe(true);
    expect(after.authorizer.allowed('node', 'write', 'n1')).toBe(true);
    expect(after.authorizer.allowed('node', 'write', 'far')).toBe(false);

    await domain.roles.delete(role.key);
    expect(resolver.resolve(token.secret).authorizer.allowed('service', 'write', 'web')).toBe(false);
  });

  it('a role edit reaches a token that links it by name, and not one that does not link it', async () => {
    const role = await domain.roles.upsert('', { Name: 'ops' });
    const linked = await domain.tokens.create({ Roles: [{ Name: 'ops' }] });
    const other = await tokenWith('key_prefix "" { policy = "read" }');
    resolver.resolve(other.secret);
    await domain.roles.upsert(role.key, { Name: 'ops', TemplatedPolicies: [{ TemplateName: 'builtin/nomad-server' }] });
    expect(resolver.resolve(linked.secret).authorizer.allowed('acl', 'write')).toBe(true);
    expect(resolver.resolve(other.secret).authorizer.allowed('acl', 'write')).toBe(false);
  });

  it('a templated policy on a token grants what its template grants, in its datacenters only', async () => {
    const dns = await domain.tokens.create({ TemplatedPolicies: [{ TemplateName: 'builtin/dns' }] });
    const a = resolver.resolve(dns.secret).authorizer;
    expect([
      a.allowed('node', 'read', 'x'),
      a.allowed('service', 'read', 'x'),
      a.allowed('query', 'read', 'x'),
    ]).toEqual([true, true, true]);
    expect([a.allowed('service', 'write', 'x'), a.allowed('key', 'read', 'x'), a.allowed('acl', 'read')]).toEqual([
      false,
      false,
      false,
    ]);
    const elsewhere = await domain.tokens.create({
      TemplatedPolicies: [{ TemplateName: 'builtin/dns', Datacenters: ['dc2'] }],
    });
    expect(resolver.resolve(elsewhere.secret).authorizer.allowed('node', 'read', 'x')).toBe(false);
  });
});
