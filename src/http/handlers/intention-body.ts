// Request bodies of the intentions API → IntentionInput, decoded as Consul's Go handlers decode
// them: field names matched case-insensitively at every level, unknown fields refused, a JSON null
// leaving the zero value, Go's type-error texts behind the handler's prefix. A client that read an
// intention may send it back whole: the read-only fields (Precedence, indexes, times, Hash) are
// accepted and ignored.
import type { HeaderPermission, HttpPermission, IntentionPermission } from '../../connect/intentions/model.js';
import type { IntentionInput } from '../../connect/intentions/validate.js';
import { jsonObjectDecoder, type JsonObjectDecoder } from '../body.js';
import { GoFields } from '../go-fields.js';

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
  const f = new IntentionFields(prefix, 'Intention');
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

/** The intention body's own nested structs (L7 permissions), on top of the shared reads. */
class IntentionFields extends GoFields {
  permissions(value: unknown): IntentionPermission[] | undefined {
    if (value === undefined || value === null) return undefined;
    if (!Array.isArray(value)) throw this.typeError(value, 'Permissions', '[]*structs.IntentionPermission');
    return value.map((item) => {
      const o = this.fields(item, 'Permissions', 'structs.IntentionPermission', ['Action', 'HTTP']) ?? {};
      const http = this.http(o.HTTP);
      return {
        Action: this.string(o.Action, 'Permissions.Action') ?? '',
        ...(http === undefined ? {} : { HTTP: http }),
      };
    });
  }

  private http(value: unknown): HttpPermission | undefined {
    const path = 'Permissions.HTTP';
    const o = this.fields(value, path, 'structs.IntentionHTTPPermission', [
      'PathExact',
      'PathPrefix',
      'PathRegex',
      'Header',
      'Methods',
    ]);
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
      const o =
        this.fields(item, path, 'structs.IntentionHTTPHeaderPermission', [
          'Name',
          'Present',
          'Exact',
          'Prefix',
          'Suffix',
          'Regex',
          'Invert',
        ]) ?? {};
      const out: { -readonly [K in keyof HeaderPermission]: HeaderPermission[K] } = {
        Name: this.string(o.Name, `${path}.Name`) ?? '',
      };
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
