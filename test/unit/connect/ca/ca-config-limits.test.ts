// The CA configuration's size limit (docs/decisions.md#size-limits): the Config map is stored as
// sent, so its JSON is bounded; at the limit it parses, one byte over is a 413 naming it.
import { describe, expect, it } from 'vitest';
import { CA_CONFIG_MAX_JSON, parseProviderConfig } from '../../../../src/connect/ca/ca-config.js';
import { answerOfError, agentErrorOf } from '../../../support/errors.js';

/** A Config map whose JSON is exactly `bytes` long: a key the provider ignores, padded. */
function configOf(bytes: number): Record<string, unknown> {
  const base = { LeafCertTTL: '72h', Padding: '' };
  return { ...base, Padding: 'p'.repeat(bytes - JSON.stringify(base).length) };
}

describe('CA configuration size limit', () => {
  it('takes a Config at the limit and keeps it as sent', () => {
    const config = configOf(CA_CONFIG_MAX_JSON);
    expect(JSON.stringify(config)).toHaveLength(CA_CONFIG_MAX_JSON);
    expect(parseProviderConfig(config).publicMap).toEqual(config);
  });

  it('refuses one byte over with a 413 naming Config', () => {
    const err = agentErrorOf(() => parseProviderConfig(configOf(CA_CONFIG_MAX_JSON + 1)));
    expect([err.code, answerOfError(err)]).toEqual([
      'LIMIT_JSON',
      [413, 'Config is 65537 bytes as JSON, over the limit of 65536 bytes'],
    ]);
  });
});
