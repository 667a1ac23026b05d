import { describe, expect, it } from 'vitest';
import { Uint64 } from '../../../src/core/go-json.js';
import { encodeJson } from '../../../src/http/json.js';

describe('encodeJson', () => {
  const value = { B: 1, A: [true, null, 'x'], C: { D: {}, E: [] } };

  it('compact: one line, caller key order, no trailing newline', () => {
    expect(encodeJson(value, false)).toBe('{"B":1,"A":[true,null,"x"],"C":{"D":{},"E":[]}}');
  });

  it('pretty: 4-space indent and one trailing newline', () => {
    expect(encodeJson(value, true)).toBe(
      '{\n    "B": 1,\n    "A": [\n        true,\n        null,\n        "x"\n    ],\n    "C": {\n        "D": {},\n        "E": []\n    }\n}\n',
    );
  });

  it('pretty scalars and empty containers end in one newline too', () => {
    expect(encodeJson(true, true)).toBe('true\n');
    expect(encodeJson([], true)).toBe('[]\n');
    expect(encodeJson([], false)).toBe('[]');
  });

  it('escapes < > & U+2028 U+2029 inside strings, as Go does', () => {
    expect(encodeJson({ K: '<a href="x">&</a>\u2028\u2029' }, false)).toBe(
      '{"K":"\\u003ca href=\\"x\\"\\u003e\\u0026\\u003c/a\\u003e\\u2028\\u2029"}',
    );
  });

  it('escapes in keys and in pretty output as well', () => {
    expect(encodeJson({ '<k>': 'a&b' }, true)).toBe('{\n    "\\u003ck\\u003e": "a\\u0026b"\n}\n');
  });

  it('output parses back to the same value', () => {
    const tricky = { s: '<>&\u2028\u2029"\\\n\t\u0000é😀', n: [1, -2.5, 0] };
    expect(JSON.parse(encodeJson(tricky, false))).toEqual(tricky);
    expect(JSON.parse(encodeJson(tricky, true))).toEqual(tricky);
  });

  it('writes a Uint64 as its exact digits, compact and pretty', () => {
    const entry = { Flags: new Uint64('18446744073709551615'), Key: 'k' };
    expect(encodeJson(entry, false)).toBe('{"Flags":18446744073709551615,"Key":"k"}');
    expect(encodeJson(entry, true)).toBe('{\n    "Flags": 18446744073709551615,\n    "Key": "k"\n}\n');
  });

  it('writes nested and repeated Uint64s', () => {
    const nested = [
      { Flags: new Uint64('9007199254740993'), Inner: { F: new Uint64('0') } },
      new Uint64('12345678901234567890'),
    ];
    expect(encodeJson(nested, false)).toBe('[{"Flags":9007199254740993,"Inner":{"F":0}},12345678901234567890]');
    expect(encodeJson(nested, true)).toBe(
      '[\n    {\n        "Flags": 9007199254740993,\n        "Inner": {\n            "F": 0\n        }\n    },\n    12345678901234567890\n]\n',
    );
  });

  it('a client string that looks like the internal mark stays a string', () => {
    // A KV key is client-chosen: PUT /v1/kv/%00u64:5 must not list as `"Key":5`.
    const out = encodeJson([{ Key: '\u0000u64:5', Flags: new Uint64('7') }], false);
    expect(out).toBe('[{"Key":"\\u0000u64:5","Flags":7}]');
    expect(JSON.parse(out)).toEqual([{ Key: '\u0000u64:5', Flags: 7 }]);
  });
});
