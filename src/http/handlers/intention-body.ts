// Request bodies of the intentions API → IntentionInput, decoded as Consul's Go handlers decode
// them: field names matched case-insensitively at every level, unknown fields refused, a JSON null
// leaving the zero value, Go's type-error texts behind the handler's prefix. A client that read an
// intention may send it back whole: the read-only fields (Precedence, indexes, times, Hash) are
// accepted and ignored.
import { invalid, type AgentError } from '../../core/errors.js';
import type { HeaderPermission, HttpPermission, IntentionPermission } from '../../connect/intentions/model.js';
import type { IntentionInput } from '../../connect/intentions/validate.js';
import { jsonObjectDecoder, type JsonObjectDecoder } from '../body.js';

const INTENTION_FIELDS = [
  'ID',
  'Description',
  'SourceNS',
  'SourceName',
  'DestinationNS',
  'DestinationName',
  'SourcePartition',
  'DestinationPartition',
  'SourcePeer',
  'SourceType',
  'Action',
  'Permissions',
  'DefaultAddr',
  'DefaultPort',
  'Meta',
  'Precedence',
  'CreatedAt',
  'UpdatedAt',
  'Hash',
  'CreateIndex',
  'ModifyIndex',
];

const decoders = new Map<string, JsonObjectDecoder>();

/** Decodes an intention body; `prefix` is the handler's ("Request decode failed", …). */
export function decodeIntentionBody(body: Buffer | undefined, prefix: string): IntentionInput {
  let decode = decoders.get(prefix);
  if (decode === undefined) {
    decode = jsonObjectDecoder({ prefix, typeName: 'structs.Intention', fields: INTENTION_FIELDS });
    decoders.set(prefix, decode);
  }
  const raw = decode(body);
  const f = new GoFields(prefix);
  // Read-only or dead fields: type-checked as Go would, then dropped.
  f.string(raw.DefaultAddr, 'DefaultAddr');
  f.int(raw.DefaultPort, 'DefaultPort', 'int');
  f.int(raw.Precedence, 'Precedence', 'int');
  f.int(raw.CreateIndex, 'CreateIndex', 'uint64');
  f.int(raw.ModifyIndex, 'ModifyIndex', 'uint64');
  f.string(raw.Hash, 'Hash');
  f.time(raw.CreatedAt);
  f.time(raw.UpdatedAt);
  return {
    ID: f.string(raw.ID, 'ID'),
    Description: f.string(raw.Description, 'Description'),
    SourceNS: f.string(raw.SourceNS, 'SourceNS'),
    SourceName: f.string(raw.SourceName, 'SourceName'),
    DestinationNS: f.string(raw.DestinationNS, 'DestinationNS'),
    DestinationName: f.string(raw.DestinationName, 'DestinationName'),
    SourcePartition: f.string(raw.SourcePartition, 'SourcePartition'),
    DestinationPartition: f.string(raw.DestinationPartition, 'DestinationPartition'),
    SourcePeer: f.string(raw.SourcePeer, 'SourcePeer'),
    SourceType: f.string(raw.SourceType, 'SourceType'),
    Action: f.string(raw.Action, 'Action'),
    Permissions: f.permissions(raw.Permissions),
    Meta: f.stringMap(raw.Meta, 'Meta'),
  };
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/;

/** Typed reads of decoded JSON values, failing with Go's encoding/json texts. */
class GoFields {
  constructor(private readonly prefix: string) {}

  private fail(message: string): AgentError {
    return invalid('BODY_DECODE', `${this.prefix}: ${message}`);
  }

  private typeError(value: unknown, path: string, type: string): AgentError {
    return this.fail(`json: cannot unmarshal ${goValue(value)} into Go struct field Intention.${path} of type ${type}`);
  }

  string(value: unknown, path: string): string | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string') throw this.typeError(value, path, 'string');
    return value;
  }

  bool(value: unknown, path: string): boolean | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'boolean') throw this.typeError(value, path, 'bool');
    return value;
  }

  int(value: unknown, path: string, type: 'int' | 'uint64'): number | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'number') throw this.typeError(value, path, type);
    if (!Number.isInteger(value) || (type === 'uint64' && value < 0)) {
      throw this.fail(`json: cannot unmarshal number ${value} into Go struct field Intention.${path} of type ${type}`);
    }
    return value;
  }

  time(value: unknown): void {
    if (value === undefined || value === null) return;
    if (typeof value !== 'string') throw this.fail('Time.UnmarshalJSON: input is not a JSON string');
    if (!RFC3339.test(value) || Number.isNaN(Date.parse(value))) {
      throw this.fail(`parsing time ${JSON.stringify(value)} as "2006-01-02T15:04:05Z07:00": cannot parse ${JSON.stringify(value)} as "2006"`);
    }
  }

  strings(value: unknown, path: string): string[] | undefined {
    if (value === undefined || value === null) return undefined;
    if (!Array.isArray(value)) throw this.typeError(value, path, '[]string');
    return value.map((item) => {
      if (typeof item !== 'string') throw this.typeError(item, path, 'string');
      return item;
    });
  }

  stringMap(value: unknown, path: string): Record<string, string> | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'object' || Array.isArray(value)) throw this.typeError(value, path, 'map[string]string');
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (typeof v !== 'string') throw this.typeError(v, path, 'string');
      out[k] = v;
    }
    return out;
  }

  /** A struct: its fields matched case-insensitively, unknown ones refused; null is the zero value. */
  private object(value: unknown, path: string, type: string, fields: readonly string[]): Record<string, unknown> | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'object' || Array.isArray(value)) throw this.typeError(value, path, type);
    const canonical = new Map(fields.map((name) => [name.toLowerCase(), name]));
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
      const name = canonical.get(key.toLowerCase());
      if (name === undefined) throw this.fail(`json: unknown field ${JSON.stringify(key)}`);
      out[name] = v;
    }
    return out;
  }

  permissions(value: unknown): IntentionPermission[] | undefined {
    if (value === undefined || value === null) return undefined;
    if (!Array.isArray(value)) throw this.typeError(value, 'Permissions', '[]*structs.IntentionPermission');
    return value.map((item) => {
      const o = this.object(item, 'Permissions', 'structs.IntentionPermission', ['Action', 'HTTP']) ?? {};
      const http = this.http(o.HTTP);
      return { Action: this.string(o.Action, 'Permissions.Action') ?? '', ...(http === undefined ? {} : { HTTP: http }) };
    });
  }

  private http(value: unknown): HttpPermission | undefined {
    const path = 'Permissions.HTTP';
    const o = this.object(value, path, 'structs.IntentionHTTPPermission', ['PathExact', 'PathPrefix', 'PathRegex', 'Header', 'Methods']);
    if (o === undefined) return undefined;
    const out: { -readonly [K in keyof HttpPermission]: HttpPermission[K] } = {};
    const exact = this.string(o.PathExact, `${path}.PathExact`);
    if (exact) out.PathExact = exact;
    const prefix = this.string(o.PathPrefix, `${path}.PathPrefix`);
    if (prefix) out.PathPrefix = prefix;
    const regex = this.string(o.PathRegex, `${path}.PathRegex`);
    if (regex) out.PathRegex = regex;
    const header = this.headers(o.Header);
    if (header !== undefined && header.length > 0) out.Header = header;
    const methods = this.strings(o.Methods, `${path}.Methods`);
    if (methods !== undefined && methods.length > 0) out.Methods = methods;
    return out;
  }

  private headers(value: unknown): HeaderPermission[] | undefined {
    const path = 'Permissions.HTTP.Header';
    if (value === undefined || value === null) return undefined;
    if (!Array.isArray(value)) throw this.typeError(value, path, '[]structs.IntentionHTTPHeaderPermission');
    return value.map((item) => {
      const o = this.object(item, path, 'structs.IntentionHTTPHeaderPermission', ['Name', 'Present', 'Exact', 'Prefix', 'Suffix', 'Regex', 'Invert']) ?? {};
      const out: { -readonly [K in keyof HeaderPermission]: HeaderPermission[K] } = { Name: this.string(o.Name, `${path}.Name`) ?? '' };
      if (this.bool(o.Present, `${path}.Present`) === true) out.Present = true;
      for (const key of ['Exact', 'Prefix', 'Suffix', 'Regex'] as const) {
        const v = this.string(o[key], `${path}.${key}`);
        if (v) out[key] = v;
      }
      if (this.bool(o.Invert, `${path}.Invert`) === true) out.Invert = true;
      return out;
    });
  }
}

/** How Go's decoder names a JSON value in "cannot unmarshal X into …". */
function goValue(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'bool';
  return 'object';
}
