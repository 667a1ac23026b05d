import { describe, expect, it } from 'vitest';
import { durationError, formatDuration, parseDuration } from '../../../src/core/duration.js';

describe('parseDuration', () => {
  it.each([
    ['300ms', 300],
    ['1h30m', 5_400_000],
    ['1.5s', 1500],
    ['-2m', -120_000],
    ['+5s', 5000],
    ['0', 0],
    ['-0', 0],
    ['0s', 0],
    ['10s', 10_000],
    ['5m', 300_000],
    ['2h45m30.5s', 9_930_500],
    ['1m1ms', 60_001],
    ['.5s', 500],
    ['1.s', 1000],
    ['1h0m0s', 3_600_000],
  ])('parses %j as %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each([
    ['1ns', 1e-6],
    ['1us', 1e-3],
    ['1µs', 1e-3], // U+00B5 micro sign
    ['1μs', 1e-3], // U+03BC Greek mu
    ['1500µs', 1.5],
  ])('parses the sub-millisecond %j as a fraction of a millisecond', (text, ms) => {
    expect(parseDuration(text)).toBeCloseTo(ms, 12);
  });

  it.each([
    '',
    '10',
    '00',
    '5 s',
    ' 5s',
    '5s ',
    '1d',
    's',
    '-',
    '+',
    '.',
    '.s',
    '1.5',
    'ms',
    '1h 30m',
    '1S',
    '1sm',
    'abc',
    '1e3s',
    '--1s',
  ])('rejects %j', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });

  it('does not keep state between calls (a failed parse leaves no residue)', () => {
    expect(parseDuration('1h5')).toBeUndefined();
    expect(parseDuration('5s')).toBe(5000);
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [1500, '1.5s'],
    [1000, '1s'],
    [500, '500ms'],
    [1.5, '1.5ms'],
    [90_000, '1m30s'],
    [60_000, '1m0s'],
    [3_600_000, '1h0m0s'],
    [72 * 3_600_000, '72h0m0s'],
    [5_400_500, '1h30m0.5s'],
    [-120_000, '-2m0s'],
    [-250, '-250ms'],
    [0.5, '500µs'],
    [0.0015, '1.5µs'],
    [1e-6, '1ns'],
    [0.0001, '100ns'],
  ])('formats %d ms as %j', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it.each(['300ms', '1h30m0s', '1m30s', '72h0m0s', '2.5s', '-2m0s', '500µs'])('round-trips %j', (text) => {
    const ms = parseDuration(text);
    expect(ms).toBeDefined();
    expect(formatDuration(ms as number)).toBe(text);
  });
});

describe('durationError', () => {
  it.each([
    ['15', 'time: missing unit in duration "15"'],
    ['5x', 'time: unknown unit "x" in duration "5x"'],
    ['1h5', 'time: missing unit in duration "1h5"'],
    ['soon', 'time: invalid duration "soon"'],
    ['', 'time: invalid duration ""'],
    ['-', 'time: invalid duration "-"'],
  ])("says what Go's ParseDuration says of %j", (text, said) => {
    expect(durationError(text)).toBe(said);
  });
});
