// Login without HTTP: a jwt auth method with a static key and one with a JWKS (fetched through an
// injected fetch: counted, cached, refetched on rotation), binding rules turning claims into a
// token's identities, roles and policies, and every refusal writing no token (tokens counted).
import { describe, expect, it } from 'vitest';
import { createAuthMethodsDomain } from '../../../../src/acl/auth-methods/domain.js';
import type { JwksFetch } from '../../../../src/acl/auth-methods/jwks.js';
import { createAclDomain } from '../../../../src/acl/domain.js';
import { initAclState } from '../../../../src/acl/init.js';
import { ACL_TOKENS, type StoredToken } from '../../../../src/acl/model.js';
import { FakeClock } from '../../../../src/core/clock.js';
import { silentLogger } from '../../../../src/core/log.js';
import { openEmbeddedStore } from '../../../../src/state/embedded/index.js';
import { agentRejectionOf } from '../../../support/errors.js';
import { signJwt, testKey, type TestKey } from './jwt-support.js';

const NOW_S = Date.UTC(2024, 4, 1) / 1000;
const KEY = testKey('ec', 'k1');
const OTHER = testKey('ec', 'k2');
const RSA = testKey('rsa', 'r1');

async function setup(fetch?: JwksFetch) {
  const clock = new FakeClock(NOW_S * 1000);
  const store = await openEmbeddedStore({ log: silentLogger, clock });
  await initAclState(store, { initialManagement: undefined }, clock);
  const acl = createAclDomain(store, clock, { minExpirationTtlMs: 60_000, maxExpirationTtlMs: 86_400_000 });
  const auth = createAuthMethodsDomain(store, acl.tokens, {
    minExpirationTtlMs: 60_000,
    maxExpirationTtlMs: 86_400_000,
    datacenter: 'dc1',
    clock,
    ...(fetch === undefined ? {} : { fetch }),
    jwks: { maxAgeMs: 3_600_000, cooldownMs: 5_000 },
  });
  const tokenCount = (): number => store.list<StoredToken>(ACL_TOKENS, '').length;
  return { clock, store, acl, auth, tokenCount };
}

const STATIC_CONFIG = {
  JWTValidationPubKeys: [KEY.publicPem],
  BoundIssuer: 'https://ci.example',
  BoundAudiences: ['svc-agent'],
  ClaimMappings: { sub: 'name', project: 'project' },
  ListClaimMappings: { groups: 'groups' },
};

const claims = (extra: Record<string, unknown> = {}) => ({
  iss: 'https://ci.example',
  aud: 'svc-agent',
  sub: 'web',
  project: 'shop',
  groups: ['deploy'],
  iat: NOW_S - 5,
  exp: NOW_S + 300,
  ...extra,
});

async function staticMethod(extra: Record<string, unknown> = {}) {
  const s = await setup();
  await s.auth.methods.upsert({
    Name: 'ci',
    Type: 'jwt',
    MaxTokenTTL: 600_000,
    Config: { ...STATIC_CONFIG, ...extra },
  });
  await s.auth.rules.upsert({
    AuthMethod: 'ci',
    BindType: 'service',
    BindName: '${value.name}',
    Selector: 'value.project == shop',
  });
  return s;
}

describe('login with static keys', () => {
  it('binds a service identity from the claims; the token is local, carries the method, expires at MaxTokenTTL', async () => {
    const { auth, acl, tokenCount } = await staticMethod();
    const before = tokenCount();
    const token = await auth.login.login({
      AuthMethod: 'ci',
      BearerToken: await signJwt(KEY, claims()),
      Meta: { pod: 'a' },
    });
    expect(tokenCount()).toBe(before + 1);
    expect(token.value).toMatchObject({
      Description: 'token created via login: {"pod":"a"}',
      ServiceIdentities: [{ ServiceName: 'web' }],
      Local: true,
      AuthMethod: 'ci',
      ExpirationTime: new Date((NOW_S + 600) * 1000).toISOString(),
    });
    const json = acl.tokens.view(token, true);
    expect(Object.keys(json)).toEqual([
      'AccessorID',
      'SecretID',
      'Description',
      'ServiceIdentities',
      'Local',
      'AuthMethod',
      'ExpirationTime',
      'CreateTime',
      'Hash',
      'Namespace',
      'CreateIndex',
      'ModifyIndex',
    ]);
    expect(acl.tokens.list({ authMethod: 'ci' }).map((r) => r.key)).toEqual([token.key]);
  });

  it('refuses a forged, expired, early, wrong-issuer, wrong-audience or wrong-algorithm JWT, and one no rule selects, writing no token', async () => {
    const { auth, tokenCount } = await staticMethod({ JWTSupportedAlgs: ['ES256'] });
    const before = tokenCount();
    const cases: [Promise<string>, string][] = [
      [signJwt(OTHER, claims()), 'no known key successfully validated the token signature'],
      [
        signJwt(KEY, claims({ exp: NOW_S - 120 })),
        'error validating claims: go-jose/go-jose/jwt: validation failed, token is expired (exp)',
      ],
      [
        signJwt(KEY, claims({ nbf: NOW_S + 120 })),
        'error validating claims: go-jose/go-jose/jwt: validation failed, token not valid yet (nbf)',
      ],
      [
        signJwt(KEY, claims({ iss: 'https://evil' })),
        'error validating claims: go-jose/go-jose/jwt: validation failed, invalid issuer claim (iss)',
      ],
      [signJwt(KEY, claims({ aud: 'other' })), 'error validating claims: aud claim does not match any bound audience'],
      [
        signJwt(RSA, claims()),
        'error verifying token: oidc: id token signed with unsupported algorithm, expected ["ES256"] got "RS256"',
      ],
      [Promise.resolve('not-a-jwt'), 'error parsing token: go-jose/go-jose: compact JWS format must have three parts'],
      [Promise.resolve(''), 'missing jwt'],
    ];
    for (const [jwt, text] of cases) {
      expect(await agentRejectionOf(auth.login.login({ AuthMethod: 'ci', BearerToken: await jwt }))).toEqual([
        'ACL_LOGIN_REFUSED',
        text,
      ]);
    }
    expect(
      await agentRejectionOf(
        auth.login.login({ AuthMethod: 'ci', BearerToken: await signJwt(KEY, claims({ project: 'other' })) }),
      ),
    ).toEqual(['ACL_LOGIN_NO_BINDING', 'Permission denied']);
    expect(await agentRejectionOf(auth.login.login({ AuthMethod: 'nope', BearerToken: 'x' }))).toEqual([
      'ACL_LOGIN_NO_AUTH_METHOD',
      'ACL not found: auth method "nope" not found',
    ]);
    expect(tokenCount()).toBe(before);
  });

  it('binds node identities, roles and policies by name, list selectors, and skips names that do not exist', async () => {
    const { auth, acl } = await staticMethod();
    const policy = await acl.policies.create({ Name: 'deployers', Rules: 'key_prefix "" { policy = "read" }' });
    const role = await acl.roles.upsert('', { Name: 'shop-team', Policies: [{ ID: policy.value.ID }] });
    await auth.rules.upsert({
      AuthMethod: 'ci',
      BindType: 'node',
      BindName: 'node-${value.name}',
      Selector: '"deploy" in list.groups',
    });
    await auth.rules.upsert({ AuthMethod: 'ci', BindType: 'role', BindName: '${value.project}-team' });
    await auth.rules.upsert({
      AuthMethod: 'ci',
      BindType: 'policy',
      BindName: 'deployers',
      Selector: '"admin" in list.groups',
    });
    await auth.rules.upsert({ AuthMethod: 'ci', BindType: 'policy', BindName: 'missing-policy' });
    await auth.rules.upsert({
      AuthMethod: 'ci',
      BindType: 'templated-policy',
      BindName: 'builtin/service',
      BindVars: { Name: '${value.name}' },
    });
    const token = await auth.login.login({
      AuthMethod: 'ci',
      BearerToken: await signJwt(KEY, claims({ groups: ['deploy', 'admin'] })),
    });
    expect(token.value.NodeIdentities).toEqual([{ NodeName: 'node-web', Datacenter: 'dc1' }]);
    expect(token.value.Roles).toEqual([{ ID: role.value.ID }]);
    expect(token.value.Policies).toEqual([{ ID: policy.value.ID }]);
    expect(token.value.TemplatedPolicies).toEqual([
      { TemplateID: expect.any(String) as string, TemplateName: 'builtin/service', TemplateVariables: { Name: 'web' } },
    ]);
    const plain = await auth.login.login({ AuthMethod: 'ci', BearerToken: await signJwt(KEY, claims({ groups: [] })) });
    expect(plain.value.NodeIdentities).toEqual([]);
    expect(plain.value.Policies).toEqual([]);
  });

  it('logout deletes a login token and refuses any other; deleting the method takes its rules and tokens', async () => {
    const { auth, acl, store, tokenCount } = await staticMethod();
    const token = await auth.login.login({ AuthMethod: 'ci', BearerToken: await signJwt(KEY, claims()) });
    const other = await acl.tokens.create({ Description: 'plain' });
    expect(await agentRejectionOf(auth.login.logout({ accessorId: other.key, anonymous: false }))).toEqual([
      'ACL_LOGOUT_NOT_LOGIN',
      'Permission denied',
    ]);
    expect(await agentRejectionOf(auth.login.logout({ accessorId: '', anonymous: true }))).toEqual([
      'ACL_LOGOUT_NO_TOKEN',
      'Supplied token does not exist',
    ]);
    await auth.login.logout({ accessorId: token.key, anonymous: false });
    expect(store.get(ACL_TOKENS, token.key)).toBeUndefined();
    const second = await auth.login.login({ AuthMethod: 'ci', BearerToken: await signJwt(KEY, claims()) });
    const before = tokenCount();
    await auth.methods.delete('ci');
    expect(store.get(ACL_TOKENS, second.key)).toBeUndefined();
    expect(tokenCount()).toBe(before - 1);
    expect(auth.rules.list()).toEqual([]);
    expect(store.get(ACL_TOKENS, other.key)).toBeDefined();
  });
});

describe('auth method and binding rule writes', () => {
  it("refuses what Consul's AuthMethodSet and BindingRuleSet refuse, with their texts", async () => {
    const { auth } = await staticMethod();
    const method = (input: Parameters<typeof auth.methods.upsert>[0]) => agentRejectionOf(auth.methods.upsert(input));
    expect(await method({ Type: 'jwt' })).toEqual(['ACL_AUTH_METHOD_INVALID', 'Invalid Auth Method: no Name is set']);
    expect(await method({ Name: 'a b', Type: 'jwt' })).toEqual([
      'ACL_AUTH_METHOD_INVALID',
      "Invalid Auth Method: invalid Name. Only alphanumeric characters, '-' and '_' are allowed",
    ]);
    expect(await method({ Name: 'k', Type: 'kubernetes' })).toEqual([
      'ACL_AUTH_METHOD_INVALID',
      'Invalid Auth Method: Type should be one of: [jwt]',
    ]);
    expect(await method({ Name: 'ci', Type: 'kubernetes' })).toEqual([
      'ACL_AUTH_METHOD_TYPE_IMMUTABLE',
      'the Type field of an Auth Method is immutable',
    ]);
    expect(await method({ Name: 'x', Type: 'jwt', MaxTokenTTL: 1000, Config: STATIC_CONFIG })).toEqual([
      'ACL_AUTH_METHOD_TTL_TOO_SHORT',
      'MaxTokenTTL 1s cannot be less than 1m0s',
    ]);
    expect(await method({ Name: 'x', Type: 'jwt', TokenLocality: 'dc', Config: STATIC_CONFIG })).toEqual([
      'ACL_AUTH_METHOD_INVALID',
      "Invalid Auth Method: TokenLocality should be one of 'local' or 'global'",
    ]);
    const rule = (input: Parameters<typeof auth.rules.upsert>[0]) => agentRejectionOf(auth.rules.upsert(input));
    expect(await rule({ BindType: 'service', BindName: 'x' })).toEqual([
      'ACL_BINDING_RULE_INVALID',
      'Invalid Binding Rule: no AuthMethod is set',
    ]);
    expect(await rule({ AuthMethod: 'gone', BindType: 'service', BindName: 'x' })).toEqual([
      'ACL_BINDING_RULE_NO_METHOD',
      'cannot find auth method with name "gone"',
    ]);
    expect((await rule({ AuthMethod: 'ci', BindType: 'service', BindName: 'x', Selector: 'value.a ==' }))[0]).toBe(
      'ACL_BINDING_RULE_SELECTOR',
    );
    expect(await rule({ AuthMethod: 'ci', BindType: 'group', BindName: 'x' })).toEqual([
      'ACL_BINDING_RULE_INVALID',
      'Invalid Binding Rule: unknown BindType "group"',
    ]);
    expect(await rule({ AuthMethod: 'ci', BindType: 'service', BindName: '${value.nope}' })).toEqual([
      'ACL_BINDING_RULE_INVALID',
      'Invalid Binding Rule: invalid BindName: failed to validate bindType "service": error interpreting template: unknown variable accessed: value.nope',
    ]);
    expect(await rule({ ID: 'not-a-uuid', AuthMethod: 'ci', BindType: 'service', BindName: 'x' })).toEqual([
      'ACL_BINDING_RULE_ID_NOT_UUID',
      'Binding Rule ID invalid UUID',
    ]);
  });
});

describe('a JWKS URL', () => {
  function jwksServer(initial: TestKey[]) {
    let keys = initial;
    let fetches = 0;
    const fetch: JwksFetch = () => {
      fetches++;
      return Promise.resolve({ keys: keys.map((k) => k.jwk) });
    };
    return { fetch, rotate: (next: TestKey[]) => (keys = next), fetches: () => fetches };
  }

  it('is fetched when the method is written, kept, and fetched again for a rotated key after the cooldown', async () => {
    const server = jwksServer([KEY]);
    const { auth, clock } = await setup(server.fetch);
    await auth.methods.upsert({
      Name: 'jwks',
      Type: 'jwt',
      Config: { ...STATIC_CONFIG, JWTValidationPubKeys: undefined, JWKSURL: 'http://127.0.0.1:1/jwks' },
    });
    expect(server.fetches()).toBe(1);
    await auth.rules.upsert({ AuthMethod: 'jwks', BindType: 'service', BindName: '${value.name}' });
    const login = async (key: TestKey) =>
      auth.login.login({
        AuthMethod: 'jwks',
        BearerToken: await signJwt(key, claims(), { kid: key.jwk.kid as string }),
      });
    await login(KEY);
    await login(KEY);
    expect(server.fetches()).toBe(2); // the validator's own set, once
    server.rotate([OTHER]);
    // Within the cooldown of the last fetch an unknown key costs no fetch.
    expect((await agentRejectionOf(login(OTHER)))[1]).toBe(
      'error verifying token: failed to verify id token signature',
    );
    expect(server.fetches()).toBe(2);
    clock.advance(5_000);
    expect((await login(OTHER)).value.ServiceIdentities).toEqual([{ ServiceName: 'web' }]);
    expect(server.fetches()).toBe(3);
    // The old key is gone from the set now.
    clock.advance(5_000);
    expect((await agentRejectionOf(login(KEY)))[1]).toBe('error verifying token: failed to verify id token signature');
  });

  it('refuses a method whose JWKS URL cannot be fetched', async () => {
    const { auth } = await setup(() => Promise.reject(new Error('oidc: get keys failed: 404 Not Found')));
    expect(
      await agentRejectionOf(
        auth.methods.upsert({ Name: 'jwks', Type: 'jwt', Config: { JWKSURL: 'http://127.0.0.1:1/jwks' } }),
      ),
    ).toEqual([
      'ACL_AUTH_METHOD_INVALID',
      'Invalid Auth Method: error checking JWKSURL: fetching keys oidc: get keys failed: 404 Not Found',
    ]);
  });
});
