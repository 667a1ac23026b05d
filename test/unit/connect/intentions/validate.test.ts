import { describe, expect, it } from 'vitest';
import type { IntentionPermission } from '../../../../src/connect/intentions/model.js';
import {
  assertValidIntention,
  intentionProblems,
  multiErrorText,
  normalizeIntention,
  storedIntention,
  type IntentionInput,
} from '../../../../src/connect/intentions/validate.js';
import { AgentError } from '../../../../src/core/errors.js';

const base: IntentionInput = { SourceName: 'web', DestinationName: 'db', Action: 'allow' };
const problems = (input: IntentionInput, api: 'legacy' | 'exact' = 'legacy', ns = 'default') =>
  intentionProblems(normalizeIntention(input, ns), api);

function thrown(fn: () => void): AgentError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AgentError) return err;
    throw err;
  }
  throw new Error('expected a throw');
}

describe('normalizeIntention', () => {
  it('fills namespaces from the default, SourceType consul, and upper-cases methods', () => {
    const x = normalizeIntention(
      {
        ...base,
        Action: undefined,
        Permissions: [{ Action: 'allow', HTTP: { PathPrefix: '/a', Methods: ['get', 'Post'] } }],
      },
      'team-a',
    );
    expect(x).toMatchObject({ SourceNS: 'team-a', DestinationNS: 'team-a', SourceType: 'consul' });
    expect(x.Permissions[0]?.HTTP?.Methods).toEqual(['GET', 'POST']);
    expect(
      problems({ ...base, Action: undefined, Permissions: [{ Action: 'allow', HTTP: { Methods: ['get'] } }] }, 'exact'),
    ).toEqual([]);
  });
});

describe('intentionProblems', () => {
  it('accepts a plain L4 intention in both APIs', () => {
    expect(problems(base)).toEqual([]);
    expect(problems(base, 'exact')).toEqual([]);
  });

  it.each<[string, IntentionInput, string[]]>([
    ['missing names', { Action: 'allow' }, ['SourceName must be set', 'DestinationName must be set']],
    [
      'partial wildcards',
      { ...base, SourceName: 'we*', DestinationNS: 'n*s' },
      [
        "SourceName: wildcard character '*' cannot be used with partial values",
        "DestinationNS: wildcard character '*' cannot be used with partial values",
      ],
    ],
    [
      'exact name after a wildcard namespace',
      { ...base, SourceNS: '*', DestinationNS: '*' },
      [
        'SourceName: exact value cannot follow wildcard namespace',
        'DestinationName: exact value cannot follow wildcard namespace',
      ],
    ],
    ['a bad action', { ...base, Action: 'maybe' }, ["Action must be set to 'allow' or 'deny'"]],
    ['a bad source type', { ...base, SourceType: 'dns' }, ["SourceType must be set to 'consul'"]],
    ['a long description', { ...base, Description: 'x'.repeat(513) }, ['Description exceeds maximum length 512']],
    [
      'a multi-byte description over 512 bytes',
      { ...base, Description: 'é'.repeat(257) },
      ['Description exceeds maximum length 512'],
    ],
    [
      'a long meta key and value',
      { ...base, Meta: { ['k'.repeat(129)]: 'v', ok: 'v'.repeat(513) } },
      [
        `Meta key "${'k'.repeat(129)}" exceeds maximum length 128`,
        'Meta value for key "ok" exceeds maximum length 512',
      ],
    ],
    [
      'too many meta pairs',
      { ...base, Meta: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])) },
      ['Meta exceeds maximum element count 64'],
    ],
    [
      'a partition or a peer',
      { ...base, SourcePartition: 'p', DestinationPartition: 'default', SourcePeer: 'x' },
      [
        'Cannot specify a source partition with this endpoint',
        'SourcePeer field is not supported on this endpoint. Use config entries instead',
      ],
    ],
    [
      'permissions on the legacy API',
      { ...base, Permissions: [{ Action: 'allow', HTTP: { PathExact: '/' } }] },
      ['Permissions must not be set when using the legacy APIs'],
    ],
  ])('legacy: %s', (_name, input, expected) => {
    expect(problems(input)).toEqual(expected);
  });

  const l7 = (p: IntentionPermission): IntentionInput => ({ ...base, Action: undefined, Permissions: [p] });
  it.each<[string, IntentionInput, string]>([
    [
      'action with permissions',
      { ...base, Permissions: [{ Action: 'allow', HTTP: { PathExact: '/' } }] },
      'Action must be omitted if Permissions are specified',
    ],
    [
      'permissions on a wildcard destination',
      { ...l7({ Action: 'allow', HTTP: { PathExact: '/' } }), DestinationName: '*' },
      'Permissions cannot be specified on intentions with wildcarded destinations',
    ],
    [
      'a bad permission action',
      l7({ Action: 'x', HTTP: { PathExact: '/' } }),
      "Permissions[0].Action must be set to 'allow' or 'deny'",
    ],
    ['no HTTP', l7({ Action: 'deny' }), 'Permissions[0].HTTP is required'],
    ['an empty HTTP', l7({ Action: 'deny', HTTP: {} }), 'Permissions[0].HTTP should not be empty'],
    [
      'a relative PathExact',
      l7({ Action: 'deny', HTTP: { PathExact: 'x' } }),
      `Permissions[0].HTTP.PathExact doesn't start with '/': "x"`,
    ],
    [
      'a relative PathPrefix',
      l7({ Action: 'deny', HTTP: { PathPrefix: 'x' } }),
      `Permissions[0].HTTP.PathPrefix doesn't start with '/': "x"`,
    ],
    [
      'two path matches',
      l7({ Action: 'deny', HTTP: { PathExact: '/a', PathRegex: '.*' } }),
      'Permissions[0].HTTP should only contain at most one of PathExact, PathPrefix, or PathRegex',
    ],
    [
      'a header without a name',
      l7({ Action: 'deny', HTTP: { Header: [{ Name: '', Present: true }] } }),
      'Permissions[0].HTTP.Header[0] missing required Name field',
    ],
    [
      'a header with two matches',
      l7({ Action: 'deny', HTTP: { Header: [{ Name: 'x', Exact: 'a', Prefix: 'b' }] } }),
      'Permissions[0].HTTP.Header[0] should only contain one of Present, Exact, Prefix, Suffix, or Regex',
    ],
    [
      'an unknown method',
      l7({ Action: 'deny', HTTP: { Methods: ['FETCH'] } }),
      'Permissions[0].HTTP.Methods contains an invalid method "FETCH"',
    ],
    [
      'a repeated method',
      l7({ Action: 'deny', HTTP: { Methods: ['GET', 'get'] } }),
      'Permissions[0].HTTP.Methods contains "GET" more than once',
    ],
  ])('exact: %s', (_name, input, expected) => {
    expect(problems(input, 'exact')[0]).toBe(expected);
  });
});

describe('assertValidIntention', () => {
  it("words the legacy API's failure as go-multierror does, and the exact API's as its first problem", () => {
    const input = normalizeIntention({ SourceName: 'we*', DestinationName: 'db', Action: 'x' }, 'default');
    const legacy = thrown(() => assertValidIntention(input, 'legacy'));
    expect([legacy.code, legacy.kind, legacy.message]).toEqual([
      'INTENTION_INVALID',
      'invalid',
      "2 errors occurred:\n\t* SourceName: wildcard character '*' cannot be used with partial values\n\t* Action must be set to 'allow' or 'deny'\n\n",
    ]);
    const exact = thrown(() => assertValidIntention(input, 'exact'));
    expect(exact.message).toBe("SourceName: wildcard character '*' cannot be used with partial values");
    expect(multiErrorText(['only'])).toBe('1 error occurred:\n\t* only\n\n');
  });
});

describe('storedIntention', () => {
  it('computes the precedence on save and keeps Action or Permissions, never both', () => {
    expect(
      storedIntention(
        normalizeIntention({ SourceNS: '*', SourceName: '*', DestinationName: 'db', Action: 'deny' }, 'default'),
      ),
    ).toEqual({
      Description: '',
      SourceNS: '*',
      SourceName: '*',
      DestinationNS: 'default',
      DestinationName: 'db',
      SourceType: 'consul',
      Action: 'deny',
      Precedence: 7,
    });
    const l7 = storedIntention(
      normalizeIntention(
        { ...base, Action: undefined, Permissions: [{ Action: 'deny', HTTP: { PathExact: '/' } }] },
        'default',
      ),
    );
    expect(l7).not.toHaveProperty('Action');
    expect(l7.Permissions).toHaveLength(1);
  });
});
