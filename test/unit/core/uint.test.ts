import { describe, expect, it } from 'vitest';
import { AgentError } from '../../../src/core/errors.js';
import { parseUint64 } from '../../../src/core/uint.js';

function failure(text: string): AgentError {
  try {
    parseUint64(text, 'KV_BAD_FLAGS');
  } catch (err) {
    expect(err).toBeInstanceOf(AgentError);
    return err as AgentError;
  }
  throw new Error(`parseUint64(${JSON.stringify(text)}) did not throw`);
}

describe('parseUint64', () => {
  it.each([
    ['0', 0n],
    ['42', 42n],
    ['007', 7n],
    ['9007199254740993', 9007199254740993n],
    ['18446744073709551615', 18446744073709551615n],
  ])('parses %j', (text, value) => {
    expect(parseUint64(text, 'KV_BAD_CAS')).toBe(value);
  });

  it('reports a value over 2^64-1 as out of range, in Go words', () => {
    const err = failure('18446744073709551616');
    expect(err.message).toBe('strconv.ParseUint: parsing "18446744073709551616": value out of range');
    expect(err.kind).toBe('invalid');
    expect(err.code).toBe('KV_BAD_FLAGS');
  });

  it.each(['abc', '-1', '', '+1', '1.5', ' 1', '1 ', '0x10', '1e3', '1_000'])(
    'reports %j as invalid syntax',
    (text) => {
      const err = failure(text);
      expect(err.message).toBe(`strconv.ParseUint: parsing ${JSON.stringify(text)}: invalid syntax`);
      expect(err.kind).toBe('invalid');
      expect(err.code).toBe('KV_BAD_FLAGS');
    },
  );

  it('quotes the input as Go does', () => {
    expect(failure('a"b').message).toBe('strconv.ParseUint: parsing "a\\"b": invalid syntax');
  });
});
