// Flags of the client commands, in Go's flag-package style as Consul's CLI takes them: `-name`,
// `-name=value`, `-name value`, `--name`; parsing stops at the first argument that is not a flag,
// and what follows is positional.
import { parseGoBool } from '../go-bool.js';
import { unknownFlag, usageError } from '../usage-error.js';

export interface FlagSpec {
  readonly kind: 'bool' | 'string' | 'int' | 'list';
  readonly doc: string;
}

export type FlagSpecs = Readonly<Record<string, FlagSpec>>;

export interface ParsedFlags {
  readonly values: Readonly<Record<string, string | boolean | number | readonly string[]>>;
  readonly args: readonly string[];
}

export function parseFlags(argv: readonly string[], specs: FlagSpecs): ParsedFlags {
  const values: Record<string, string | boolean | number | string[]> = {};
  let i = 0;
  for (; i < argv.length; i++) {
    const token = argv[i] as string;
    if (token === '--') {
      i++;
      break;
    }
    const m = /^--?([^=]+)(?:=(.*))?$/s.exec(token);
    if (m === null || token === '-') break;
    const name = m[1] as string;
    const spec = specs[name];
    if (spec === undefined) throw unknownFlag(name, Object.keys(specs));
    let value = m[2];
    if (spec.kind === 'bool') {
      values[name] = value === undefined || parseGoBool(name, value);
      continue;
    }
    if (value === undefined) {
      value = argv[++i];
      if (value === undefined) throw usageError('CLI_FLAG_NEEDS_ARGUMENT', { flag: name });
    }
    if (spec.kind === 'int') {
      if (!/^\d+$/.test(value)) {
        throw usageError('CLI_FLAG_VALUE', { value, flag: name, reason: 'expected a non-negative integer' });
      }
      values[name] = Number(value);
    } else if (spec.kind === 'list') {
      ((values[name] ??= []) as string[]).push(value);
    } else {
      values[name] = value;
    }
  }
  return { values, args: argv.slice(i) };
}

export function flagHelp(specs: FlagSpecs): string {
  return Object.entries(specs)
    .map(([name, spec]) => `  -${name}${spec.kind === 'bool' ? '' : '=<value>'}\n      ${spec.doc}`)
    .join('\n');
}
