// Deep merge and deep freeze, the two operations config layering rests on.
import { describe, expect, it } from 'vitest';
import { deepFreeze, deepMerge, isPlainObject } from '../../../src/config/object.js';

describe('deepMerge', () => {
  it('merges objects key by key, later layers winning', () => {
    const merged = deepMerge({ a: 1, n: { x: 1, y: 1 } }, { n: { y: 2, z: 2 } }, { a: 3 });
    expect({ ...merged, n: { ...(merged['n'] as object) } }).toEqual({ a: 3, n: { x: 1, y: 2, z: 2 } });
  });

  it('replaces arrays and scalars instead of merging them', () => {
    const merged = deepMerge({ a: [1, 2], b: { x: 1 }, c: 's' }, { a: [3], b: 'flat', c: { now: 'object' } });
    expect(merged['a']).toEqual([3]);
    expect(merged['b']).toBe('flat');
    expect(merged['c']).toEqual({ now: 'object' });
  });

  it('does not modify its inputs', () => {
    const a = { n: { x: 1 } };
    deepMerge(a, { n: { x: 2 } });
    expect(a).toEqual({ n: { x: 1 } });
  });

  it('keeps a "__proto__" key as data', () => {
    const merged = deepMerge(JSON.parse('{"__proto__": {"polluted": true}}') as Record<string, unknown>);
    expect(Object.keys(merged)).toEqual(['__proto__']);
    expect((merged as { polluted?: unknown }).polluted).toBeUndefined();
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
  });
});

describe('deepFreeze', () => {
  it('freezes nested objects and arrays', () => {
    const value = deepFreeze({ a: { b: [{ c: 1 }] } });
    expect(Object.isFrozen(value.a)).toBe(true);
    expect(Object.isFrozen(value.a.b)).toBe(true);
    expect(Object.isFrozen(value.a.b[0])).toBe(true);
  });
});

describe('isPlainObject', () => {
  it.each([
    [{}, true],
    [Object.create(null), true],
    [[], false],
    [null, false],
    ['s', false],
    [new Date(0), false],
  ])('%j -> %s', (value, expected) => {
    expect(isPlainObject(value)).toBe(expected);
  });
});
