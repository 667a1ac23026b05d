import { describe, expect, it } from 'vitest';
import { SortedByKey, compareKeys } from '../../../src/state/sorted-by-key.js';

const utf8Order = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

describe('compareKeys', () => {
  it('agrees with UTF-8 byte order, supplementary characters included', () => {
    const alphabet = [
      'a',
      'b',
      'A',
      '/',
      '\u00e9',
      '\u4e2d',
      '\ud7ff',
      '\ue000',
      '\uffff',
      '\u{10000}',
      '\u{1f600}',
      '',
    ];
    // Deterministic pseudo-random keys (no randomness in tests): a Lehmer generator over the alphabet.
    let seed = 7;
    const pick = (): string => alphabet[(seed = (seed * 48271) % 2147483647) % alphabet.length] as string;
    const keys = Array.from({ length: 400 }, () => pick() + pick() + pick());
    for (let i = 0; i + 1 < keys.length; i++) {
      const a = keys[i] as string;
      const b = keys[i + 1] as string;
      expect(Math.sign(compareKeys(a, b))).toBe(Math.sign(utf8Order(a, b)));
    }
  });
});

describe('SortedByKey', () => {
  const item = (key: string, v = 0): { key: string; v: number } => ({ key, v });

  it('lists by prefix and tracks inserts, replacements and removals', () => {
    const map = new Map<string, { key: string; v: number }>();
    const sorted = new SortedByKey(map);
    const put = (key: string, v = 0): void => {
      const had = map.has(key);
      const it = item(key, v);
      map.set(key, it);
      if (had) sorted.replaced(it);
      else sorted.inserted(it);
    };
    for (const k of ['b', 'a/2', 'a/1', 'c']) put(k);
    expect(sorted.withPrefix('').map((x) => x.key)).toEqual(['a/1', 'a/2', 'b', 'c']);
    put('a/0');
    put('b', 7);
    map.delete('c');
    sorted.removed('c');
    expect(sorted.withPrefix('').map((x) => [x.key, x.v])).toEqual([
      ['a/0', 0],
      ['a/1', 0],
      ['a/2', 0],
      ['b', 7],
    ]);
    expect(sorted.withPrefix('a/').map((x) => x.key)).toEqual(['a/0', 'a/1', 'a/2']);
    const seen: string[] = [];
    sorted.forEachWithPrefix('a/1', (x) => seen.push(x.key));
    expect(seen).toEqual(['a/1']);
  });

  it('stays correct past the splice limit, where it rebuilds instead', () => {
    const map = new Map<string, { key: string; v: number }>();
    const sorted = new SortedByKey(map);
    const n = 70_000;
    for (let i = 0; i < n; i++) map.set(`k${String(i).padStart(6, '0')}`, item(`k${String(i).padStart(6, '0')}`));
    expect(sorted.withPrefix('k0699').length).toBe(100);
    const extra = item('k1extra');
    map.set(extra.key, extra);
    sorted.inserted(extra);
    map.delete('k000000');
    sorted.removed('k000000');
    expect(sorted.withPrefix('k069999').map((x) => x.key)).toEqual(['k069999']);
    expect(sorted.withPrefix('k1').map((x) => x.key)).toEqual(['k1extra']);
    expect(sorted.withPrefix('').length).toBe(n);
    expect(sorted.withPrefix('k00000').map((x) => x.key)).toEqual([
      'k000001',
      'k000002',
      'k000003',
      'k000004',
      'k000005',
      'k000006',
      'k000007',
      'k000008',
      'k000009',
    ]);
  });
});
