// Selectors that pass through a list of objects (`Checks.Status`), and keys missing from a map, as the
// go-bexpr Consul builds with (v0.1.2) evaluates them: a list is searched for any element that matches.
import { describe, expect, it } from 'vitest';
import { compileFilter } from '../../../src/core/bexpr.js';

const FIELDS = new Set(['Name', 'Checks', 'Checks.Status', 'Checks.CheckID', 'Checks.ServiceTags', 'Meta']);
const MAPS = new Set(['Meta']);
const items = [
  {
    Name: 'all-passing',
    Checks: [
      { CheckID: 'serfHealth', Status: 'passing', ServiceTags: [] },
      { CheckID: 'http', Status: 'passing', ServiceTags: ['v1'] },
    ],
    Meta: { env: 'prod' },
  },
  {
    Name: 'one-critical',
    Checks: [
      { CheckID: 'serfHealth', Status: 'passing', ServiceTags: [] },
      { CheckID: 'http', Status: 'critical', ServiceTags: ['v2'] },
    ],
    Meta: {},
  },
  { Name: 'no-checks', Checks: [], Meta: { env: '' } },
];
const names = (expr: string): string[] => items.filter(compileFilter(expr, FIELDS, MAPS)).map((i) => i.Name);

describe('compileFilter over lists of objects', () => {
  it.each([
    // Any element: an empty list matches nothing, whatever the operator.
    ['Checks.Status == passing', ['all-passing', 'one-critical']],
    ['Checks.Status == critical', ['one-critical']],
    ['Checks.Status != passing', ['one-critical']],
    ['not Checks.Status == critical', ['all-passing', 'no-checks']],
    ['not Checks.Status != passing', ['all-passing', 'no-checks']],
    ['"passing" in Checks.Status', ['all-passing', 'one-critical']],
    ['Checks.Status contains crit', ['one-critical']],
    ['Checks.Status not contains pass', ['one-critical']],
    ['Checks.Status matches "^crit"', ['one-critical']],
    ['Checks.Status is empty', []],
    ['Checks.ServiceTags contains v2', ['one-critical']],
    ['v1 in Checks.ServiceTags', ['all-passing']],
    ['Checks.ServiceTags is empty', ['all-passing', 'one-critical']],
    ['Checks.CheckID == http and Checks.Status == critical', ['one-critical']],
    ['Checks is empty', ['no-checks']],
    ['Checks is not empty', ['all-passing', 'one-critical']],
  ])('%s', (expr, expected) => {
    expect(names(expr)).toEqual(expected);
  });

  it.each([
    // A key absent from a map: false for ==, in, contains, is not empty; true for the rest, matches included.
    ['Meta.env == ""', ['no-checks']],
    ['Meta.env != prod', ['one-critical', 'no-checks']],
    ['Meta.env is empty', ['one-critical', 'no-checks']],
    ['Meta.env is not empty', ['all-passing']],
    ['Meta.env contains ""', ['all-passing', 'no-checks']],
    ['Meta.env not contains "x"', ['all-passing', 'one-critical', 'no-checks']],
    ['Meta.env matches "^p"', ['all-passing', 'one-critical']],
    ['Meta.env not matches "^p"', ['one-critical', 'no-checks']],
  ])('missing map key: %s', (expr, expected) => {
    expect(names(expr)).toEqual(expected);
  });

  it('a field of the list elements must be declared', () => {
    expect(() => compileFilter('Checks.Output == x', FIELDS, MAPS)).toThrow(
      expect.objectContaining({ code: 'FILTER_INVALID' }),
    );
  });
});
