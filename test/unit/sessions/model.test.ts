// A session as create makes it (src/sessions/model.ts): Consul's defaults, its refusals in Consul's
// words (agent/consul/session_endpoint.go), and the lock-delay input rule (FixupLockDelay).
import { describe, expect, it } from 'vitest';
import { lockDelayInput, lockDelayMs, newSession, ttlMs, type SessionInput } from '../../../src/sessions/model.js';
import { agentErrorOf } from '../../support/errors.js';

const ID = '8b4b1b2e-2a3c-4d5e-9f00-112233445566';
const DEFAULTS = { node: 'agent-1', nodeCheck: 'serfHealth' };
const make = (input: SessionInput) => newSession(input, ID, DEFAULTS);

function refusal(input: SessionInput): [string, string] {
  const err = agentErrorOf(() => make(input));
  return [err.code, err.message];
}

describe('newSession', () => {
  it("takes Consul's defaults for an empty create: this node, its serfHealth, 15s lock-delay, release", () => {
    const s = make({});
    expect(s).toEqual({
      ID,
      Name: '',
      Node: 'agent-1',
      LockDelay: 15_000_000_000,
      Behavior: 'release',
      TTL: '',
      NodeChecks: ['serfHealth'],
      ServiceChecks: null,
    });
    expect(lockDelayMs(s)).toBe(15_000);
    expect(ttlMs(s)).toBe(0);
    // Empty texts are the defaults too.
    expect(make({ Node: '', Behavior: '', TTL: '' })).toEqual(s);
  });

  it('keeps what the create names', () => {
    const s = make({
      Name: 'lock',
      Node: 'n2',
      NodeChecks: ['a'],
      ServiceChecks: [{ ID: 'web-http', Namespace: '' }],
      LockDelayMs: 5_000,
      Behavior: 'delete',
      TTL: '30s',
    });
    expect(s).toMatchObject({
      Name: 'lock',
      Node: 'n2',
      NodeChecks: ['a'],
      ServiceChecks: [{ ID: 'web-http', Namespace: '' }],
      LockDelay: 5_000_000_000,
      Behavior: 'delete',
      TTL: '30s',
    });
    expect(ttlMs(s)).toBe(30_000);
  });

  it('drops the serfHealth default when checks are named, even none, and names each check once', () => {
    expect(make({ NodeChecks: [] }).NodeChecks).toEqual([]);
    expect(make({ NodeChecks: ['a', 'serfHealth', 'a'] }).NodeChecks).toEqual(['a', 'serfHealth']);
    expect(make({ ServiceChecks: [] }).ServiceChecks).toBeNull();
  });

  it('takes a lock-delay of 0, and holds a longer one to 60s', () => {
    expect(make({ LockDelayMs: 0 }).LockDelay).toBe(0);
    expect(make({ LockDelayMs: 120_000 }).LockDelay).toBe(60_000_000_000);
  });

  it('takes a TTL of 0 as none, and TTLs at both bounds', () => {
    expect(make({ TTL: '0' }).TTL).toBe('0');
    expect(ttlMs(make({ TTL: '0' }))).toBe(0);
    expect(ttlMs(make({ TTL: '10s' }))).toBe(10_000);
    expect(ttlMs(make({ TTL: '24h' }))).toBe(86_400_000);
  });

  it("refuses a Behavior other than release or delete, in Consul's words", () => {
    expect(refusal({ Behavior: 'keep' })).toEqual(['SESSION_INVALID', "Invalid Behavior setting 'keep'"]);
    expect(refusal({ Behavior: 'Release' })).toEqual(['SESSION_INVALID', "Invalid Behavior setting 'Release'"]);
  });

  it("refuses a TTL that is no duration, in Consul's words", () => {
    expect(refusal({ TTL: 'abc' })).toEqual([
      'SESSION_INVALID',
      `Session TTL 'abc' invalid: time: invalid duration "abc"`,
    ]);
  });

  it("refuses a TTL outside [10s, 24h], in Consul's words (the TTL in nanoseconds)", () => {
    const bounds = 'must be between [10s=24h0m0s]';
    expect(refusal({ TTL: '9s' })).toEqual(['SESSION_INVALID', `Invalid Session TTL '9000000000', ${bounds}`]);
    expect(refusal({ TTL: '24h0m1s' })).toEqual(['SESSION_INVALID', `Invalid Session TTL '86401000000000', ${bounds}`]);
    expect(refusal({ TTL: '-15s' })).toEqual(['SESSION_INVALID', `Invalid Session TTL '-15000000000', ${bounds}`]);
  });

  it('refuses a negative lock-delay', () => {
    expect(refusal({ LockDelayMs: -1 })[0]).toBe('SESSION_INVALID');
  });
});

describe('lockDelayInput', () => {
  it('takes a number as nanoseconds, and one below 1000 as seconds', () => {
    expect(lockDelayInput(15_000_000_000)).toBe(15_000);
    expect(lockDelayInput(1000)).toBe(0.001);
    expect(lockDelayInput(15)).toBe(15_000);
    expect(lockDelayInput(999)).toBe(999_000);
    expect(lockDelayInput(0)).toBe(0);
  });

  it('takes a duration text, and one below 1000ns as that many seconds', () => {
    expect(lockDelayInput('15s')).toBe(15_000);
    expect(lockDelayInput('1m')).toBe(60_000);
    expect(lockDelayInput('250ms')).toBe(250);
    expect(lockDelayInput('5ns')).toBe(5_000);
    expect(lockDelayInput('0')).toBe(0);
  });

  it('refuses a text that is no Go duration (a bare number has no unit)', () => {
    expect(lockDelayInput('5')).toBeUndefined();
    expect(lockDelayInput('15 s')).toBeUndefined();
    expect(lockDelayInput('')).toBeUndefined();
    expect(lockDelayInput(Number.NaN)).toBeUndefined();
  });
});
