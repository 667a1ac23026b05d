// Intention size limits (docs/decisions.md#size-limits): Consul's Description and Meta limits keep
// Consul's 400 and texts (at the limit accepted, one over refused); ours, on the names and
// namespaces and the L7 Permissions, are a 413 naming the field, once Consul's rules passed.
import { describe, expect, it } from 'vitest';
import {
  assertValidIntention,
  DESCRIPTION_MAX_LENGTH,
  META_KEY_MAX_LENGTH,
  META_MAX_PAIRS,
  META_VALUE_MAX_LENGTH,
  NAME_MAX_BYTES,
  normalizeIntention,
  PERMISSIONS_MAX_JSON,
  type IntentionInput,
  type WriteApi,
} from '../../../../src/connect/intentions/validate.js';
import { answerOfError, agentErrorOf } from '../../../support/errors.js';

const fill = (seed: string, bytes: number, letter = 'x'): string => (seed + letter.repeat(bytes)).slice(0, bytes);
const twoByte = (bytes: number): string => (bytes % 2 === 1 ? 'x' : '') + 'é'.repeat(Math.floor(bytes / 2));
const base: IntentionInput = { SourceName: 'web', DestinationName: 'db', Action: 'allow' };

function meta(pairs: number, key: number, value: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < pairs; i++) out[fill(`k${i}-`, key, 'k')] = fill(`v${i}-`, value);
  return out;
}

/** L7 permissions whose JSON is exactly `bytes` long. */
function permissions(bytes: number): IntentionInput['Permissions'] {
  const bare = JSON.stringify([{ Action: 'allow', HTTP: { PathPrefix: '/' } }]).length;
  return [{ Action: 'allow', HTTP: { PathPrefix: fill('/', bytes - bare + 1, 'p') } }];
}

const check = (input: IntentionInput, api: WriteApi = 'legacy'): void =>
  assertValidIntention(normalizeIntention(input, 'default'), api);
const answer = (input: IntentionInput, api: WriteApi = 'legacy'): [string, [number, string]] => {
  const err = agentErrorOf(() => check(input, api));
  return [err.code, answerOfError(err)];
};

describe("Consul's limits: Description and Meta", () => {
  it('accepts every one at its limit, in bytes', () => {
    const input = {
      ...base,
      Description: twoByte(DESCRIPTION_MAX_LENGTH),
      Meta: meta(META_MAX_PAIRS, META_KEY_MAX_LENGTH, META_VALUE_MAX_LENGTH),
    };
    expect(() => check(input)).not.toThrow();
  });

  it("refuses one over with Consul's texts, a 400", () => {
    const problem = (input: IntentionInput): [string, [number, string]] => answer({ ...base, ...input }, 'exact');
    expect(problem({ Description: twoByte(DESCRIPTION_MAX_LENGTH + 1) })).toEqual([
      'INTENTION_INVALID',
      [400, 'Description exceeds maximum length 512'],
    ]);
    expect(problem({ Meta: meta(META_MAX_PAIRS + 1, 4, 1) })[1]).toEqual([
      400,
      'Meta exceeds maximum element count 64',
    ]);
    const longKey = fill('', META_KEY_MAX_LENGTH + 1, 'k');
    expect(problem({ Meta: { [longKey]: '' } })[1][1]).toBe(`Meta key "${longKey}" exceeds maximum length 128`);
    expect(problem({ Meta: { k: fill('', META_VALUE_MAX_LENGTH + 1) } })[1][1]).toBe(
      'Meta value for key "k" exceeds maximum length 512',
    );
  });
});

describe('our limits: names, namespaces and Permissions', () => {
  it('accepts names, namespaces and Permissions at their limits', () => {
    const input: IntentionInput = {
      SourceNS: fill('sns-', NAME_MAX_BYTES),
      SourceName: fill('src-', NAME_MAX_BYTES),
      DestinationNS: fill('dns-', NAME_MAX_BYTES),
      DestinationName: fill('dst-', NAME_MAX_BYTES),
      Permissions: permissions(PERMISSIONS_MAX_JSON),
    };
    expect(() => check(input, 'exact')).not.toThrow();
  });

  it.each(['SourceNS', 'SourceName', 'DestinationNS', 'DestinationName'] as const)(
    'refuses a %s one byte over with a 413',
    (field) => {
      expect(answer({ ...base, [field]: twoByte(NAME_MAX_BYTES + 1) })).toEqual([
        'LIMIT_BYTES',
        [413, `${field} is 257 bytes, over the limit of 256 bytes`],
      ]);
    },
  );

  it('refuses Permissions one byte over with a 413', () => {
    expect(answer({ ...base, Action: undefined, Permissions: permissions(PERMISSIONS_MAX_JSON + 1) }, 'exact')).toEqual(
      ['LIMIT_JSON', [413, 'Permissions is 16385 bytes as JSON, over the limit of 16384 bytes']],
    );
  });

  it("answers Consul's 400 first when the intention is also invalid", () => {
    expect(answer({ SourceName: fill('', NAME_MAX_BYTES + 1), DestinationName: 'db' })[0]).toBe('INTENTION_INVALID');
  });
});
