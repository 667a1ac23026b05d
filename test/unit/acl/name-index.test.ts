import { describe, expect, it } from 'vitest';
import { NameIndex, NONE } from '../../../src/acl/rules/name-index.js';

interface Rule {
  name: string;
  prefix: boolean;
  value: number;
}

/** The definition, by brute force: exact for the full name, else the longest prefix it starts with. */
function reference(rules: readonly Rule[], name: string): number {
  const exact = rules.find((r) => !r.prefix && r.name === name);
  if (exact !== undefined) return exact.value;
  let best: Rule | undefined;
  for (const r of rules)
    if (r.prefix && name.startsWith(r.name) && (best === undefined || r.name.length > best.name.length)) best = r;
  return best?.value ?? NONE;
}

function build(rules: readonly Rule[]): NameIndex {
  const index = new NameIndex();
  for (const r of rules) index.set(r.name, r.prefix, r.value);
  return index;
}

describe('NameIndex', () => {
  const rules: Rule[] = [
    { name: 'abc', prefix: false, value: 1 },
    { name: 'abd', prefix: true, value: 2 },
    { name: 'ab', prefix: true, value: 3 },
    { name: '', prefix: true, value: 4 },
    { name: 'abcdef', prefix: true, value: 5 },
    { name: 'abc', prefix: true, value: 6 },
    { name: 'x', prefix: false, value: 7 },
  ];

  it.each([
    ['abc', 1], // exact beats the prefix rule of the same name
    ['abcd', 6],
    ['abcdef', 5],
    ['abcdefg', 5],
    ['abcde', 6],
    ['abd', 2],
    ['abdz', 2],
    ['ab', 3],
    ['abx', 3],
    ['a', 4],
    ['', 4],
    ['x', 7],
    ['xy', 4],
    ['zzz', 4],
  ])('lookup(%j) = %d, whatever the insertion order', (name, expected) => {
    expect(build(rules).lookup(name)).toBe(expected);
    expect(build([...rules].reverse()).lookup(name)).toBe(expected);
  });

  it('returns NONE when nothing matches, and an edge that only partly matches is no match', () => {
    const index = build([{ name: 'service-a', prefix: true, value: 1 }]);
    expect(index.lookup('service-')).toBe(NONE);
    expect(index.lookup('service-b')).toBe(NONE);
    expect(index.lookup('')).toBe(NONE);
    expect(new NameIndex().lookup('x')).toBe(NONE);
  });

  it('agrees with the brute-force definition on generated rule sets', () => {
    // A fixed-seed generator over a 3-letter alphabet makes many shared prefixes and edge splits.
    let seed = 42;
    const next = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const word = (): string => Array.from({ length: next(6) }, () => 'abc'[next(3)]).join('');
    for (let round = 0; round < 50; round++) {
      const rules: Rule[] = [];
      const seen = new Set<string>();
      for (let i = 0; i < 20; i++) {
        const r = { name: word(), prefix: next(2) === 0, value: i };
        const id = `${r.prefix}:${r.name}`;
        if (!seen.has(id)) rules.push(r);
        seen.add(id);
      }
      const index = build(rules);
      for (let i = 0; i < 40; i++) {
        const name = word() + word();
        expect([round, name, index.lookup(name)]).toEqual([round, name, reference(rules, name)]);
      }
    }
  });
});
