import { describe, expect, it } from 'vitest';
import { isAgentError } from '../../../src/core/errors.js';
import { normalizeRules, parseRules } from '../../../src/acl/rules/parse.js';
import type { ParsedRules } from '../../../src/acl/rules/model.js';

/** The AgentError a parse fails with (fails the test when it does not fail). */
async function parseError(text: string): Promise<{ code: string; kind: string; message: string }> {
  try {
    await parseRules(text);
  } catch (err) {
    if (!isAgentError(err)) throw err;
    return { code: err.code, kind: err.kind, message: err.message };
  }
  throw new Error(`expected ${JSON.stringify(text)} to be rejected`);
}

/** The catalogue code each of Consul's rule texts comes with. */
function rulesCodeOf(message: string): string {
  if (message.startsWith('Failed to parse ACL rules: ')) return 'ACL_RULES_INVALID';
  if (message.includes(' intentions policy: ')) return 'ACL_RULES_BAD_INTENTIONS';
  if (message.includes(' has invalid policy ')) return 'ACL_RULES_BAD_POLICY';
  return 'ACL_RULES_BAD_LEVEL';
}

const HCL = `
# every rule kind once
acl = "write"
operator = "READ"
keyring = "deny"
mesh = "write"
peering = "read"
key "app/config" { policy = "read" }
key_prefix "app/" { policy = "list" }
service "web" {
  policy     = "write"
  intentions = "read"
}
service_prefix "" { policy = "Read" }
node "n1" { policy = "write" }
node_prefix "" { policy = "read" }
agent "n1" { policy = "read" }
agent_prefix "" { policy = "deny" }
session "n1" { policy = "write" }
session_prefix "" { policy = "read" }
event "deploy" { policy = "write" }
event_prefix "" { policy = "read" }
query "q" { policy = "write" }
query_prefix "" { policy = "read" }
`;

const JSON_FORM = JSON.stringify({
  query_prefix: { '': { policy: 'read' } },
  query: { q: { policy: 'write' } },
  event_prefix: { '': { policy: 'read' } },
  event: { deploy: { policy: 'write' } },
  session_prefix: { '': { policy: 'read' } },
  session: { n1: { policy: 'write' } },
  agent_prefix: { '': { policy: 'deny' } },
  agent: { n1: { policy: 'read' } },
  node_prefix: { '': { policy: 'read' } },
  node: { n1: { policy: 'write' } },
  service_prefix: { '': { policy: 'read' } },
  service: { web: { policy: 'write', intentions: 'read' } },
  key_prefix: { 'app/': { policy: 'list' } },
  key: { 'app/config': { policy: 'read' } },
  peering: 'read',
  mesh: 'write',
  keyring: 'deny',
  operator: 'read',
  acl: 'write',
});

const EXPECTED: ParsedRules = {
  acl: 'write',
  agent: [{ name: 'n1', policy: 'read' }],
  agent_prefix: [{ name: '', policy: 'deny' }],
  key: [{ name: 'app/config', policy: 'read' }],
  key_prefix: [{ name: 'app/', policy: 'list' }],
  node: [{ name: 'n1', policy: 'write' }],
  node_prefix: [{ name: '', policy: 'read' }],
  service: [{ name: 'web', policy: 'write', intentions: 'read' }],
  service_prefix: [{ name: '', policy: 'read' }],
  session: [{ name: 'n1', policy: 'write' }],
  session_prefix: [{ name: '', policy: 'read' }],
  event: [{ name: 'deploy', policy: 'write' }],
  event_prefix: [{ name: '', policy: 'read' }],
  query: [{ name: 'q', policy: 'write' }],
  query_prefix: [{ name: '', policy: 'read' }],
  keyring: 'deny',
  operator: 'read',
  mesh: 'write',
  peering: 'read',
};

describe('parseRules: forms', () => {
  it('parses every rule kind from HCL, levels lower-cased', async () => {
    expect(await parseRules(HCL)).toEqual(EXPECTED);
  });

  it('gives byte-identical canonical output for the HCL and the JSON spelling', async () => {
    const fromHcl = await parseRules(HCL);
    const fromJson = await parseRules(JSON_FORM);
    expect(fromJson).toEqual(EXPECTED);
    expect(JSON.stringify(fromJson)).toBe(JSON.stringify(fromHcl));
  });

  it('is plain JSON: a round trip through JSON gives the same object', async () => {
    const parsed = await parseRules(HCL);
    expect(JSON.parse(JSON.stringify(parsed))).toEqual(parsed);
  });

  it.each([
    ['HCL blocks', 'key "b" { policy = "read" }\nkey "a" { policy = "write" }'],
    ['HCL object assignment', 'key = {\n  "a" = { policy = "write" }\n  "b" = { policy = "read" }\n}'],
    ['JSON object', '{"key": {"b": {"policy": "read"}, "a": {"policy": "write"}}}'],
    ['JSON list of objects', '{"key": [{"b": {"policy": "read"}}, {"a": {"policy": "write"}}]}'],
    ['JSON bodies as lists', '{"key": {"b": [{"policy": "read"}], "a": [{"policy": "write"}]}}'],
    ['JSON with leading whitespace', '\n  {"key": {"a": {"policy": "WRITE"}, "b": {"policy": "Read"}}}'],
  ])('%s give the same rules, sorted by name', async (_form, text) => {
    expect(await parseRules(text)).toEqual({
      key: [
        { name: 'a', policy: 'write' },
        { name: 'b', policy: 'read' },
      ],
    });
  });

  it('merges repeated blocks for one name, keeping the stronger policy and intentions separately', async () => {
    const text = [
      'service "web" {\n  policy = "read"\n  intentions = "write"\n}',
      'service "web" { policy = "write" }',
      'key "k" { policy = "list" }',
      'key "k" { policy = "read" }',
      'key "d" { policy = "write" }',
      'key "d" { policy = "deny" }',
    ].join('\n');
    expect(await parseRules(text)).toEqual({
      key: [
        { name: 'd', policy: 'deny' },
        { name: 'k', policy: 'list' },
      ],
      service: [{ name: 'web', policy: 'write', intentions: 'write' }],
    });
  });

  it('accepts empty rules, comments and a name that is an Object.prototype key', async () => {
    expect(await parseRules('')).toEqual({});
    expect(await parseRules('  \n# nothing\n')).toEqual({});
    expect(await parseRules('{}')).toEqual({});
    const proto = await parseRules('key "__proto__" { policy = "read" }');
    expect(proto.key).toEqual([{ name: '__proto__', policy: 'read' }]);
    expect(Object.getPrototypeOf(proto)).toBe(Object.prototype);
  });

  it('reads HCL 1 one-line blocks as Consul does: several items, with or without commas', async () => {
    const expected = {
      service: [{ name: 'web', policy: 'read', intentions: 'write' }],
      key_prefix: [{ name: 'app/', policy: 'write' }],
    };
    expect(
      await parseRules('service "web" { policy = "read" intentions = "write" } key_prefix "app/" { policy = "write" }'),
    ).toEqual(expected);
    expect(
      await parseRules(
        'service "web" { policy = "read", intentions = "write" }\nkey_prefix "app/" { policy = "write" }',
      ),
    ).toEqual(expected);
  });

  it('keeps concurrent HCL parses apart', async () => {
    const names = Array.from({ length: 20 }, (_, i) => `svc-${i}`);
    const parsed = await Promise.all(names.map((n) => parseRules(`service "${n}" { policy = "write" }`)));
    expect(parsed.map((p) => p.service?.[0]?.name)).toEqual(names);
  });

  it('normalizeRules validates an already-decoded document synchronously', () => {
    expect(normalizeRules({ acl: 'READ', service: { web: { policy: 'deny' } } })).toEqual({
      acl: 'read',
      service: [{ name: 'web', policy: 'deny' }],
    });
  });
});

describe('parseRules: errors (400, Consul message text)', () => {
  it.each([
    ['service "web" { policy = "writ" }', 'Invalid service policy: "web" has invalid policy "writ"'],
    ['service "web" { policy = "list" }', 'Invalid service policy: "web" has invalid policy "list"'],
    ['node_prefix "" { policy = "list" }', 'Invalid node_prefix policy: "" has invalid policy "list"'],
    ['key "a" { policy = "lst" }', 'Invalid key policy: "a" has invalid policy "lst"'],
    ['key "a" {\n}', 'Invalid key policy: "a" has invalid policy ""'],
    ['agent "n" { policy = "x" }', 'Invalid agent policy: "n" has invalid policy "x"'],
    ['session_prefix "s" { policy = "x" }', 'Invalid session_prefix policy: "s" has invalid policy "x"'],
    ['event "e" { policy = "x" }', 'Invalid event policy: "e" has invalid policy "x"'],
    ['query_prefix "" { policy = "x" }', 'Invalid query_prefix policy: "" has invalid policy "x"'],
    [
      'service_prefix "" {\n  policy = "read"\n  intentions = "lst"\n}',
      'Invalid service_prefix intentions policy: "" has invalid intentions "lst"',
    ],
    [
      'service "web" {\n  policy = "read"\n  intentions = "list"\n}',
      'Invalid service intentions policy: "web" has invalid intentions "list"',
    ],
    ['acl = "x"', 'Invalid acl policy: "x"'],
    ['acl = "list"', 'Invalid acl policy: "list"'],
    ['operator = "list"', 'Invalid operator policy: "list"'],
    ['keyring = "all"', 'Invalid keyring policy: "all"'],
    ['mesh = ""', 'Invalid mesh policy: ""'],
    ['peering = "writes"', 'Invalid peering policy: "writes"'],
    ['{"service": {"web": {"policy": "writ"}}}', 'Invalid service policy: "web" has invalid policy "writ"'],
    ['servce "web" { policy = "write" }', 'Failed to parse ACL rules: unknown rule "servce"'],
    ['{"namespace": {"x": {}}}', 'Failed to parse ACL rules: unknown rule "namespace"'],
    ['key "a" { polcy = "read" }', 'Failed to parse ACL rules: key "a": unknown attribute "polcy"'],
    [
      'key "a" {\n  policy = "read"\n  intentions = "read"\n}',
      'Failed to parse ACL rules: key "a": unknown attribute "intentions"',
    ],
    ['key "a" { policy = 1 }', 'Failed to parse ACL rules: key "a": policy must be a string, got number 1'],
    ['acl = ["write"]', 'Failed to parse ACL rules: acl must be a string, got a list'],
    ['{"acl": null}', 'Failed to parse ACL rules: acl must be a string, got null'],
    [
      'service = "write"',
      'Failed to parse ACL rules: service must be a block labelled with a name, got string "write"',
    ],
    ['{"key": {"a": "read"}}', 'Failed to parse ACL rules: key "a" must be a block, got string "read"'],
  ])('%j → %s', async (text, message) => {
    expect(await parseError(text)).toEqual({ code: rulesCodeOf(message), kind: 'invalid', message });
  });

  it('reports the first bad level in Consul order (acl before blocks, blocks before operator)', async () => {
    const text = 'operator = "bad"\nservice "s" { policy = "bad" }\nacl = "bad"';
    expect(await parseError(text)).toMatchObject({ code: 'ACL_RULES_BAD_LEVEL', message: 'Invalid acl policy: "bad"' });
    expect(await parseError('operator = "bad"\nservice "s" { policy = "bad" }')).toMatchObject({
      code: 'ACL_RULES_BAD_POLICY',
      message: 'Invalid service policy: "s" has invalid policy "bad"',
    });
  });

  it('reports HCL syntax errors with a position', async () => {
    const err = await parseError('key "a" { policy = ');
    expect(err.code).toBe('ACL_RULES_INVALID');
    expect(err.kind).toBe('invalid');
    expect(err.message).toMatch(/^Failed to parse ACL rules: At 1:\d+: /);
    expect(err.message).not.toContain('input.hcl');
    expect((await parseError('acl = "write"\nacl = "read"')).message).toMatch(
      /^Failed to parse ACL rules: At 2:1: Attribute redefined; .*already set at 1:1\./,
    );
  });

  it('reports JSON syntax errors from JSON.parse', async () => {
    const err = await parseError('{"key": ');
    expect([err.code, err.kind]).toEqual(['ACL_RULES_INVALID', 'invalid']);
    expect(err.message).toMatch(/^Failed to parse ACL rules: .*JSON/);
  });
});
