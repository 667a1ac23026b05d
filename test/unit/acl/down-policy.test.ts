// acl.down_policy: what tokens resolve to while the cluster store is unreachable, driven by a fake
// reachability signal over an embedded store (the resolver sees only `connected`).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAclDomain, type AclDomain } from '../../../src/acl/domain.js';
import { ANONYMOUS_SECRET } from '../../../src/acl/builtin.js';
import { initAclState } from '../../../src/acl/init.js';
import { AclResolver, type AclDownPolicy } from '../../../src/acl/resolver.js';
import { FakeClock } from '../../../src/core/clock.js';
import { silentLogger } from '../../../src/core/log.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../../src/state/embedded/index.js';
import { agentErrorOf } from '../../support/errors.js';

const MANAGEMENT = '0e6c1bb3-8a1a-4d0e-9b35-6f2a3c4d5e6f';
const UNKNOWN = '11111111-2222-3333-4444-555555555555';

let store: EmbeddedStore;
let clock: FakeClock;
let domain: AclDomain;
const health = { connected: true };

beforeEach(async () => {
  clock = new FakeClock(Date.parse('2026-11-22T08:00:00Z'));
  store = await openEmbeddedStore({ log: silentLogger, clock });
  await initAclState(store, { initialManagement: MANAGEMENT }, clock);
  domain = createAclDomain(store, clock, { minExpirationTtlMs: 1_000, maxExpirationTtlMs: 86_400_000 });
  health.connected = true;
});
afterEach(() => store.close());

function resolverWith(downPolicy?: AclDownPolicy): AclResolver {
  return new AclResolver(
    store,
    {
      enabled: true,
      defaultPolicy: 'deny',
      datacenter: 'dc1',
      health,
      ...(downPolicy === undefined ? {} : { downPolicy }),
    },
    clock,
  );
}

async function readerToken(): Promise<{ secret: string; accessor: string }> {
  const policy = await domain.policies.create({ Name: 'reader', Rules: 'key_prefix "app/" { policy = "read" }' });
  const token = await domain.tokens.create({ Policies: [{ ID: policy.value.ID }] });
  return { secret: token.secret, accessor: token.value.AccessorID };
}

describe.each(['extend-cache', 'async-cache', undefined] as const)('down_policy %s', (policy) => {
  it('keeps resolving known tokens from the view, with their own rules, while disconnected', async () => {
    const resolver = resolverWith(policy);
    const { secret, accessor } = await readerToken();
    health.connected = false;
    const identity = resolver.resolve(secret);
    expect(identity.accessorId).toBe(accessor);
    expect(identity.authorizer.allowed('key', 'read', 'app/x')).toBe(true);
    expect(identity.authorizer.allowed('key', 'write', 'app/x')).toBe(false);
    expect(resolver.resolve(MANAGEMENT).authorizer.allowed('acl', 'write')).toBe(true);
  });

  it('still answers `ACL not found` for a secret the view does not hold', () => {
    const resolver = resolverWith(policy);
    health.connected = false;
    expect(agentErrorOf(() => resolver.resolve(UNKNOWN)).code).toBe('ACL_NOT_FOUND');
  });
});

describe('down_policy allow', () => {
  it('allows everything to every secret, known or not, while disconnected, and follows the view again once connected', async () => {
    const resolver = resolverWith('allow');
    const { secret, accessor } = await readerToken();
    health.connected = false;
    const known = resolver.resolve(secret);
    expect(known.accessorId).toBe(accessor);
    expect(known.authorizer.allowed('key', 'write', 'anything')).toBe(true);
    expect(resolver.resolve(UNKNOWN).authorizer.allowed('acl', 'write')).toBe(true);
    expect(resolver.resolve(ANONYMOUS_SECRET).anonymous).toBe(true);

    health.connected = true;
    expect(resolver.resolve(secret).authorizer.allowed('key', 'write', 'anything')).toBe(false);
    expect(agentErrorOf(() => resolver.resolve(UNKNOWN)).code).toBe('ACL_NOT_FOUND');
  });
});

describe('down_policy deny', () => {
  it('denies everything to every secret while disconnected (management included), naming the token, and follows the view again once connected', async () => {
    const resolver = resolverWith('deny');
    const { secret, accessor } = await readerToken();
    // Resolved once while connected: the cached identity must not outlive the disconnection.
    expect(resolver.resolve(secret).authorizer.allowed('key', 'read', 'app/x')).toBe(true);
    health.connected = false;
    const known = resolver.resolve(secret);
    expect(known.accessorId).toBe(accessor);
    expect(known.authorizer.allowed('key', 'read', 'app/x')).toBe(false);
    expect(resolver.resolve(MANAGEMENT).authorizer.allowed('acl', 'read')).toBe(false);
    expect(resolver.resolve(UNKNOWN).authorizer.allowed('key', 'read', 'app/x')).toBe(false);

    health.connected = true;
    expect(resolver.resolve(secret).authorizer.allowed('key', 'read', 'app/x')).toBe(true);
    expect(resolver.resolve(MANAGEMENT).authorizer.allowed('acl', 'write')).toBe(true);
  });
});

describe('without a health signal (the embedded store)', () => {
  it('is always connected: `deny` changes nothing', async () => {
    const resolver = new AclResolver(
      store,
      { enabled: true, defaultPolicy: 'deny', datacenter: 'dc1', downPolicy: 'deny' },
      clock,
    );
    const { secret } = await readerToken();
    expect(resolver.resolve(secret).authorizer.allowed('key', 'read', 'app/x')).toBe(true);
  });
});
