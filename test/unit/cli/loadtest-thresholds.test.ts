// -threshold: what each condition reads from a run, and the one line that refuses a bad one.
import { describe, expect, it } from 'vitest';
import { thresholdText } from '../../../src/cli/loadtest/result.js';
import { judge, parseThreshold, type RunNumbers } from '../../../src/cli/loadtest/thresholds.js';

const run: RunNumbers = {
  latencyUs: { p50: 1200, p90: 3000, p99: 6000, p999: 9000, max: 12_000, mean: 1500 },
  requests: 1000,
  errors: 2,
  dropped: 1000,
  achievedRps: 900,
  askedRps: 2000,
};

describe('thresholds', () => {
  it('reads latencies in their unit, errors and dropped as counts or shares, and rate absolutely or of what was asked', () => {
    const verdicts = [
      'p99<5ms',
      'p50<=1200us',
      'max<1s',
      'errors<0.1%',
      'errors<3',
      'dropped<50%',
      'rate>=0.95*asked',
      'rate>=800/s',
    ].map((t) => judge(parseThreshold(t), run));
    // Each value in the threshold's own unit, and the unit said.
    expect(verdicts.map((v) => [v.threshold, v.passed, v.actual, v.unit])).toEqual([
      ['p99<5ms', false, 6, 'ms'],
      ['p50<=1200us', true, 1200, 'us'],
      ['max<1s', true, 0.012, 's'],
      ['errors<0.1%', false, 0.2, '%'],
      ['errors<3', true, 2, ''],
      ['dropped<50%', false, 50, '%'], // of every call due: 1,000 of 2,000
      ['rate>=0.95*asked', false, 0.45, 'x asked'],
      ['rate>=800/s', true, 900, '/s'],
    ]);
    expect(verdicts.map(thresholdText)).toEqual([
      'FAIL p99<5ms (was 6 ms)',
      'pass p50<=1200us (was 1,200 us)',
      'pass max<1s (was 0.012 s)',
      'FAIL errors<0.1% (was 0.2%)',
      'pass errors<3 (was 2)',
      'FAIL dropped<50% (was 50%)',
      'FAIL rate>=0.95*asked (was 0.45 x asked)',
      'pass rate>=800/s (was 900/s)',
    ]);
  });

  it('a latency under a millisecond keeps its unit: p50<1us was 844 us, not 0.844', () => {
    const v = judge(parseThreshold('p50<1us'), { ...run, latencyUs: { ...run.latencyUs, p50: 844 } });
    expect(thresholdText(v)).toBe('FAIL p50<1us (was 844 us)');
  });

  it('a closed loop asks no rate: a share of it holds', () => {
    expect(judge(parseThreshold('rate>=0.95*asked'), { ...run, askedRps: null })).toEqual({
      threshold: 'rate>=0.95*asked',
      passed: true,
      actual: null,
      unit: 'x asked',
    });
  });

  it('refuses what it cannot read, in one line', () => {
    expect(() => parseThreshold('p99<5')).toThrow(
      'invalid value "p99<5" for flag -threshold: a latency needs a unit: us, ms or s',
    );
    expect(() => parseThreshold('speed>1')).toThrow('one of p50, p90, p99, p99.9, max, mean, errors, dropped, rate');
    expect(() => parseThreshold('p99 about 5ms')).toThrow(
      "expected such as 'p99<5ms', 'errors<0.1%' or 'rate>=0.95*asked'",
    );
    expect(() => parseThreshold('p99<5')).toThrow(expect.objectContaining({ code: 'CLI_LOADTEST_FLAG' }));
  });
});
