// Locating JSON syntax errors: every error gets a line and column; valid JSON gets none.
import { describe, expect, it } from 'vitest';
import { findJsonSyntaxError } from '../../../src/config/json-error.js';

describe('findJsonSyntaxError', () => {
  it.each(['{}', '[]', ' {"a": [1, -2.5e3, true, false, null, "x\\n\\u00e9"], "b": {}}\n', '"s"', '0'])(
    'accepts %j',
    (text) => {
      expect(() => JSON.parse(text)).not.toThrow();
      expect(findJsonSyntaxError(text)).toBeUndefined();
    },
  );

  it.each([
    ['', 1, 1, 'unexpected end of input'],
    ['{"a": }', 1, 7, 'unexpected character "}"'],
    ['{"a": 1,}', 1, 9, 'expected a property name in double quotes'],
    ['{\n  "a": 1\n  "b": 2\n}', 3, 3, "expected ',' or '}' after a property value"],
    ['{"a" 1}', 1, 6, "expected ':' after a property name"],
    ['{a: 1}', 1, 2, 'expected a property name in double quotes'],
    ['[1 2]', 1, 4, "expected ',' or ']' after an array element"],
    ['{"a": "x', 1, 9, 'unterminated string'],
    ['{"a": "\\q"}', 1, 8, 'invalid escape in string'],
    ['{"a": "\t"}', 1, 8, 'control character in string'],
    ['{"a": -}', 1, 7, 'invalid number'],
    ['{"a": tru}', 1, 7, 'unexpected character "t"'],
    ['{} x', 1, 4, 'unexpected content after the JSON value'],
  ])('%j fails at %i:%i', (text, line, column, reason) => {
    expect(() => JSON.parse(text)).toThrow(SyntaxError);
    expect(findJsonSyntaxError(text)).toEqual({ line, column, reason });
  });
});
