// The size-limit checks every domain module shares (docs/decisions.md#size-limits): UTF-8 bytes
// counted as Go's len() counts them, a 413 naming the field and its limit.
import { describe, expect, it } from 'vitest';
import {
  cutUtf8,
  limitBytes,
  limitEntries,
  limitJson,
  limitStringMap,
  limitStrings,
} from '../../../src/core/size-limits.js';
import { answerOfError, agentErrorOf } from '../../support/errors.js';

const refusal = (fn: () => void): [string, [number, string]] => {
  const err = agentErrorOf(fn);
  return [err.code, answerOfError(err)];
};

describe('limitBytes', () => {
  it('counts UTF-8 bytes: at the limit passes, one byte over is a 413 naming the field', () => {
    expect(() => limitBytes('Description', 'é'.repeat(256), 512)).not.toThrow();
    expect(() => limitBytes('Description', undefined, 0)).not.toThrow();
    expect(refusal(() => limitBytes('Description', `x${'é'.repeat(256)}`, 512))).toEqual([
      'LIMIT_BYTES',
      [413, 'Description is 513 bytes, over the limit of 512 bytes'],
    ]);
    // Three bytes a character: a string short in characters can still be over.
    expect(refusal(() => limitBytes('Name', '€'.repeat(100), 256))[1]).toEqual([
      413,
      'Name is 300 bytes, over the limit of 256 bytes',
    ]);
  });
});

describe('limitEntries, limitStrings, limitStringMap', () => {
  it('refuses one entry over, then an entry over its own limit', () => {
    expect(() => limitEntries('Tags', 64, 64)).not.toThrow();
    expect(refusal(() => limitEntries('Tags', 65, 64))).toEqual([
      'LIMIT_ENTRIES',
      [413, 'Tags has 65 entries, over the limit of 64'],
    ]);
    expect(() => limitStrings('Tags', ['a'.repeat(4), 'b'], 2, 4)).not.toThrow();
    expect(refusal(() => limitStrings('Tags', ['a', 'b'.repeat(5)], 2, 4))[1]).toEqual([
      413,
      'Tags[1] is 5 bytes, over the limit of 4 bytes',
    ]);
    const limits = { pairs: 2, key: 3, value: 4 };
    expect(() => limitStringMap('Meta', { abc: 'vvvv', d: '' }, limits)).not.toThrow();
    expect(refusal(() => limitStringMap('Meta', { a: '', b: '', c: '' }, limits))[1][1]).toBe(
      'Meta has 3 entries, over the limit of 2',
    );
    expect(refusal(() => limitStringMap('Meta', { abcd: '' }, limits))[1][1]).toBe(
      'Meta key is 4 bytes, over the limit of 3 bytes',
    );
    expect(refusal(() => limitStringMap('Meta', { abc: 'vvvvv' }, limits))[1][1]).toBe(
      'Meta["abc"] is 5 bytes, over the limit of 4 bytes',
    );
  });
});

describe('limitJson', () => {
  it('measures the value as JSON', () => {
    const value = { pad: 'x'.repeat(10) }; // {"pad":"xxxxxxxxxx"}: 20 bytes
    expect(() => limitJson('Proxy', value, 20)).not.toThrow();
    expect(refusal(() => limitJson('Proxy', value, 19))).toEqual([
      'LIMIT_JSON',
      [413, 'Proxy is 20 bytes as JSON, over the limit of 19 bytes'],
    ]);
  });
});

describe('cutUtf8', () => {
  it('keeps a short text and cuts a long one at a character boundary, never over the limit', () => {
    expect(cutUtf8('abc', 3)).toBe('abc');
    expect(cutUtf8('abcd', 3)).toBe('abc');
    expect(cutUtf8('aé', 2)).toBe('a'); // é is two bytes: not split
    expect(cutUtf8('€€', 5)).toBe('€');
    expect(Buffer.byteLength(cutUtf8('€'.repeat(100), 200))).toBe(198);
  });
});
