import { describe, expect, it } from 'vitest';
import { parseFlags } from '../../../src/cli/client/flags.js';
import { parseAgentArgs } from '../../../src/cli/args.js';

describe('client command flags', () => {
  const specs = { recurse: { kind: 'bool', doc: '' }, 'modify-index': { kind: 'int', doc: '' }, 'policy-name': { kind: 'list', doc: '' } } as const;

  it('reads every Go boolean spelling, as the agent flags do', () => {
    for (const [text, value] of [['1', true], ['t', true], ['T', true], ['True', true], ['0', false], ['F', false], ['false', false]] as const) {
      expect(parseFlags([`-recurse=${text}`], specs).values.recurse, text).toBe(value);
      expect(parseAgentArgs([`-dev=${text}`]).dev, text).toBe(value);
    }
    expect(() => parseFlags(['-recurse=yes'], specs)).toThrow('invalid boolean value "yes" for -recurse: parse error');
  });

  it('stops at the first positional argument, and repeats list flags', () => {
    expect(parseFlags(['-recurse', '-modify-index', '7', '--policy-name=a', '-policy-name', 'b', 'key', '-x'], specs)).toEqual({ values: { recurse: true, 'modify-index': 7, 'policy-name': ['a', 'b'] }, args: ['key', '-x'] });
  });
});
