// The size limits of ACL policies and tokens (docs/decisions.md#size-limits): each field at its
// limit is stored, one byte or one entry over is a 413 naming the field and the limit, and nothing
// is written. Consul's own (a policy's Name, an identity's name) keep Consul's 400 and text.
import { describe, expect, it } from 'vitest';
import { createAclDomain } from '../../../src/acl/domain.js';
import { initAclState } from '../../../src/acl/init.js';
import {
  DATACENTER_MAX,
  DESCRIPTION_MAX,
  IDENTITY_DATACENTERS_MAX,
  POLICY_DATACENTERS_MAX,
  RULES_MAX,
  TOKEN_LINKS_MAX,
} from '../../../src/acl/limits.js';
import { ACL_POLICIES, ACL_TOKENS } from '../../../src/acl/model.js';
import type { PolicyInput } from '../../../src/acl/policies.js';
import type { TokenInput } from '../../../src/acl/tokens.js';
import { FakeClock } from '../../../src/core/clock.js';
import type { ErrorCode } from '../../../src/core/errors.js';
import { silentLogger } from '../../../src/core/log.js';
import { openEmbeddedStore } from '../../../src/state/embedded/index.js';
import { agentRejectionOf } from '../../support/errors.js';

async function setup() {
  const clock = new FakeClock(Date.UTC(2024, 4, 1, 10, 0, 0));
  const store = await openEmbeddedStore({ log: silentLogger, clock });
  await initAclState(store, { initialManagement: undefined }, clock);
  return { store, ...createAclDomain(store, clock, { minExpirationTtlMs: 60_000, maxExpirationTtlMs: 86_400_000 }) };
}

const fill = (seed: string, bytes: number, letter = 'x'): string => (seed + letter.repeat(bytes)).slice(0, bytes);
const list = (n: number, bytes: number, letter = 'd'): string[] =>
  Array.from({ length: n }, (_, i) => fill(`${letter}${i}-`, bytes, letter));
/** An odd byte count in two-byte characters: `x` and then é's. */
const twoByte = (bytes: number): string => (bytes % 2 === 1 ? 'x' : '') + 'é'.repeat(Math.floor(bytes / 2));

/** Rules of one-line rules, a comment filling them up to exactly `bytes`. */
function rulesOf(bytes: number): string {
  let rules = '';
  for (let i = 0; rules.length < bytes - 100; i++) rules += `key_prefix "app/${i}/" { policy = "read" }\n`;
  return `${rules}#${'-'.repeat(bytes - rules.length - 1)}`;
}

describe('policy limits', () => {
  it('stores a policy with every field at its limit', async () => {
    const { policies } = await setup();
    const input = {
      Name: fill('p-', 128, 'n'),
      Description: twoByte(DESCRIPTION_MAX),
      Rules: rulesOf(RULES_MAX),
      Datacenters: list(POLICY_DATACENTERS_MAX, DATACENTER_MAX),
    };
    const row = await policies.create(input);
    expect(row.value).toMatchObject(input);
    expect(Buffer.byteLength(row.value.Rules)).toBe(RULES_MAX);
    expect(Buffer.byteLength(row.value.Description)).toBe(DESCRIPTION_MAX);
  });

  it.each<[string, PolicyInput, ErrorCode, string]>([
    [
      'Description',
      { Description: twoByte(DESCRIPTION_MAX + 1) },
      'LIMIT_BYTES',
      'Description is 513 bytes, over the limit of 512 bytes',
    ],
    ['Rules', { Rules: rulesOf(RULES_MAX + 1) }, 'LIMIT_BYTES', 'Rules is 65537 bytes, over the limit of 65536 bytes'],
    [
      'Datacenters',
      { Datacenters: list(POLICY_DATACENTERS_MAX + 1, 8) },
      'LIMIT_ENTRIES',
      'Datacenters has 65 entries, over the limit of 64',
    ],
    [
      'a datacenter',
      { Datacenters: ['dc1', fill('', DATACENTER_MAX + 1)] },
      'LIMIT_BYTES',
      'Datacenters[1] is 65 bytes, over the limit of 64 bytes',
    ],
  ])('refuses %s over its limit with a 413, on create and on update', async (_what, fields, code, message) => {
    const { policies, store } = await setup();
    const before = store.list(ACL_POLICIES, '').length;
    expect(await agentRejectionOf(policies.create({ Name: 'p', ...fields }))).toEqual([code, message]);
    expect(store.list(ACL_POLICIES, '')).toHaveLength(before);
    const row = await policies.create({ Name: 'q' });
    expect(await agentRejectionOf(policies.update(row.key, { Name: 'q', ...fields }))).toEqual([code, message]);
    expect(policies.read(row.key)?.modifyIndex).toBe(row.modifyIndex);
  });

  it("keeps Consul's 400 for a Name over 128", async () => {
    const { policies } = await setup();
    expect((await agentRejectionOf(policies.create({ Name: fill('', 129, 'n') })))[0]).toBe('ACL_POLICY_NAME_LENGTH');
  });
});

describe('token limits', () => {
  async function withPolicies(n: number) {
    const acl = await setup();
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push((await acl.policies.create({ Name: `p${i}` })).key);
    return { ...acl, links: ids.map((ID) => ({ ID })) };
  }

  const identities = (n: number, dcCount: number, dcBytes: number) =>
    Array.from({ length: n }, (_, i) => ({
      ServiceName: fill(`s${i}-`, 256, 'a'),
      Datacenters: list(dcCount, dcBytes),
    }));
  const nodes = (n: number, dcBytes: number) =>
    Array.from({ length: n }, (_, i) => ({
      NodeName: fill(`n${i}-`, 256, 'a'),
      Datacenter: fill('dc-', dcBytes, 'd'),
    }));

  it('stores a token with every field at its limit, and clones it', async () => {
    const { tokens, links } = await withPolicies(TOKEN_LINKS_MAX);
    const input: TokenInput = {
      Description: twoByte(DESCRIPTION_MAX),
      Policies: links,
      ServiceIdentities: identities(TOKEN_LINKS_MAX, IDENTITY_DATACENTERS_MAX, DATACENTER_MAX),
      NodeIdentities: nodes(TOKEN_LINKS_MAX, DATACENTER_MAX),
    };
    const row = await tokens.create(input);
    expect(row.value.Description).toBe(input.Description);
    expect(row.value.Policies).toHaveLength(TOKEN_LINKS_MAX);
    expect(row.value.ServiceIdentities).toHaveLength(TOKEN_LINKS_MAX);
    expect(row.value.ServiceIdentities[0]?.Datacenters).toHaveLength(IDENTITY_DATACENTERS_MAX);
    expect(row.value.NodeIdentities).toHaveLength(TOKEN_LINKS_MAX);
    const clone = await tokens.clone(row.key);
    expect(clone.value.NodeIdentities).toEqual(row.value.NodeIdentities);
  });

  it.each<[string, (links: TokenInput['Policies']) => TokenInput, ErrorCode, string]>([
    [
      'Description',
      () => ({ Description: twoByte(DESCRIPTION_MAX + 1) }),
      'LIMIT_BYTES',
      'Description is 513 bytes, over the limit of 512 bytes',
    ],
    [
      'Policies',
      (links) => ({ Policies: [...(links ?? []), { ID: links?.[0]?.ID }] }),
      'LIMIT_ENTRIES',
      'Policies has 65 entries, over the limit of 64',
    ],
    [
      'ServiceIdentities',
      () => ({ ServiceIdentities: identities(TOKEN_LINKS_MAX + 1, 0, 0) }),
      'LIMIT_ENTRIES',
      'ServiceIdentities has 65 entries, over the limit of 64',
    ],
    [
      "an identity's Datacenters",
      () => ({ ServiceIdentities: identities(1, IDENTITY_DATACENTERS_MAX + 1, 8) }),
      'LIMIT_ENTRIES',
      'ServiceIdentities[0].Datacenters has 17 entries, over the limit of 16',
    ],
    [
      "an identity's datacenter",
      () => ({ ServiceIdentities: identities(1, 1, DATACENTER_MAX + 1) }),
      'LIMIT_BYTES',
      'ServiceIdentities[0].Datacenters[0] is 65 bytes, over the limit of 64 bytes',
    ],
    [
      'NodeIdentities',
      () => ({ NodeIdentities: nodes(TOKEN_LINKS_MAX + 1, 8) }),
      'LIMIT_ENTRIES',
      'NodeIdentities has 65 entries, over the limit of 64',
    ],
    [
      "a node identity's Datacenter",
      () => ({ NodeIdentities: nodes(1, DATACENTER_MAX + 1) }),
      'LIMIT_BYTES',
      'NodeIdentities[0].Datacenter is 65 bytes, over the limit of 64 bytes',
    ],
  ])('refuses %s over its limit with a 413, on create and on update', async (_what, input, code, message) => {
    const { tokens, store, links } = await withPolicies(TOKEN_LINKS_MAX);
    const before = store.list(ACL_TOKENS, '').length;
    expect(await agentRejectionOf(tokens.create(input(links)))).toEqual([code, message]);
    expect(store.list(ACL_TOKENS, '')).toHaveLength(before);
    const row = await tokens.create({});
    expect(await agentRejectionOf(tokens.update(row.key, input(links)))).toEqual([code, message]);
    expect(tokens.read(row.key)?.modifyIndex).toBe(row.modifyIndex);
  });

  it('refuses a clone whose new Description is over the limit', async () => {
    const { tokens } = await setup();
    const row = await tokens.create({ Description: 'short' });
    expect(await agentRejectionOf(tokens.clone(row.key, twoByte(DESCRIPTION_MAX + 1)))).toEqual([
      'LIMIT_BYTES',
      'Description is 513 bytes, over the limit of 512 bytes',
    ]);
  });

  it("keeps Consul's 400 for an identity name over 256", async () => {
    const { tokens } = await setup();
    const input = { ServiceIdentities: [{ ServiceName: fill('', 257, 'a') }] };
    expect((await agentRejectionOf(tokens.create(input)))[0]).toBe('ACL_TOKEN_SERVICE_IDENTITY_NAME');
  });
});
