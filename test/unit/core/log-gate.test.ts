// The once-per-cause log gate (src/core/log-gate.ts) on a fake clock: the first failure of a cause
// at its level, repeats at debug, one count line when the cause clears, changes or goes quiet.
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/core/clock.js';
import { agentError } from '../../../src/core/errors.js';
import { causeOf, LogGate, repeatedText } from '../../../src/core/log-gate.js';
import { recordingLogger, type LogEntry } from '../../support/recording-logger.js';

const above = (entries: readonly LogEntry[]): [string, string | undefined][] =>
  entries.filter((e) => e.level !== 'debug').map((e) => [e.level, e.msg]);

describe('LogGate', () => {
  it('logs the first failure of a cause, counts the repeats and logs the count once it clears', () => {
    const clock = new FakeClock(1_000);
    const log = recordingLogger();
    const gate = new LogGate({ log, clock });
    expect(gate.fail('CA_NO_SERVER', 'error', { path: '/v1/leaf/a' }, 'request failed')).toBe(true);
    for (let i = 0; i < 1_132; i++) {
      clock.advance(265);
      expect(gate.fail('CA_NO_SERVER', 'error', { path: '/v1/leaf/b' }, 'request failed')).toBe(false);
    }
    expect(gate.failing).toBe(true);
    expect(above(log.entries)).toEqual([['error', 'request failed']]);
    // Each repeat is still there for a debug log.
    expect(log.entries.filter((e) => e.level === 'debug')).toHaveLength(1_132);
    expect(log.entries.at(-1)).toMatchObject({ level: 'debug', obj: { path: '/v1/leaf/b', repeat: 1_132 } });

    gate.clear();
    expect(gate.failing).toBe(false);
    expect(log.entries.at(-1)).toEqual({
      level: 'info',
      obj: { path: '/v1/leaf/a', repeated: 1_132 },
      msg: 'request failed (repeated 1,132 times over 5m0s)',
    });
    // A new run after the end is logged again.
    expect(gate.fail('CA_NO_SERVER', 'error', {}, 'request failed')).toBe(true);
  });

  it('a failure that did not repeat ends without a count line', () => {
    const log = recordingLogger();
    const gate = new LogGate({ log, clock: new FakeClock() });
    gate.fail('x', 'warn', {}, 'it failed');
    gate.clear('x');
    gate.clear();
    expect(above(log.entries)).toEqual([['warn', 'it failed']]);
  });

  it('keeps a run per cause; clearing one leaves the others', () => {
    const clock = new FakeClock();
    const log = recordingLogger();
    const gate = new LogGate({ log, clock });
    for (let i = 0; i < 3; i++) {
      gate.fail('A', 'error', {}, 'a failed');
      gate.fail('B', 'warn', {}, 'b failed');
      clock.advance(1_000);
    }
    expect(above(log.entries)).toEqual([
      ['error', 'a failed'],
      ['warn', 'b failed'],
    ]);
    gate.clear('A');
    expect(log.entries.at(-1)?.msg).toBe('a failed (repeated 2 times over 2s)');
    gate.fail('B', 'warn', {}, 'b failed');
    gate.clear();
    expect(log.entries.at(-1)?.msg).toBe('b failed (repeated 3 times over 3s)');
  });

  it('a cause logged elsewhere is gated at debug, its count too', () => {
    const clock = new FakeClock();
    const log = recordingLogger();
    const gate = new LogGate({ log, clock });
    gate.fail('STATE_NO_LEADER', 'debug', {}, 'reading failed');
    clock.advance(500);
    gate.fail('STATE_NO_LEADER', 'debug', {}, 'reading failed');
    gate.clear();
    expect(log.entries.map((e) => [e.level, e.msg])).toEqual([
      ['debug', 'reading failed'],
      ['debug', 'reading failed'],
      ['debug', 'reading failed (repeated once over 500ms)'],
    ]);
  });

  it('with quietMs, a run that stops recurring ends by itself, on the clock', () => {
    const clock = new FakeClock();
    const log = recordingLogger();
    const gate = new LogGate({ log, clock, quietMs: 30_000 });
    gate.fail('A', 'error', {}, 'a failed');
    clock.advance(20_000);
    gate.fail('A', 'error', {}, 'a failed');
    gate.fail('B', 'error', {}, 'b failed');
    clock.advance(29_999);
    expect(above(log.entries)).toEqual([
      ['error', 'a failed'],
      ['error', 'b failed'],
    ]);
    clock.advance(1);
    expect(above(log.entries).slice(2)).toEqual([
      ['info', 'a failed (repeated once over 20s)'],
      // B did not repeat: no count line, but its run is over.
    ]);
    expect(gate.failing).toBe(false);
    expect(clock.pendingTimers).toBe(0);
    gate.fail('A', 'error', {}, 'a failed');
    expect(above(log.entries).at(-1)).toEqual(['error', 'a failed']);
    gate.close();
    expect(clock.pendingTimers).toBe(0);
  });

  it('holds at most maxCauses runs: the oldest ends (with its count) when one more starts', () => {
    const log = recordingLogger();
    const gate = new LogGate({ log, clock: new FakeClock(), maxCauses: 2 });
    for (const cause of ['A', 'A', 'B', 'C']) gate.fail(cause, 'warn', {}, `${cause} failed`);
    expect(above(log.entries)).toEqual([
      ['warn', 'A failed'],
      ['warn', 'B failed'],
      ['info', 'A failed (repeated once over 0s)'],
      ['warn', 'C failed'],
    ]);
  });
});

describe('causeOf and repeatedText', () => {
  it("names an AgentError by its code, another error by its class and code, never by its message's text", () => {
    expect(causeOf(agentError('KV_VALUE_UNREADABLE', { key: 'secret/key' }))).toBe('KV_VALUE_UNREADABLE');
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:2379'), { code: 'ECONNREFUSED' });
    expect(causeOf(refused)).toBe('Error:ECONNREFUSED');
    expect(causeOf(new TypeError('token abc'))).toBe('TypeError');
    expect(causeOf('text')).toBe('string');
  });

  it('writes the count with separators and the span as Go prints a duration, to the second past one', () => {
    expect(repeatedText(1_132, 300_400)).toBe('repeated 1,132 times over 5m0s');
    expect(repeatedText(1, 250)).toBe('repeated once over 250ms');
    expect(repeatedText(2, 0)).toBe('repeated 2 times over 0s');
  });
});
