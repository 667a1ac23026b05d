import { describe, expect, it } from 'vitest';
import { comparePrecedence, intentionPrecedence } from '../../../../src/connect/intentions/precedence.js';

describe('intentionPrecedence', () => {
  // Every row of the table (docs/decisions.md#intention-precedence).
  it.each([
    ['web', 'ns1', 'db', 'ns1', 9],
    ['*', 'ns1', 'db', 'ns1', 8],
    ['*', '*', 'db', 'ns1', 7],
    ['web', 'ns1', '*', 'ns1', 6],
    ['*', 'ns1', '*', 'ns1', 5],
    ['*', '*', '*', 'ns1', 4],
    ['web', 'ns1', '*', '*', 3],
    ['*', 'ns1', '*', '*', 2],
    ['*', '*', '*', '*', 1],
  ])('%s in %s => %s in %s is %i', (srcName, srcNs, dstName, dstNs, expected) => {
    expect(intentionPrecedence(srcNs, srcName, dstNs, dstName)).toBe(expected);
  });
});

describe('comparePrecedence', () => {
  it('sorts by precedence, then by the source/destination tuple', () => {
    const x = (
      Precedence: number,
      SourceNS: string,
      SourceName: string,
      DestinationNS = 'default',
      DestinationName = 'db',
    ) => ({
      Precedence,
      SourceNS,
      SourceName,
      DestinationNS,
      DestinationName,
    });
    const list = [
      x(8, 'default', '*'),
      x(9, 'default', 'web'),
      x(9, 'default', 'api'),
      x(9, 'a', 'zz'),
      x(1, '*', '*', '*', '*'),
    ];
    expect(list.sort(comparePrecedence).map((i) => `${i.Precedence}:${i.SourceNS}/${i.SourceName}`)).toEqual([
      '9:a/zz',
      '9:default/api',
      '9:default/web',
      '8:default/*',
      '1:*/*',
    ]);
  });
});
