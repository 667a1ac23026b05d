// What a client command is: its words (`kv get`), its flags, and what it does with the agent.
import { encodeGoJson } from '../../core/go-json.js';
import { usageError } from '../usage-error.js';
import type { ApiClient } from './api.js';
import { unreadable } from './connection.js';
import type { FlagSpecs, ParsedFlags } from './flags.js';

export interface Io {
  out(text: string): void;
  err(text: string): void;
  /** The whole of standard input (a value given as `-`). */
  stdin(): Promise<string>;
  readFile(path: string): Promise<string>;
}

export interface Context {
  readonly api: ApiClient;
  readonly flags: ParsedFlags['values'];
  readonly args: readonly string[];
  readonly io: Io;
}

export interface ClientCommand {
  /** The words after `svc-agent`: `kv get`. */
  readonly name: string;
  readonly synopsis: string;
  /** What follows the options in the usage line: `KEY [VALUE]`. */
  readonly argsUsage: string;
  readonly flags: FlagSpecs;
  /** How many positional arguments it takes: [min, max]. */
  readonly arity: readonly [number, number];
  /** Resolves to the exit code. */
  run(ctx: Context): Promise<number>;
}

/** `@file` reads the file, `-` standard input, anything else is the value itself (Consul's rule). */
export async function valueOf(io: Io, raw: string): Promise<string> {
  if (raw === '-') return io.stdin();
  if (!raw.startsWith('@')) return raw;
  return fileText(io, raw.slice(1), 'Error! Failed to read file');
}

/** A file's text, or CLI_FILE_UNREADABLE opening with `what`. */
export async function fileText(io: Io, path: string, what: string): Promise<string> {
  try {
    return await io.readFile(path);
  } catch (err) {
    throw unreadable(err, path, what);
  }
}

/** Consul's `-datacenter` and `-stale` (HTTPFlags.ServerFlags), on the commands that read from the servers. */
export const SERVER_FLAGS: FlagSpecs = {
  datacenter: {
    kind: 'string',
    doc: 'Name of the datacenter to query. If unspecified, the datacenter of the queried agent.',
  },
  stale: {
    kind: 'bool',
    doc: 'Permit any server (not only the leader) to answer: faster, possibly stale. No effect on writes.',
  },
};

/** Consul's `-format` of the ACL commands. */
export const FORMAT_FLAG: FlagSpecs = {
  format: { kind: 'string', doc: 'Output format. Must be one of (pretty|json).' },
};

/** The -format asked for: `json` or the default `pretty`; anything else is Consul's "Unknown format". */
export function formatOf(flags: Context['flags']): 'pretty' | 'json' {
  const format = flags.format ?? 'pretty';
  if (format === 'pretty' || format === 'json') return format;
  throw usageError('CLI_FORMAT_UNKNOWN', { format: String(format) });
}

/** An answer re-printed as Consul's `-format=json` prints it: Go's MarshalIndent with four spaces. */
export const jsonText = (value: unknown): string => `${encodeGoJson(value, 4)}\n`;

/** Lines of `label:  value`, labels padded to one column, as Consul's CLI prints records. */
export function record(rows: readonly (readonly [string, string])[], indent = ''): string {
  const width = Math.max(...rows.map(([label]) => label.length)) + 2;
  return rows.map(([label, value]) => `${indent}${`${label}:`.padEnd(width)}${value}`.trimEnd()).join('\n');
}

/** Columns separated by two spaces, each as wide as its widest cell. */
export function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows
    .map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  '))
    .join('\n');
}

/** Go's byte-order string sort (sort.Strings). */
export const byBytes = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
