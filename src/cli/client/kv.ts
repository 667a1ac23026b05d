// `kv get|put|delete|export|import`, worded as Consul's CLI words them.
import { agentError } from '../../core/errors.js';
import { escapeGoHtml } from '../../core/go-json.js';
import { usageError } from '../usage-error.js';
import { parseAnswer, unexpectedAnswer, type ApiClient } from './api.js';
import { SERVER_FLAGS, valueOf, type ClientCommand } from './command.js';
import { parseExport, type ExportEntry } from './kv-export.js';

interface KvPair {
  Key: string;
  Value: string | null;
  Flags: number;
  CreateIndex: number;
  ModifyIndex: number;
  LockIndex: number;
  Session?: string;
}

const keyPath = (k: string): string => k.split('/').map(encodeURIComponent).join('/');

/** Consul strips one leading `/`: keys never start with one. */
const keyArg = (arg: string | undefined): string => (arg ?? '').replace(/^\//, '');

const valueText = (pair: KvPair, base64: boolean): string => {
  const value = pair.Value ?? '';
  return base64 ? value : Buffer.from(value, 'base64').toString();
};

/** The pairs under `prefix` (none for a 404), as `?recurse` lists them. */
async function list(api: ApiClient, prefix: string): Promise<KvPair[]> {
  const answer = await api.call('GET', `/v1/kv/${keyPath(prefix)}?recurse`);
  if (answer.status === 404) return [];
  if (answer.status !== 200) throw unexpectedAnswer(answer, 'querying the agent');
  return parseAnswer<KvPair[]>(answer, 'querying the agent');
}

/** Consul's `-detailed` block: labels in a tabwriter column (widest label plus six spaces). */
function detailed(pair: KvPair, base64: boolean): string {
  const rows: [string, string][] = [
    ['CreateIndex', String(pair.CreateIndex)],
    ['Flags', String(pair.Flags)],
    ['Key', pair.Key],
    ['LockIndex', String(pair.LockIndex)],
    ['ModifyIndex', String(pair.ModifyIndex)],
    ['Session', pair.Session === undefined || pair.Session === '' ? '-' : pair.Session],
    ['Value', valueText(pair, base64)],
  ];
  return rows.map(([label, value]) => `${label.padEnd('CreateIndex'.length + 6)}${value}`).join('\n');
}

export const kvCommands: ClientCommand[] = [
  {
    name: 'kv get',
    synopsis: 'Reads a key, or lists the keys or pairs under a prefix (-keys, -recurse)',
    argsUsage: '[KEY_OR_PREFIX]',
    arity: [0, 1],
    flags: {
      base64: { kind: 'bool', doc: 'Base64 encode the value.' },
      detailed: { kind: 'bool', doc: "The key's metadata too: its indexes, flags and session." },
      keys: { kind: 'bool', doc: 'List the keys under the prefix, not their values (up to -separator).' },
      recurse: { kind: 'bool', doc: 'Every key under the prefix, as key:value lines.' },
      separator: { kind: 'string', doc: 'With -keys: list keys only up to the next separator. Default "/".' },
      ...SERVER_FLAGS,
    },
    async run({ api, flags, args, io }) {
      const k = keyArg(args[0]);
      const base64 = flags.base64 === true;
      if (flags.keys === true) {
        const separator = typeof flags.separator === 'string' ? flags.separator : '/';
        const query = separator === '' ? '?keys' : `?keys&separator=${encodeURIComponent(separator)}`;
        const answer = await api.call('GET', `/v1/kv/${keyPath(k)}${query}`);
        if (answer.status === 404) return 0;
        if (answer.status !== 200) throw unexpectedAnswer(answer, 'querying the agent');
        for (const key of parseAnswer<string[]>(answer, 'querying the agent')) io.out(`${key}\n`);
        return 0;
      }
      if (flags.recurse === true) {
        const pairs = await list(api, k);
        const lines = pairs.map((p) =>
          flags.detailed === true ? detailed(p, base64) : `${p.Key}:${valueText(p, base64)}`,
        );
        if (lines.length > 0) io.out(`${lines.join(flags.detailed === true ? '\n\n' : '\n')}\n`);
        return 0;
      }
      if (k === '') throw usageError('CLI_MISSING_ARGUMENT', { name: 'KEY' });
      const answer = await api.call('GET', `/v1/kv/${keyPath(k)}`);
      if (answer.status === 404) {
        io.err(`Error! No key exists at: ${k}\n`);
        return 1;
      }
      if (answer.status !== 200) throw unexpectedAnswer(answer, 'querying the agent');
      const pair = parseAnswer<KvPair[]>(answer, 'querying the agent')[0];
      if (pair === undefined)
        throw agentError('CLI_ANSWER_NOT_JSON', { what: 'querying the agent', status: 200, detail: 'an empty list' });
      io.out(`${flags.detailed === true ? detailed(pair, base64) : valueText(pair, base64)}\n`);
      return 0;
    },
  },
  {
    name: 'kv put',
    synopsis: 'Writes a key (VALUE: text, @file, or - for standard input)',
    argsUsage: 'KEY [VALUE]',
    arity: [1, 2],
    flags: {
      cas: { kind: 'bool', doc: 'Check-and-set: write only if the key is still at -modify-index.' },
      'modify-index': { kind: 'int', doc: 'The ModifyIndex -cas compares (0: only if the key does not exist).' },
      flags: { kind: 'int', doc: 'Unsigned integer stored with the key.' },
    },
    async run({ api, flags, args, io }) {
      const k = args[0] as string;
      const value = await valueOf(io, args[1] ?? '');
      const query: string[] = [];
      if (flags.cas === true) query.push(`cas=${Number(flags['modify-index'] ?? 0)}`);
      if (flags.flags !== undefined) query.push(`flags=${Number(flags.flags)}`);
      const answer = await api.expectOk(
        'PUT',
        `/v1/kv/${keyPath(k)}${query.length > 0 ? `?${query.join('&')}` : ''}`,
        value,
        'writing to the KV store',
      );
      if (answer.text.trim() !== 'true') {
        io.err(`Error! Did not write to ${k}: CAS failed\n`);
        return 1;
      }
      io.out(`Success! Data written to: ${k}\n`);
      return 0;
    },
  },
  {
    name: 'kv delete',
    synopsis: 'Deletes a key, or every key under a prefix with -recurse',
    argsUsage: 'KEY',
    arity: [1, 1],
    flags: {
      recurse: { kind: 'bool', doc: 'Delete every key under the prefix.' },
      cas: { kind: 'bool', doc: 'Check-and-set: delete only if the key is still at -modify-index.' },
      'modify-index': { kind: 'int', doc: 'The ModifyIndex -cas compares.' },
    },
    async run({ api, flags, args, io }) {
      const k = args[0] as string;
      if (flags.recurse === true && flags.cas === true)
        throw usageError('CLI_FLAG_CONFLICT', { detail: 'Cannot specify both -cas and -recurse!' });
      const query =
        flags.recurse === true ? '?recurse' : flags.cas === true ? `?cas=${Number(flags['modify-index'] ?? 0)}` : '';
      const answer = await api.expectOk(
        'DELETE',
        `/v1/kv/${keyPath(k)}${query}`,
        undefined,
        'deleting from the KV store',
      );
      if (answer.text.trim() === 'false') {
        io.err(`Error! Did not delete key ${k}: CAS failed\n`);
        return 1;
      }
      io.out(flags.recurse === true ? `Success! Deleted keys with prefix: ${k}\n` : `Success! Deleted key: ${k}\n`);
      return 0;
    },
  },
  {
    name: 'kv export',
    synopsis: 'Exports a tree from the KV store as JSON (values in base64)',
    argsUsage: '[KEY_OR_PREFIX]',
    arity: [0, 1],
    flags: { ...SERVER_FLAGS },
    async run({ api, args, io }) {
      const entries: ExportEntry[] = (await list(api, keyArg(args[0]))).map((p) => ({
        key: p.Key,
        flags: p.Flags,
        value: p.Value ?? '',
      }));
      // Go's json.MarshalIndent with a tab, HTML characters escaped as Go escapes them.
      io.out(`${escapeGoHtml(entries.length === 0 ? '[]' : JSON.stringify(entries, null, '\t'))}\n`);
      return 0;
    },
  },
  {
    name: 'kv import',
    synopsis: 'Imports a tree written by kv export (DATA: JSON, @file, or - for standard input)',
    argsUsage: 'DATA',
    arity: [0, 1],
    flags: { ...SERVER_FLAGS },
    async run({ api, args, io }) {
      const raw = args[0];
      if (raw === undefined) throw usageError('CLI_MISSING_ARGUMENT', { name: 'DATA' });
      if (raw === '') throw usageError('CLI_EMPTY_ARGUMENT', { name: 'DATA' });
      for (const entry of parseExport(await valueOf(io, raw))) {
        const path = `/v1/kv/${keyPath(entry.key)}${entry.flags === 0 ? '' : `?flags=${entry.flags}`}`;
        const answer = await api.call('PUT', path, entry.bytes);
        if (answer.status !== 200) throw unexpectedAnswer(answer, `writing data for key ${entry.key}`);
        io.out(`Imported: ${entry.key}\n`);
      }
      return 0;
    },
  },
];
