import { describe, expect, it } from 'vitest';
import { compileFilter } from '../../../src/core/bexpr.js';
import { AgentError } from '../../../src/core/errors.js';

const FIELDS = new Set(['Name', 'Action', 'Precedence', 'Meta', 'Tags', 'Empty']);
const MAPS = new Set(['Meta']);
const items = [
  {
    Name: 'web',
    Action: 'allow',
    Precedence: 9,
    Meta: { env: 'prod', 'app.kubernetes.io/name': 'w' },
    Tags: ['a', 'b'],
    Empty: '',
  },
  { Name: 'api', Action: 'deny', Precedence: 8, Meta: {}, Tags: [], Empty: '' },
  { Name: 'web-admin', Action: 'allow', Precedence: 5, Meta: { env: 'dev' }, Tags: ['b'], Empty: 'x' },
];
const names = (expr: string): string[] => items.filter(compileFilter(expr, FIELDS, MAPS)).map((i) => i.Name);

describe('compileFilter', () => {
  it.each([
    ['Name == web', ['web']],
    ['Name == "web"', ['web']],
    ['Name != `web`', ['api', 'web-admin']],
    ['Action == allow and Precedence == 9', ['web']],
    ['Action == deny or Name == web', ['web', 'api']],
    ['not Action == deny', ['web', 'web-admin']],
    ['not (Action == deny or Precedence == 9)', ['web-admin']],
    ['Meta.env == prod', ['web']],
    ['Meta["app.kubernetes.io/name"] == w', ['web']],
    ['Meta is empty', ['api']],
    ['Meta is not empty', ['web', 'web-admin']],
    ['env in Meta', ['web', 'web-admin']],
    ['"b" in Tags', ['web', 'web-admin']],
    ['a not in Tags', ['api', 'web-admin']],
    ['Tags contains a', ['web']],
    ['Name contains "admin"', ['web-admin']],
    ['Name not contains "admin"', ['web', 'api']],
    ['Name matches "^w.*n$"', ['web-admin']],
    ['Name not matches "^w"', ['api']],
    ['Empty is empty and Meta.missing is empty', ['web', 'api']],
  ])('%s', (expr, expected) => {
    expect(names(expr)).toEqual(expected);
  });

  it.each([
    ['Nope == x', 'Failed to create boolean expression evaluator: Selector "Nope" is not valid'],
    ['Name.deep == x', 'Failed to create boolean expression evaluator: Selector "Name.deep" is not valid'],
    ['Name ==', 'Failed to create boolean expression evaluator: no match found, expected a value at end of input'],
    ['(Name == x', 'Failed to create boolean expression evaluator: 1:1: Unmatched parentheses'],
    ['Name = x', 'Failed to create boolean expression evaluator: 1:6: unexpected character "="'],
    ['Name matches "("', 'Failed to create boolean expression evaluator: Failed to compile regular expression "("'],
    ['Name == x extra', 'Failed to create boolean expression evaluator: 1:11: unexpected "extra"'],
    ['', 'Failed to create boolean expression evaluator: 1:1: no match found, expected an expression'],
  ])('%j is refused with a 400', (expr, message) => {
    let caught: unknown;
    try {
      compileFilter(expr, FIELDS, MAPS);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(AgentError);
    expect((caught as AgentError).code).toBe('FILTER_INVALID');
    expect((caught as AgentError).kind).toBe('invalid');
    expect((caught as AgentError).message.startsWith(message)).toBe(true);
  });
});

describe('compileFilter on nested fields', () => {
  const entries = [
    { Node: { Node: 'n1', Meta: { zone: 'a' } }, Service: { Tags: ['primary'] } },
    { Node: { Node: 'n2', Meta: { zone: 'b' } }, Service: { Tags: [] } },
  ];
  const fields = new Set(['Node.Node', 'Node.Meta', 'Service.Tags']);
  const maps = new Set(['Node.Meta']);
  const nodes = (expr: string): string[] => entries.filter(compileFilter(expr, fields, maps)).map((e) => e.Node.Node);

  it('selects a field by its dotted path, and a key of a nested map', () => {
    expect(nodes('Service.Tags contains primary')).toEqual(['n1']);
    expect(nodes('Node.Meta.zone == b')).toEqual(['n2']);
    expect(nodes('Node.Meta["zone"] != b and not (Node.Node == n2)')).toEqual(['n1']);
  });

  it('refuses a path that is not declared, or a key under a field that is not a map', () => {
    for (const expr of ['Service.Nope == x', 'Node == n1', 'Service.Tags.x == y']) {
      expect(() => compileFilter(expr, fields, maps)).toThrow(AgentError);
    }
  });
});
