// HCL 1's one-line blocks (`{ policy = "read" intentions = "read" }`, commas between items) read
// as Consul reads them: the rewrite puts one item per line, and the parser's result equals that of
// the same rules written one item per line (a differential check over generated rules).
import { describe, expect, it } from 'vitest';
import { hclToObject } from '../../../src/core/hcl.js';
import { oneItemPerLine } from '../../../src/core/hcl1-items.js';

describe('oneItemPerLine', () => {
  it('breaks one-line blocks at item boundaries, and leaves strings, comments and lists alone', () => {
    expect(oneItemPerLine('service "web" { policy = "read" intentions = "read" }')).toBe(
      'service "web" {\n policy = "read" \nintentions = "read" \n}',
    );
    expect(oneItemPerLine('service "web" { policy = "read", intentions = "read" }')).toBe(
      'service "web" {\n policy = "read"\n intentions = "read" \n}',
    );
    expect(oneItemPerLine('a = "x } { , y" # b = 2, c\nd = ["p", "q"] e = 1')).toBe(
      'a = "x } { , y" # b = 2, c\nd = ["p", "q"] \ne = 1',
    );
    expect(oneItemPerLine('key "a" { policy = "read" } key "b" { policy = "write" }')).toBe(
      'key "a" {\n policy = "read" \n} \nkey "b" {\n policy = "write" \n}',
    );
  });

  it('gives up on what it does not read: heredocs, unclosed strings or braces', () => {
    expect(oneItemPerLine('a = <<EOT\nx\nEOT')).toBeUndefined();
    expect(oneItemPerLine('a = "open')).toBeUndefined();
    expect(oneItemPerLine('key "a" { policy = "read"')).toBeUndefined();
    expect(oneItemPerLine('key "a" { policy = "read" ]')).toBeUndefined();
  });
});

describe('hclToObject with HCL 1 one-line blocks', () => {
  const rules = ['key_prefix', 'service', 'node', 'session_prefix', 'agent'] as const;
  const levels = ['read', 'write', 'deny', 'list'] as const;
  /** Deterministic pseudo-random rules, so a failure names its seed. */
  function generated(seed: number): { multi: string; oneLine: string; commas: string } {
    let s = seed;
    const next = (n: number): number => ((s = (s * 1103515245 + 12345) % 2147483648), s % n);
    const blocks = Array.from({ length: 1 + next(4) }, (_, b) => {
      const items = [`policy = "${levels[next(4)]}"`, ...(next(2) === 1 ? [`intentions = "${levels[next(2)]}"`] : [])];
      return { head: `${rules[next(rules.length)]} "n-${seed}-${b}"`, items };
    });
    return {
      multi: blocks.map((b) => `${b.head} {\n${b.items.map((x) => `  ${x}`).join('\n')}\n}`).join('\n'),
      oneLine: blocks.map((b) => `${b.head} { ${b.items.join(' ')} }`).join(' '),
      commas: blocks.map((b) => `${b.head} { ${b.items.join(', ')} }`).join('\n'),
    };
  }

  it('reads generated rules written on one line, or with commas, as the same rules one item per line', async () => {
    for (let seed = 1; seed <= 40; seed++) {
      const { multi, oneLine, commas } = generated(seed);
      const expected = await hclToObject(multi);
      expect(await hclToObject(oneLine), `seed ${seed}: ${oneLine}`).toEqual(expected);
      expect(await hclToObject(commas), `seed ${seed}: ${commas}`).toEqual(expected);
    }
  });

  it('still reports a real error at its own position', async () => {
    await expect(hclToObject('key "a" {\n  policy = = "read"\n}')).rejects.toThrow(/^At 2:/);
  });
});
