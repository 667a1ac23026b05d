import { describe, expect, it } from 'vitest';
import { encodeGoJson, escapeGoHtml, Uint64 } from '../../../src/core/go-json.js';

describe('encodeGoJson', () => {
  it('is compact without an indent and indents by the given width with one', () => {
    expect(encodeGoJson({ A: [1] })).toBe('{"A":[1]}');
    expect(encodeGoJson({ A: [1] }, 4)).toBe('{\n    "A": [\n        1\n    ]\n}');
  });

  it("escapes < > & U+2028 U+2029 as Go's encoder does, and writes a Uint64 exactly", () => {
    expect(encodeGoJson({ Reason: 'a => b & <c>\u2028\u2029', F: new Uint64('18446744073709551615') })).toBe(
      '{"Reason":"a =\\u003e b \\u0026 \\u003cc\\u003e\\u2028\\u2029","F":18446744073709551615}',
    );
  });
});

describe('escapeGoHtml', () => {
  it('escapes a JSON string as Go does and leaves clean text as it is', () => {
    expect(escapeGoHtml(JSON.stringify('/a<b>&'))).toBe('"/a\\u003cb\\u003e\\u0026"');
    const clean = JSON.stringify('plain "quoted"');
    expect(escapeGoHtml(clean)).toBe(clean);
  });
});
