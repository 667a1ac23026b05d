import { describe, expect, it } from 'vitest';
import { parseFlags } from '../../../src/cli/client/flags.js';
import { parseAgentArgs } from '../../../src/cli/args.js';
import { formatOf } from '../../../src/cli/client/command.js';
import { agentErrorOf } from '../../support/errors.js';

describe('client command flags', () => {
  const specs = {
    recurse: { kind: 'bool', doc: '' },
    'modify-index': { kind: 'int', doc: '' },
    'policy-name': { kind: 'list', doc: '' },
  } as const;

  it('reads every Go boolean spelling, as the agent flags do', () => {
    for (const [text, value] of [
      ['1', true],
      ['t', true],
      ['T', true],
      ['True', true],
      ['0', false],
      ['F', false],
      ['false', false],
    ] as const) {
      expect(parseFlags([`-recurse=${text}`], specs).values.recurse, text).toBe(value);
      expect(parseAgentArgs([`-dev=${text}`]).dev, text).toBe(value);
    }
    expect(() => parseFlags(['-recurse=yes'], specs)).toThrow('invalid boolean value "yes" for -recurse: parse error');
  });

  it("raises each mistake under its own code, in Go's flag package words", () => {
    const cases: [string[], string, string][] = [
      [['-recurse=yes'], 'CLI_FLAG_BOOL', 'invalid boolean value "yes" for -recurse: parse error'],
      [['-nope'], 'CLI_FLAG_UNDEFINED', 'flag provided but not defined: -nope'],
      [['-modify-index'], 'CLI_FLAG_NEEDS_ARGUMENT', 'flag needs an argument: -modify-index'],
      [
        ['-modify-index=x'],
        'CLI_FLAG_VALUE',
        'invalid value "x" for flag -modify-index: expected a non-negative integer',
      ],
    ];
    for (const [argv, code, message] of cases) {
      const err = agentErrorOf(() => parseFlags(argv, specs));
      expect([err.code, err.message]).toEqual([code, message]);
    }
  });

  it('takes -format pretty or json, and refuses another as Consul does', () => {
    expect(formatOf({})).toBe('pretty');
    expect(formatOf({ format: 'json' })).toBe('json');
    const err = agentErrorOf(() => formatOf({ format: 'yaml' }));
    expect([err.code, err.message]).toEqual(['CLI_FORMAT_UNKNOWN', 'Unknown format: yaml']);
  });

  it('stops at the first positional argument, and repeats list flags', () => {
    expect(
      parseFlags(['-recurse', '-modify-index', '7', '--policy-name=a', '-policy-name', 'b', 'key', '-x'], specs),
    ).toEqual({ values: { recurse: true, 'modify-index': 7, 'policy-name': ['a', 'b'] }, args: ['key', '-x'] });
  });
});
