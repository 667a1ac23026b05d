// The body of PUT /v1/session/create (src/http/handlers/session-body.ts) read as Consul's handler
// reads it: field names in any case (python-consul sends them lower-case), LockDelay as
// nanoseconds, seconds or a duration text, Checks naming the node checks (even none), and Go's
// words for a body its decoder refuses.
import { describe, expect, it } from 'vitest';
import { decodeSessionCreate } from '../../../src/http/handlers/session-body.js';
import { agentErrorOf } from '../../support/errors.js';

const body = (value: unknown): Buffer => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));

function decodeError(value: unknown): [string, string] {
  const err = agentErrorOf(() => decodeSessionCreate(body(value)));
  return [err.code, err.message];
}

/** What a decode left undefined is absent from the input. */
const defined = (input: object): Record<string, unknown> =>
  Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));

describe('decodeSessionCreate', () => {
  it('takes every default from an empty body, null or {}', () => {
    expect(decodeSessionCreate(undefined)).toEqual({});
    expect(decodeSessionCreate(Buffer.alloc(0))).toEqual({});
    expect(decodeSessionCreate(body(' \n'))).toEqual({});
    expect(decodeSessionCreate(body('null'))).toEqual({});
    expect(defined(decodeSessionCreate(body({})))).toEqual({});
  });

  it("reads Consul's field names", () => {
    const input = decodeSessionCreate(
      body({
        Name: 'lock',
        Node: 'n1',
        NodeChecks: ['serfHealth', 'disk'],
        ServiceChecks: [{ ID: 'web-http', Namespace: 'default' }],
        LockDelay: '10s',
        Behavior: 'delete',
        TTL: '30s',
      }),
    );
    expect(input).toEqual({
      Name: 'lock',
      Node: 'n1',
      NodeChecks: ['serfHealth', 'disk'],
      ServiceChecks: [{ ID: 'web-http', Namespace: 'default' }],
      LockDelayMs: 10_000,
      Behavior: 'delete',
      TTL: '30s',
    });
  });

  it('reads the lower-case names python-consul sends, lockdelay in whole seconds', () => {
    const input = decodeSessionCreate(
      body({ name: 'svc-lock', node: 'n1', checks: ['serfHealth'], lockdelay: 15, behavior: 'release', ttl: '20s' }),
    );
    expect(input).toEqual({
      Name: 'svc-lock',
      Node: 'n1',
      NodeChecks: ['serfHealth'],
      ServiceChecks: undefined,
      LockDelayMs: 15_000,
      Behavior: 'release',
      TTL: '20s',
    });
    expect(decodeSessionCreate(body({ sErViCeChEcKs: [{ id: 'c', NAMESPACE: '' }] })).ServiceChecks).toEqual([
      { ID: 'c', Namespace: '' },
    ]);
  });

  it('takes Checks and NodeChecks together, and either one empty as naming none', () => {
    expect(decodeSessionCreate(body({ Checks: [] })).NodeChecks).toEqual([]);
    expect(decodeSessionCreate(body({ NodeChecks: [] })).NodeChecks).toEqual([]);
    expect(decodeSessionCreate(body({ Checks: null })).NodeChecks).toEqual([]);
    expect(decodeSessionCreate(body({ NodeChecks: ['a'], Checks: ['b'] })).NodeChecks).toEqual(['a', 'b']);
    expect(decodeSessionCreate(body({ Name: 'x' })).NodeChecks).toBeUndefined();
  });

  it('reads LockDelay as nanoseconds, as seconds below 1000, or as a duration text', () => {
    const lockDelay = (value: unknown): number | undefined =>
      decodeSessionCreate(body({ LockDelay: value })).LockDelayMs;
    expect(lockDelay(15_000_000_000)).toBe(15_000);
    expect(lockDelay(15)).toBe(15_000);
    expect(lockDelay('15s')).toBe(15_000);
    expect(lockDelay('1m30s')).toBe(90_000);
    expect(lockDelay(0)).toBe(0);
    expect(lockDelay(null)).toBeUndefined();
  });

  it('ignores fields it does not know, and the ones a session read back carries', () => {
    const input = decodeSessionCreate(body({ Name: 'x', ID: 'abc', CreateIndex: 5, Unknown: [1] }));
    expect(defined(input)).toEqual({ Name: 'x' });
  });

  it("refuses a body Go's decoder would, in its words", () => {
    const prefix = 'Request decode failed';
    expect(decodeError({ Name: 5 })).toEqual([
      'BODY_DECODE',
      `${prefix}: json: cannot unmarshal number into Go struct field Session.Name of type string`,
    ]);
    expect(decodeError({ ttl: 30 })).toEqual([
      'BODY_DECODE',
      `${prefix}: json: cannot unmarshal number into Go struct field Session.TTL of type string`,
    ]);
    expect(decodeError({ Checks: 'serfHealth' })).toEqual([
      'BODY_DECODE',
      `${prefix}: json: cannot unmarshal string into Go struct field Session.Checks of type []string`,
    ]);
    expect(decodeError({ NodeChecks: [1] })).toEqual([
      'BODY_DECODE',
      `${prefix}: json: cannot unmarshal number into Go struct field Session.NodeChecks of type string`,
    ]);
    expect(decodeError({ LockDelay: true })).toEqual([
      'BODY_DECODE',
      `${prefix}: json: cannot unmarshal bool into Go struct field Session.LockDelay of type time.Duration`,
    ]);
    expect(decodeError({ LockDelay: 'soon' })).toEqual(['BODY_DECODE', `${prefix}: time: invalid duration "soon"`]);
    expect(decodeError({ LockDelay: '15' })[0]).toBe('BODY_DECODE');
    expect(decodeError({ ServiceChecks: {} })).toEqual([
      'BODY_DECODE',
      `${prefix}: json: cannot unmarshal object into Go struct field Session.ServiceChecks of type []structs.ServiceCheck`,
    ]);
    expect(decodeError([])).toEqual([
      'BODY_DECODE',
      `${prefix}: json: cannot unmarshal array into Go value of type structs.Session`,
    ]);
    expect(decodeError('"x"')).toEqual([
      'BODY_DECODE',
      `${prefix}: json: cannot unmarshal string into Go value of type structs.Session`,
    ]);
    expect(decodeError('{"Name":')[0]).toBe('BODY_DECODE');
  });
});
