// The file `kv export` writes and `kv import` reads: Consul's JSON array of entries, each a key,
// its flags and its value in standard base64 (Consul's command/kv/impexp).
import { agentError } from '../../core/errors.js';

export interface ExportEntry {
  readonly key: string;
  readonly flags: number;
  readonly value: string;
}

export interface ImportEntry {
  readonly key: string;
  readonly flags: number;
  readonly bytes: Buffer;
}

const BASE64_CHAR = /[A-Za-z0-9+/]/;

/** The entries of an export, each value decoded; CLI_IMPORT_NOT_JSON or CLI_IMPORT_BAD_BASE64 otherwise. */
export function parseExport(text: string): ImportEntry[] {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw agentError('CLI_IMPORT_NOT_JSON', { detail: (err as Error).message });
  }
  if (data === null) return [];
  if (!Array.isArray(data)) throw notEntries(data, '[]*impexp.Entry');
  return data.map((item: unknown) => {
    if (item === null) return { key: '', flags: 0, bytes: Buffer.alloc(0) };
    if (typeof item !== 'object' || Array.isArray(item)) throw notEntries(item, 'impexp.Entry');
    const { key = '', flags = 0, value = '' } = item as Record<string, unknown>;
    if (typeof key !== 'string') throw notEntries(key, 'string', 'key');
    if (typeof flags !== 'number' || !Number.isInteger(flags) || flags < 0) throw notEntries(flags, 'uint64', 'flags');
    if (typeof value !== 'string') throw notEntries(value, 'string', 'value');
    return { key, flags, bytes: decodeBase64(key, value) };
  });
}

/** Go's base64.StdEncoding.DecodeString: padded, the standard alphabet, line breaks skipped. */
function decodeBase64(key: string, value: string): Buffer {
  const text = value.replace(/[\r\n]/g, '');
  const body = text.replace(/={1,2}$/, '');
  for (let i = 0; i < body.length; i++) {
    if (!BASE64_CHAR.test(body[i] as string)) throw agentError('CLI_IMPORT_BAD_BASE64', { key, offset: i });
  }
  if (text.length % 4 !== 0)
    throw agentError('CLI_IMPORT_BAD_BASE64', { key, offset: text.length - (text.length % 4) });
  return Buffer.from(text, 'base64');
}

/** Go's UnmarshalTypeError text for a value of the wrong JSON type. */
function notEntries(value: unknown, goType: string, field?: string): Error {
  const kind = Array.isArray(value)
    ? 'array'
    : value === null
      ? 'null'
      : typeof value === 'boolean'
        ? 'bool'
        : typeof value;
  const where = field === undefined ? `Go value of type ${goType}` : `Go struct field Entry.${field} of type ${goType}`;
  return agentError('CLI_IMPORT_NOT_JSON', { detail: `json: cannot unmarshal ${kind} into ${where}` });
}
