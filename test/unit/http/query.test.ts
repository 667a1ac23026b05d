import { describe, expect, it } from 'vitest';
import { EMPTY_QUERY, Query } from '../../../src/http/query.js';

describe('Query', () => {
  it('has() is true for a key with an empty value, with or without =', () => {
    const q = new Query('pretty&recurse=&keys=x');
    expect(q.has('pretty')).toBe(true);
    expect(q.has('recurse')).toBe(true);
    expect(q.has('keys')).toBe(true);
    expect(q.has('raw')).toBe(false);
    expect(q.get('pretty')).toBe('');
    expect(q.get('recurse')).toBe('');
    expect(q.get('raw')).toBeUndefined();
  });

  it('the empty query has nothing', () => {
    expect(EMPTY_QUERY.has('pretty')).toBe(false);
    expect(EMPTY_QUERY.get('pretty')).toBeUndefined();
    expect(EMPTY_QUERY.encode()).toBe('');
    expect(new Query('').has('')).toBe(false);
  });

  it('repeated keys: the first value wins', () => {
    const q = new Query('index=5&index=7');
    expect(q.get('index')).toBe('5');
  });

  it('decodes + as space and percent escapes', () => {
    const q = new Query('filter=a+b%20c&k%65y=%3D%26');
    expect(q.get('filter')).toBe('a b c');
    expect(q.get('key')).toBe('=&');
  });

  it('keys are case-sensitive', () => {
    expect(new Query('Pretty').has('pretty')).toBe(false);
  });

  describe('encode() is Go url.Values.Encode', () => {
    it.each([
      ['cas=1&acquire=abc', 'acquire=abc&cas=1'],
      ['release=x&cas=0&acquire=y', 'acquire=y&cas=0&release=x'],
      ['b=2&a=1&b=1', 'a=1&b=2&b=1'], // sorted keys; values keep their order
      ['recurse&cas=5', 'cas=5&recurse='],
      ['a=x+y', 'a=x+y'], // space is written as +
      ['a=%21%27%28%29%2A', 'a=%21%27%28%29%2A'], // !'()* escaped, unlike encodeURIComponent
      ['a=-_.~', 'a=-_.~'],
      ['a=%2F%3A%40%3F%26%3D%2B', 'a=%2F%3A%40%3F%26%3D%2B'],
      ['a=%C3%A9', 'a=%C3%A9'],
      ['k%20x=1', 'k+x=1'],
    ])('%j → %j', (raw, encoded) => {
      expect(new Query(raw).encode()).toBe(encoded);
    });
  });
});
