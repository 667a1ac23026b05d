// `kv import`'s reading of Consul's export format, each refusal under its code in Consul's words.
import { describe, expect, it } from 'vitest';
import { parseExport } from '../../../src/cli/client/kv-export.js';
import { agentErrorOf } from '../../support/errors.js';

describe('parseExport', () => {
  it("decodes each entry, with Consul's defaults for missing fields", () => {
    const entries = parseExport(
      JSON.stringify([{ key: 'a', flags: 3, value: Buffer.from('één').toString('base64') }, { key: 'b' }, null]),
    );
    expect(entries.map((e) => [e.key, e.flags, e.bytes.toString()])).toEqual([
      ['a', 3, 'één'],
      ['b', 0, ''],
      ['', 0, ''],
    ]);
    expect(parseExport('null')).toEqual([]);
    expect(parseExport('[{"key":"wrapped","value":"YWJj\\nZGVm"}]')[0]?.bytes.toString()).toBe('abcdef');
  });

  it('refuses text that is not an export', () => {
    const cases: [string, string, string][] = [
      ['[1', 'CLI_IMPORT_NOT_JSON', 'Cannot unmarshal data: '],
      [
        '{"key":"a"}',
        'CLI_IMPORT_NOT_JSON',
        'Cannot unmarshal data: json: cannot unmarshal object into Go value of type []*impexp.Entry',
      ],
      [
        '["a"]',
        'CLI_IMPORT_NOT_JSON',
        'Cannot unmarshal data: json: cannot unmarshal string into Go value of type impexp.Entry',
      ],
      [
        '[{"key":1}]',
        'CLI_IMPORT_NOT_JSON',
        'Cannot unmarshal data: json: cannot unmarshal number into Go struct field Entry.key of type string',
      ],
      [
        '[{"key":"a","flags":-1}]',
        'CLI_IMPORT_NOT_JSON',
        'Cannot unmarshal data: json: cannot unmarshal number into Go struct field Entry.flags of type uint64',
      ],
      [
        '[{"key":"a","value":true}]',
        'CLI_IMPORT_NOT_JSON',
        'Cannot unmarshal data: json: cannot unmarshal bool into Go struct field Entry.value of type string',
      ],
      [
        '[{"key":"a","value":"YW-j"}]',
        'CLI_IMPORT_BAD_BASE64',
        'Error base 64 decoding value for key a: illegal base64 data at input byte 2',
      ],
      [
        '[{"key":"a","value":"YWJjZ"}]',
        'CLI_IMPORT_BAD_BASE64',
        'Error base 64 decoding value for key a: illegal base64 data at input byte 4',
      ],
    ];
    for (const [text, code, message] of cases) {
      const err = agentErrorOf(() => parseExport(text));
      expect(err.code, text).toBe(code);
      expect(err.message.startsWith(message), `${text}: ${err.message}`).toBe(true);
    }
  });
});
