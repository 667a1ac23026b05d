// `config write|read|list|delete`: Consul's `consul config` commands over /v1/config. `write`
// takes a file (or `-` for standard input) in JSON or HCL, snake_case keys and blocks as Consul's
// CLI accepts them, and hands the object to the agent, whose decoder takes both spellings
// (docs/decisions.md#config-entries); the lines printed are Consul's.
import { agentError } from '../../core/errors.js';
import { hclToObject } from '../../core/hcl.js';
import { encodeGoJson } from '../../core/go-json.js';
import { usageError } from '../usage-error.js';
import { fileText, type ClientCommand, type Io } from './command.js';
import type { FlagSpecs, ParsedFlags } from './flags.js';

type Flags = ParsedFlags['values'];

const text = (flags: Flags, name: string): string => (typeof flags[name] === 'string' ? (flags[name] as string) : '');

function required(flags: Flags, name: string): string {
  const value = text(flags, name);
  if (value === '') throw usageError('CLI_FLAG_MISSING', { detail: `Must specify the -${name} parameter` });
  return value;
}

/** -cas with -modify-index, checked as Consul's commands check them; the index, or undefined without -cas. */
function casIndex(flags: Flags): number | undefined {
  const index = typeof flags['modify-index'] === 'number' ? (flags['modify-index'] as number) : 0;
  if (flags.cas !== true) {
    if (index !== 0) throw usageError('CLI_FLAG_CONFLICT', { detail: 'Cannot specify -modify-index without -cas' });
    return undefined;
  }
  return index;
}

/** The entry in the file: JSON, else HCL. */
async function entryObject(io: Io, path: string): Promise<Record<string, unknown>> {
  const raw = path === '-' ? await io.stdin() : await fileText(io, path, 'Failed to read file');
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    try {
      parsed = await hclToObject(raw);
    } catch (err) {
      throw agentError('CLI_CONFIG_ENTRY_DECODE', { detail: (err as Error).message });
    }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw agentError('CLI_CONFIG_ENTRY_DECODE', { detail: 'the input holds no object' });
  return parsed as Record<string, unknown>;
}

function field(entry: Record<string, unknown>, name: string): string {
  const key = Object.keys(entry).find((k) => k.toLowerCase() === name.toLowerCase());
  const value = key === undefined ? undefined : entry[key];
  return typeof value === 'string' ? value : '';
}

const CAS_FLAGS: FlagSpecs = {
  cas: { kind: 'bool', doc: 'Perform a Check-And-Set operation; requires -modify-index.' },
  'modify-index': {
    kind: 'int',
    doc: 'The ModifyIndex of the entry to check-and-set against (0: only if it does not exist yet).',
  },
};

export const configEntryCommands: ClientCommand[] = [
  {
    name: 'config write',
    synopsis: 'Create or update a centralized config entry',
    argsUsage: '<file.hcl|file.json|->',
    arity: [1, 1],
    flags: CAS_FLAGS,
    async run({ api, flags, args, io }) {
      const cas = casIndex(flags);
      const entry = await entryObject(io, args[0] as string);
      const kind = field(entry, 'Kind');
      const name = field(entry, 'Name');
      const query = cas === undefined ? '' : `?cas=${cas}`;
      const written = await api.json<boolean>(
        'PUT',
        `/v1/config${query}`,
        JSON.stringify(entry),
        `writing config entry ${kind}/${name}`,
      );
      if (!written) {
        io.err(`Config entry not updated: ${kind}/${name}\n`);
        return 1;
      }
      io.out(`Config entry written: ${kind}/${name}\n`);
      return 0;
    },
  },
  {
    name: 'config read',
    synopsis: 'Read a centralized config entry',
    argsUsage: '',
    arity: [0, 0],
    flags: {
      kind: { kind: 'string', doc: 'The kind of config to read.' },
      name: { kind: 'string', doc: 'The name of the config to read.' },
    },
    async run({ api, flags, io }) {
      const kind = required(flags, 'kind');
      const name = required(flags, 'name');
      const entry = await api.json<unknown>(
        'GET',
        `/v1/config/${encodeURIComponent(kind)}/${encodeURIComponent(name)}`,
        undefined,
        `reading config entry ${kind}/${name}`,
      );
      io.out(`${encodeGoJson(entry, 4)}\n`);
      return 0;
    },
  },
  {
    name: 'config list',
    synopsis: 'List centralized config entries of a given kind',
    argsUsage: '',
    arity: [0, 0],
    flags: { kind: { kind: 'string', doc: 'The kind of configurations to list.' } },
    async run({ api, flags, io }) {
      const kind = required(flags, 'kind');
      const entries = await api.json<{ Name: string }[]>(
        'GET',
        `/v1/config/${encodeURIComponent(kind)}`,
        undefined,
        `listing config entries for kind ${JSON.stringify(kind)}`,
      );
      for (const entry of entries) io.out(`${entry.Name}\n`);
      return 0;
    },
  },
  {
    name: 'config delete',
    synopsis: 'Delete a centralized config entry',
    argsUsage: '',
    arity: [0, 0],
    flags: {
      kind: { kind: 'string', doc: 'The kind of configuration to delete.' },
      name: { kind: 'string', doc: 'The name of configuration to delete.' },
      ...CAS_FLAGS,
    },
    async run({ api, flags, io }) {
      const kind = required(flags, 'kind');
      const name = required(flags, 'name');
      const cas = casIndex(flags);
      if (cas === 0)
        throw usageError('CLI_FLAG_MISSING', { detail: 'Must specify a -modify-index greater than 0 with -cas' });
      const path = `/v1/config/${encodeURIComponent(kind)}/${encodeURIComponent(name)}`;
      const answer = await api.json<unknown>(
        'DELETE',
        cas === undefined ? path : `${path}?cas=${cas}`,
        undefined,
        `deleting config entry ${kind}/${name}`,
      );
      if (cas !== undefined && answer !== true) {
        io.err(`Config entry not deleted: ${kind}/${name}\n`);
        return 1;
      }
      io.out(`Config entry deleted: ${kind}/${name}\n`);
      return 0;
    },
  },
];
