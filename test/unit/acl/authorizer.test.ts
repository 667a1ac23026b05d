import { describe, expect, it } from 'vitest';
import { allowAllAuthorizer, type CompileInput, compileAuthorizer } from '../../../src/acl/authorizer.js';
import { GLOBAL_MANAGEMENT_PARSED, GLOBAL_READ_ONLY_PARSED } from '../../../src/acl/builtin.js';
import { parseRules } from '../../../src/acl/rules/parse.js';
import { type Access, type Authorizer, RESOURCES, type Resource } from '../../../src/acl/types.js';

type Opts = Partial<Omit<CompileInput, 'policies'>>;

/** Parses each text as one policy and compiles them together (dc1, default deny unless told). */
async function authz(texts: readonly string[], opts: Opts = {}): Promise<Authorizer> {
  const policies = await Promise.all(texts.map((t) => parseRules(t)));
  return compileAuthorizer({ datacenter: 'dc1', defaultPolicy: 'deny', ...opts, policies });
}

type Check = readonly [Resource, Access, string | undefined, boolean];

/** Every check at once, so a failure lists all wrong answers. */
function expectChecks(a: Authorizer, checks: readonly Check[]): void {
  const got = checks.map(([r, acc, name]) => [r, acc, name, a.allowed(r, acc, name)]);
  expect(got).toEqual(checks.map((c) => [...c]));
}

describe('compileAuthorizer: name matching', () => {
  it.each<[string, string[], Check[]]>([
    [
      'an exact rule applies to its name only; a prefix rule to every name it starts',
      ['key "foo" { policy = "write" }', 'key_prefix "bar/" { policy = "read" }'],
      [
        ['key', 'write', 'foo', true],
        ['key', 'read', 'foo/x', false],
        ['key', 'read', 'fo', false],
        ['key', 'read', 'bar/', true],
        ['key', 'read', 'bar/baz/qux', true],
        ['key', 'write', 'bar/baz', false],
        ['key', 'read', 'bar', false],
      ],
    ],
    [
      'the longest matching prefix wins',
      [
        'key_prefix "" { policy = "read" }\nkey_prefix "a/" { policy = "write" }\nkey_prefix "a/b/" { policy = "deny" }\nkey_prefix "a/bc" { policy = "read" }',
      ],
      [
        ['key', 'read', 'z', true],
        ['key', 'write', 'z', false],
        ['key', 'write', 'a/x', true],
        ['key', 'read', 'a/b/c', false],
        ['key', 'read', 'a/b/', false],
        ['key', 'write', 'a/bcd', false],
        ['key', 'read', 'a/bcd', true],
        ['key', 'write', 'a/', true],
        ['key', 'read', '', true],
      ],
    ],
    [
      'an exact rule for the full name overrides every prefix rule, even a longer-looking one',
      [
        'service "web" { policy = "read" }\nservice_prefix "web" { policy = "write" }\nservice_prefix "" { policy = "deny" }',
      ],
      [
        ['service', 'write', 'web', false],
        ['service', 'read', 'web', true],
        ['service', 'write', 'web2', true],
        ['service', 'read', 'db', false],
      ],
    ],
    [
      'service_prefix "" matches every name, the empty one too',
      ['service_prefix "" { policy = "write" }'],
      [
        ['service', 'write', 'anything', true],
        ['service', 'write', '', true],
        ['service', 'write', undefined, true],
        ['node', 'read', 'n1', false],
      ],
    ],
    [
      'names are matched per resource, never across',
      [
        'node "x" { policy = "write" }\nagent_prefix "x" { policy = "read" }\nsession "x" { policy = "write" }\nevent_prefix "" { policy = "write" }\nquery "x" { policy = "read" }',
      ],
      [
        ['node', 'write', 'x', true],
        ['agent', 'read', 'xy', true],
        ['agent', 'write', 'xy', false],
        ['session', 'write', 'x', true],
        ['session', 'read', 'xy', false],
        ['event', 'write', 'deploy', true],
        ['query', 'read', 'x', true],
        ['query', 'write', 'x', false],
        ['service', 'read', 'x', false],
        ['key', 'read', 'x', false],
      ],
    ],
  ])('%s', async (_title, texts, checks) => {
    expectChecks(await authz(texts), checks);
  });

  it('finds the right rule among many prefixes sharing first characters', async () => {
    const lines = [];
    for (let i = 0; i < 30; i++) lines.push(`key_prefix "app/${i}/" { policy = "${i % 2 === 0 ? 'write' : 'read'}" }`);
    lines.push('key_prefix "app/" { policy = "deny" }', 'key "app/7/x" { policy = "write" }');
    const a = await authz([lines.join('\n')]);
    expectChecks(a, [
      ['key', 'write', 'app/12/k', true],
      ['key', 'write', 'app/13/k', false],
      ['key', 'read', 'app/13/k', true],
      ['key', 'write', 'app/1/k', false],
      ['key', 'write', 'app/7/x', true],
      ['key', 'read', 'app/99/k', false],
      ['key', 'read', 'other', false],
    ]);
  });
});

describe('compileAuthorizer: levels and merging', () => {
  it('write grants read, list and write; list grants list and read; read grants read; deny nothing', async () => {
    const a = await authz(
      [
        'key "w" { policy = "write" }\nkey "l" { policy = "list" }\nkey "r" { policy = "read" }\nkey "d" { policy = "deny" }',
      ],
      {
        defaultPolicy: 'allow',
      },
    );
    const table: Check[] = [];
    const grants: Record<string, Access[]> = { w: ['read', 'list', 'write'], l: ['read', 'list'], r: ['read'], d: [] };
    for (const [name, allowed] of Object.entries(grants)) {
      for (const access of ['read', 'list', 'write'] as const)
        table.push(['key', access, name, allowed.includes(access)]);
    }
    expectChecks(a, table);
  });

  it.each<[string, string[], Check[]]>([
    [
      'write beats read',
      ['service "web" { policy = "read" }', 'service "web" { policy = "write" }'],
      [['service', 'write', 'web', true]],
    ],
    [
      'deny beats write',
      ['service "web" { policy = "write" }', 'service "web" { policy = "deny" }'],
      [['service', 'read', 'web', false]],
    ],
    [
      'deny beats write, either order',
      ['service "web" { policy = "deny" }', 'service "web" { policy = "write" }'],
      [['service', 'read', 'web', false]],
    ],
    [
      'list beats read and loses to write',
      [
        'key "k" { policy = "read" }\nkey "j" { policy = "list" }',
        'key "k" { policy = "list" }\nkey "j" { policy = "write" }',
      ],
      [
        ['key', 'list', 'k', true],
        ['key', 'write', 'k', false],
        ['key', 'write', 'j', true],
      ],
    ],
    [
      'merging is per name and per kind (exact and prefix of one name are separate rules)',
      [
        'key "a" { policy = "deny" }\nkey_prefix "a" { policy = "read" }',
        'key_prefix "a" { policy = "write" }\nkey "b" { policy = "write" }',
      ],
      [
        ['key', 'read', 'a', false],
        ['key', 'write', 'ab', true],
        ['key', 'write', 'b', true],
      ],
    ],
    [
      'scalars merge too',
      ['operator = "read"', 'operator = "write"', 'acl = "write"', 'acl = "deny"'],
      [
        ['operator', 'write', undefined, true],
        ['acl', 'read', undefined, false],
      ],
    ],
  ])('%s', async (_title, texts, checks) => {
    expectChecks(await authz(texts), checks);
  });
});

describe('compileAuthorizer: fall-through to the default policy', () => {
  const named: Resource[] = ['agent', 'event', 'intention', 'key', 'node', 'query', 'service', 'session'];
  const scalars: Resource[] = ['keyring', 'operator', 'mesh', 'peering'];

  it.each([
    ['allow', true],
    ['deny', false],
  ] as const)('no rule → default %s for every resource but acl', async (defaultPolicy, expected) => {
    const a = await authz([], { defaultPolicy });
    expect(a.defaultAllow).toBe(expected);
    for (const r of [...named, ...scalars]) {
      for (const access of ['read', 'list', 'write'] as const) {
        expect([r, access, a.allowed(r, access, 'x')]).toEqual([r, access, expected]);
      }
    }
    // Consul's allow-all root still withholds ACL management.
    expect(a.allowed('acl', 'read')).toBe(false);
    expect(a.allowed('acl', 'write')).toBe(false);
  });

  it('a rule for another name does not stop the fall-through', async () => {
    const allow = await authz(['service "web" { policy = "deny" }'], { defaultPolicy: 'allow' });
    expectChecks(allow, [
      ['service', 'write', 'db', true],
      ['service', 'read', 'web', false],
    ]);
    const deny = await authz(['service "web" { policy = "write" }'], { defaultPolicy: 'deny' });
    expectChecks(deny, [
      ['service', 'read', 'db', false],
      ['service', 'write', 'web', true],
    ]);
  });
});

describe('compileAuthorizer: scalars', () => {
  it.each<[string, string[], 'allow' | 'deny', Check[]]>([
    [
      'operator, keyring and acl levels',
      ['operator = "read"\nkeyring = "write"\nacl = "read"'],
      'deny',
      [
        ['operator', 'read', undefined, true],
        ['operator', 'write', undefined, false],
        ['keyring', 'write', undefined, true],
        ['acl', 'read', undefined, true],
        ['acl', 'write', undefined, false],
        ['operator', 'read', 'ignored-name', true],
      ],
    ],
    [
      'mesh and peering fall back to operator when unset',
      ['operator = "write"'],
      'deny',
      [
        ['mesh', 'write', undefined, true],
        ['peering', 'write', undefined, true],
      ],
    ],
    [
      'mesh and peering rules override operator',
      ['operator = "write"\nmesh = "read"\npeering = "deny"'],
      'deny',
      [
        ['mesh', 'read', undefined, true],
        ['mesh', 'write', undefined, false],
        ['peering', 'read', undefined, false],
        ['operator', 'write', undefined, true],
      ],
    ],
    [
      'mesh and peering set without operator do not grant operator',
      ['mesh = "write"\npeering = "read"'],
      'deny',
      [
        ['operator', 'read', undefined, false],
        ['mesh', 'write', undefined, true],
        ['peering', 'read', undefined, true],
        ['peering', 'write', undefined, false],
      ],
    ],
    [
      'an operator deny carries over to mesh and peering under default allow; keyring is separate',
      ['operator = "deny"'],
      'allow',
      [
        ['mesh', 'read', undefined, false],
        ['peering', 'read', undefined, false],
        ['keyring', 'write', undefined, true],
      ],
    ],
  ])('%s', async (_title, texts, defaultPolicy, checks) => {
    expectChecks(await authz(texts, { defaultPolicy }), checks);
  });
});

describe('compileAuthorizer: intentions', () => {
  it('derives intentions from service rules: read/write → read, deny → deny, explicit wins', async () => {
    const a = await authz([
      [
        'service "w" { policy = "write" }',
        'service "r" { policy = "read" }',
        'service "d" { policy = "deny" }',
        'service "x" {\n policy = "read"\n intentions = "write"\n}',
        'service "y" {\n policy = "write"\n intentions = "deny"\n}',
        'service_prefix "p-" {\n policy = "deny"\n intentions = "read"\n}',
      ].join('\n'),
    ]);
    expectChecks(a, [
      ['intention', 'read', 'w', true],
      ['intention', 'write', 'w', false],
      ['intention', 'read', 'r', true],
      ['intention', 'read', 'd', false],
      ['intention', 'write', 'x', true],
      ['intention', 'read', 'y', false],
      ['intention', 'read', 'p-1', true],
      ['service', 'read', 'p-1', false],
      ['intention', 'read', 'other', false],
    ]);
  });

  it('merges intentions separately from policy across policies, then derives', async () => {
    const a = await authz([
      'service "web" { policy = "write" }',
      'service "web" {\n policy = "read"\n intentions = "write"\n}',
    ]);
    expectChecks(a, [
      ['service', 'write', 'web', true],
      ['intention', 'write', 'web', true],
    ]);
    const b = await authz(['service "web" { policy = "write" }', 'service "web" { policy = "deny" }']);
    expectChecks(b, [['intention', 'read', 'web', false]]);
  });

  it('answers `*`: read when any rule grants it, write only when all rules do', async () => {
    const some = await authz([
      'service "web" {\n policy = "write"\n intentions = "write"\n}\nservice "db" { policy = "read" }',
    ]);
    expectChecks(some, [
      ['intention', 'read', '*', true],
      ['intention', 'write', '*', false],
    ]);
    const all = await authz(['service_prefix "" {\n policy = "write"\n intentions = "write"\n}']);
    expectChecks(all, [
      ['intention', 'read', '*', true],
      ['intention', 'write', '*', true],
    ]);
    const blocked = await authz([
      'service_prefix "" {\n policy = "write"\n intentions = "write"\n}\nservice "db" { policy = "read" }',
    ]);
    expectChecks(blocked, [['intention', 'write', '*', false]]);
  });
});

describe('compileAuthorizer: identities', () => {
  it('a service identity grants write on the service and its sidecar, read on every service and node', async () => {
    const a = await authz([], { serviceIdentities: [{ ServiceName: 'web' }] });
    expectChecks(a, [
      ['service', 'write', 'web', true],
      ['service', 'write', 'web-sidecar-proxy', true],
      ['service', 'write', 'web2', false],
      ['service', 'read', 'db', true],
      ['node', 'read', 'n1', true],
      ['node', 'write', 'n1', false],
      ['intention', 'read', 'web', true],
      ['intention', 'write', 'web', false],
      ['key', 'read', 'k', false],
    ]);
  });

  it.each<[string, readonly string[] | undefined, boolean]>([
    ['no Datacenters', undefined, true],
    ['empty Datacenters', [], true],
    ['Datacenters with this one', ['dc2', 'dc1'], true],
    ['Datacenters without this one', ['dc2'], false],
  ])('a service identity with %s applies: %s', async (_t, dcs, applies) => {
    const identity = dcs === undefined ? { ServiceName: 'web' } : { ServiceName: 'web', Datacenters: dcs };
    const a = await authz([], { serviceIdentities: [identity] });
    expect(a.allowed('service', 'write', 'web')).toBe(applies);
    expect(a.allowed('node', 'read', 'n1')).toBe(applies);
  });

  it('a node identity grants write on its node and read on services, in its datacenter only', async () => {
    const here = await authz([], { nodeIdentities: [{ NodeName: 'n1', Datacenter: 'dc1' }] });
    expectChecks(here, [
      ['node', 'write', 'n1', true],
      ['node', 'read', 'n2', false],
      ['service', 'read', 'any', true],
      ['service', 'write', 'any', false],
    ]);
    const elsewhere = await authz([], { nodeIdentities: [{ NodeName: 'n1', Datacenter: 'dc2' }] });
    expectChecks(elsewhere, [
      ['node', 'write', 'n1', false],
      ['service', 'read', 'any', false],
    ]);
  });

  it('identities merge with policies by precedence', async () => {
    const a = await authz(['service "web" { policy = "deny" }\nservice_prefix "" { policy = "write" }'], {
      serviceIdentities: [{ ServiceName: 'web' }],
    });
    expectChecks(a, [
      ['service', 'write', 'web', false],
      ['service', 'write', 'web-sidecar-proxy', true],
      ['service', 'write', 'db', true],
    ]);
  });
});

describe('compileAuthorizer: keyWritePrefix', () => {
  it.each<[string, string[], 'allow' | 'deny', string, boolean]>([
    ['write prefix, nothing beneath', ['key_prefix "a/" { policy = "write" }'], 'deny', 'a/', true],
    ['write prefix covers a longer prefix', ['key_prefix "a/" { policy = "write" }'], 'deny', 'a/b/', true],
    [
      'a read rule beneath blocks',
      ['key_prefix "a/" { policy = "write" }\nkey "a/b/secret" { policy = "read" }'],
      'deny',
      'a/',
      false,
    ],
    [
      'a list prefix beneath blocks',
      ['key_prefix "a/" { policy = "write" }\nkey_prefix "a/b/" { policy = "list" }'],
      'deny',
      'a/',
      false,
    ],
    [
      'a deny beneath blocks',
      ['key_prefix "" { policy = "write" }\nkey_prefix "a/x" { policy = "deny" }'],
      'allow',
      'a/',
      false,
    ],
    [
      'a write rule beneath does not block',
      ['key_prefix "a/" { policy = "write" }\nkey "a/b" { policy = "write" }'],
      'deny',
      'a/',
      true,
    ],
    [
      'a non-write rule elsewhere does not block',
      ['key_prefix "a/" { policy = "write" }\nkey "b/c" { policy = "read" }'],
      'deny',
      'a/',
      true,
    ],
    ['the covering prefix lacks write', ['key_prefix "a/" { policy = "read" }'], 'allow', 'a/b/', false],
    [
      'the longest covering prefix decides',
      ['key_prefix "" { policy = "deny" }\nkey_prefix "a/" { policy = "write" }'],
      'deny',
      'a/b',
      true,
    ],
    [
      'an exact rule on the prefix itself counts as beneath',
      ['key_prefix "a/" { policy = "write" }\nkey "a/" { policy = "read" }'],
      'deny',
      'a/',
      false,
    ],
    [
      'exact write on the prefix alone is not enough under deny',
      ['key "a/" { policy = "write" }'],
      'deny',
      'a/',
      false,
    ],
    [
      'exact write on the prefix alone falls through under allow',
      ['key "a/" { policy = "write" }'],
      'allow',
      'a/',
      true,
    ],
    ['no rule: default allow', [], 'allow', 'a/', true],
    ['no rule: default deny', [], 'deny', 'a/', false],
    [
      'the empty prefix (delete everything) sees every rule',
      ['key_prefix "" { policy = "write" }\nkey "z" { policy = "read" }'],
      'deny',
      '',
      false,
    ],
  ])('%s', async (_title, texts, defaultPolicy, prefix, expected) => {
    expect((await authz(texts, { defaultPolicy })).keyWritePrefix(prefix)).toBe(expected);
  });
});

describe('compileAuthorizer: anyAllowed and allAllowed', () => {
  it.each<[string, string[], 'allow' | 'deny', Resource, Access, boolean, boolean]>([
    // title, rules, default, resource, access, any, all
    ['no rules, default deny', [], 'deny', 'service', 'read', false, false],
    ['no rules, default allow', [], 'allow', 'service', 'read', true, true],
    ['one granting rule', ['service "web" { policy = "read" }'], 'deny', 'service', 'read', true, false],
    ['one granting rule, default allow', ['service "web" { policy = "read" }'], 'allow', 'service', 'read', true, true],
    ['one denying rule, default allow', ['service "web" { policy = "deny" }'], 'allow', 'service', 'read', true, false],
    ['"" prefix grants', ['service_prefix "" { policy = "read" }'], 'deny', 'service', 'read', true, true],
    [
      '"" prefix denies, a narrower rule grants',
      ['service_prefix "" { policy = "deny" }\nservice "web" { policy = "write" }'],
      'allow',
      'service',
      'write',
      true,
      false,
    ],
    [
      '"" prefix denies, nothing grants',
      ['service_prefix "" { policy = "deny" }\nservice "web" { policy = "read" }'],
      'allow',
      'service',
      'write',
      false,
      false,
    ],
    [
      '"" prefix grants, a narrower deny blocks all',
      ['node_prefix "" { policy = "write" }\nnode "n9" { policy = "deny" }'],
      'allow',
      'node',
      'read',
      true,
      false,
    ],
    ['"" prefix grants read, not write', ['key_prefix "" { policy = "read" }'], 'allow', 'key', 'write', false, false],
    ['list grants list', ['key_prefix "a" { policy = "list" }'], 'deny', 'key', 'list', true, false],
    ['scalar set', ['operator = "read"'], 'deny', 'operator', 'read', true, true],
    ['scalar unset follows the default', [], 'allow', 'keyring', 'write', true, true],
    ['mesh follows operator', ['operator = "write"'], 'deny', 'mesh', 'write', true, true],
    ['acl unset is never granted', [], 'allow', 'acl', 'read', false, false],
  ])('%s', async (_title, texts, defaultPolicy, resource, access, any, all) => {
    const a = await authz(texts, { defaultPolicy });
    expect([a.anyAllowed(resource, access), a.allAllowed(resource, access)]).toEqual([any, all]);
  });
});

describe('built-in policies and allowAllAuthorizer', () => {
  const names = ['', 'x', 'web', 'a/b/c', '*'];

  it.each(['allow', 'deny'] as const)('global-management allows everything (default %s)', (defaultPolicy) => {
    const a = compileAuthorizer({ policies: [GLOBAL_MANAGEMENT_PARSED], datacenter: 'dc1', defaultPolicy });
    for (const r of RESOURCES) {
      for (const access of ['read', 'list', 'write'] as const) {
        for (const name of names)
          expect([r, access, name, a.allowed(r, access, name)]).toEqual([r, access, name, true]);
        expect([r, access, a.anyAllowed(r, access), a.allAllowed(r, access)]).toEqual([r, access, true, true]);
      }
    }
    expect(a.keyWritePrefix('')).toBe(true);
    expect(a.keyWritePrefix('a/')).toBe(true);
  });

  it('global-read-only allows reads and no writes', () => {
    const a = compileAuthorizer({ policies: [GLOBAL_READ_ONLY_PARSED], datacenter: 'dc1', defaultPolicy: 'allow' });
    for (const r of RESOURCES) {
      expect([r, a.allowed(r, 'read', 'x'), a.allowed(r, 'write', 'x')]).toEqual([r, true, false]);
    }
    expect(a.keyWritePrefix('')).toBe(false);
  });

  it('allowAllAuthorizer allows everything, ACL management included', () => {
    for (const r of RESOURCES) {
      expect(allowAllAuthorizer.allowed(r, 'write', 'x')).toBe(true);
      expect(allowAllAuthorizer.anyAllowed(r, 'write')).toBe(true);
      expect(allowAllAuthorizer.allAllowed(r, 'write')).toBe(true);
    }
    expect(allowAllAuthorizer.keyWritePrefix('')).toBe(true);
    expect(allowAllAuthorizer.defaultAllow).toBe(true);
  });
});
