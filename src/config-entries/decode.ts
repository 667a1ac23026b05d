// A config entry's body decoded as Consul decodes it (structs.DecodeConfigEntry: mapstructure,
// weakly typed, with its hooks): a field matched by its Go name in any case or by its snake_case
// alias, a one-element list (an HCL block) taken as the struct or map it holds, numbers and
// strings converted either way, durations from Go's text, every problem found reported in
// mapstructure's words, then the keys no field took ("invalid config key"). The result carries
// every field, zero values included, so Normalize and Validate read it as Go's struct; goJson
// writes it back as Go's encoding/json does (field order, omitempty).
import { durationError, formatDuration, parseDuration } from '../core/duration.js';
import { escapeGoHtml } from '../core/go-json.js';

export type FieldType =
  | { readonly t: 'string' | 'int' | 'uint' | 'float32' | 'bool' | 'duration' | 'any' | 'time' }
  | { readonly t: 'struct'; readonly fields: readonly Field[]; readonly pointer?: boolean }
  | { readonly t: 'slice'; readonly of: FieldType }
  | { readonly t: 'map'; readonly of: FieldType };

export interface Field {
  readonly name: string;
  /** The snake_case spelling Consul also accepts (its `alias` tag). */
  readonly alias?: string;
  readonly type: FieldType;
  /** Go's `json:",omitempty"`: a zero value is left out of the JSON. */
  readonly omitEmpty?: boolean;
  /** Decoded and dropped: read-only fields a client may send back (CreateIndex, Precedence). */
  readonly ignored?: boolean;
  /** A Go pointer to a scalar (`*int`): absent unless given. */
  readonly nilable?: boolean;
}

/** A decoded struct: every field by its Go name, zero values included (nil pointers, slices and maps absent). */
export type GoStruct = Record<string, unknown>;

export const STRING: FieldType = { t: 'string' };
export const INT: FieldType = { t: 'int' };
export const UINT: FieldType = { t: 'uint' };
export const FLOAT32: FieldType = { t: 'float32' };
export const BOOL: FieldType = { t: 'bool' };
export const DURATION: FieldType = { t: 'duration' };
export const ANY: FieldType = { t: 'any' };
export const TIME: FieldType = { t: 'time' };
export const STRINGS: FieldType = { t: 'slice', of: STRING };
export const STRING_MAP: FieldType = { t: 'map', of: STRING };
export const ANY_MAP: FieldType = { t: 'map', of: ANY };

export function struct(fields: readonly Field[]): FieldType {
  return { t: 'struct', fields };
}

export function pointer(fields: readonly Field[]): FieldType {
  return { t: 'struct', fields, pointer: true };
}

export function sliceOf(of: FieldType): FieldType {
  return { t: 'slice', of };
}

/** What decoding found: mapstructure's errors, then the keys no field took (with their path). */
export interface Decoded {
  readonly value: GoStruct;
  readonly errors: readonly string[];
  readonly unused: readonly string[];
}

export function decodeStruct(
  raw: Readonly<Record<string, unknown>>,
  fields: readonly Field[],
  skip: readonly string[],
): Decoded {
  const d = new Decoder();
  const value = d.struct(raw, fields, '', skip);
  return { value, errors: d.errors, unused: d.unused };
}

class Decoder {
  readonly errors: string[] = [];
  readonly unused: string[] = [];

  struct(
    raw: Readonly<Record<string, unknown>>,
    fields: readonly Field[],
    path: string,
    skip: readonly string[],
  ): GoStruct {
    // Each key to its field, not http/go-fields.ts's goField (a field to its key): every key is accounted for.
    const byName = new Map<string, Field>();
    for (const f of fields) {
      byName.set(f.name.toLowerCase(), f);
      if (f.alias !== undefined) byName.set(f.alias.toLowerCase(), f);
    }
    const given = new Map<Field, unknown>();
    for (const [key, value] of Object.entries(raw)) {
      const field = byName.get(key.toLowerCase());
      if (field === undefined) {
        if (!skip.includes(key)) this.unused.push(path === '' ? key : `${path}.${key}`);
        continue;
      }
      // Go's exact name wins over another spelling of the same field.
      if (given.has(field) && key !== field.name) continue;
      given.set(field, value);
    }
    const out: GoStruct = {};
    for (const f of fields) {
      const at = path === '' ? f.name : `${path}.${f.name}`;
      const value = given.has(f) ? this.value(given.get(f), f.type, at) : undefined;
      const decoded = value === undefined && f.nilable !== true ? zero(f.type) : value;
      if (f.ignored === true || decoded === undefined) continue;
      out[f.name] = decoded;
    }
    return out;
  }

  /** One value as its Go type; undefined for a nil pointer, slice or map. */
  value(raw: unknown, type: FieldType, path: string): unknown {
    if (raw === null || raw === undefined) return zero(type);
    switch (type.t) {
      case 'string':
        return this.string(raw, path);
      case 'int':
      case 'uint':
        return this.int(raw, path, type.t);
      case 'float32':
        return this.float(raw, path);
      case 'bool':
        return this.bool(raw, path);
      case 'duration':
        return this.duration(raw, path);
      case 'time':
        return this.string(raw, path);
      case 'any':
        return raw;
      case 'struct': {
        const one = liftOne(raw);
        if (one === undefined) return zero(type);
        if (typeof one !== 'object' || Array.isArray(one)) {
          this.errors.push(`'${path}' expected a map, got '${goKind(one)}'`);
          return zero(type);
        }
        return this.struct(one as Record<string, unknown>, type.fields, path, []);
      }
      case 'map': {
        const one = liftOne(raw);
        if (one === undefined) return undefined;
        if (typeof one !== 'object' || Array.isArray(one)) {
          this.errors.push(`'${path}' expected a map, got '${goKind(one)}'`);
          return undefined;
        }
        const out: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(one as Record<string, unknown>)) {
          const decoded = this.value(v, type.of, `${path}[${k}]`);
          out[k] = decoded === undefined ? (zero(type.of) ?? null) : decoded;
        }
        return out;
      }
      case 'slice': {
        // Weakly typed: one value where a list belongs is a list of one.
        const list = Array.isArray(raw) ? raw : [raw];
        return list.map((item, i) => {
          const decoded = this.value(item, type.of, `${path}[${i}]`);
          return decoded === undefined ? (zero(type.of) ?? null) : decoded;
        });
      }
    }
  }

  private string(raw: unknown, path: string): string {
    if (typeof raw === 'string') return raw;
    if (typeof raw === 'boolean') return raw ? '1' : '0';
    if (typeof raw === 'number') return String(raw);
    this.unconvertible(path, 'string', raw);
    return '';
  }

  private int(raw: unknown, path: string, kind: 'int' | 'uint'): number {
    if (typeof raw === 'number') {
      if (kind === 'uint' && raw < 0) {
        this.errors.push(`cannot parse '${path}', ${raw} overflows uint`);
        return 0;
      }
      return Math.trunc(raw);
    }
    if (typeof raw === 'boolean') return raw ? 1 : 0;
    if (typeof raw === 'string') {
      if (raw === '') return 0;
      const n = /^[+-]?\d+$/.test(raw) ? Number(raw) : NaN;
      if (Number.isNaN(n) || (kind === 'uint' && n < 0)) {
        const fn = kind === 'uint' ? 'ParseUint' : 'ParseInt';
        this.errors.push(`cannot parse '${path}' as ${kind}: strconv.${fn}: parsing ${goQuote(raw)}: invalid syntax`);
        return 0;
      }
      return n;
    }
    this.unconvertible(path, kind, raw);
    return 0;
  }

  private float(raw: unknown, path: string): number {
    if (typeof raw === 'number') return Math.fround(raw);
    if (typeof raw === 'boolean') return raw ? 1 : 0;
    if (typeof raw === 'string') {
      if (raw === '') return 0;
      const n = Number(raw);
      if (raw.trim() !== raw || Number.isNaN(n)) {
        this.errors.push(
          `cannot parse '${path}' as float: strconv.ParseFloat: parsing ${goQuote(raw)}: invalid syntax`,
        );
        return 0;
      }
      return Math.fround(n);
    }
    this.unconvertible(path, 'float32', raw);
    return 0;
  }

  private bool(raw: unknown, path: string): boolean {
    if (typeof raw === 'boolean') return raw;
    if (typeof raw === 'number') return raw !== 0;
    if (typeof raw === 'string') {
      if (raw === '') return false;
      if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(raw)) return true;
      if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(raw)) return false;
      this.errors.push(`cannot parse '${path}' as bool: strconv.ParseBool: parsing ${goQuote(raw)}: invalid syntax`);
      return false;
    }
    this.unconvertible(path, 'bool', raw);
    return false;
  }

  /** A duration, kept in milliseconds (Go's nanoseconds from a number). */
  private duration(raw: unknown, path: string): number {
    if (typeof raw === 'number') return raw / 1e6;
    if (typeof raw === 'string') {
      const ms = parseDuration(raw);
      if (ms === undefined) {
        this.errors.push(`error decoding '${path}': ${durationError(raw)}`);
        return 0;
      }
      return ms;
    }
    this.unconvertible(path, 'time.Duration', raw);
    return 0;
  }

  private unconvertible(path: string, goType: string, raw: unknown): void {
    this.errors.push(
      `'${path}' expected type '${goType}', got unconvertible type '${goTypeOf(raw)}', value: '${goValue(raw)}'`,
    );
  }
}

/** HookWeakDecodeFromSlice: a list of one (an HCL block) stands for its element; an empty list for nothing. */
function liftOne(raw: unknown): unknown {
  if (!Array.isArray(raw)) return raw;
  if (raw.length === 0) return undefined;
  return raw.length === 1 ? raw[0] : raw;
}

function zero(type: FieldType): unknown {
  switch (type.t) {
    case 'string':
    case 'time':
      return '';
    case 'int':
    case 'uint':
    case 'float32':
    case 'duration':
      return 0;
    case 'bool':
      return false;
    case 'struct':
      return type.pointer === true ? undefined : new Decoder().struct({}, type.fields, '', []);
    default:
      return undefined;
  }
}

function goKind(raw: unknown): string {
  if (Array.isArray(raw)) return 'slice';
  if (typeof raw === 'number') return 'float64';
  if (typeof raw === 'object' && raw !== null) return 'map';
  return typeof raw;
}

function goTypeOf(raw: unknown): string {
  if (Array.isArray(raw)) return '[]interface {}';
  if (typeof raw === 'number') return 'float64';
  if (typeof raw === 'object' && raw !== null) return 'map[string]interface {}';
  return typeof raw;
}

/** fmt's %v of a decoded JSON value. */
function goValue(raw: unknown): string {
  if (Array.isArray(raw)) return `[${raw.map(goValue).join(' ')}]`;
  if (typeof raw === 'object' && raw !== null) {
    const entries = Object.keys(raw)
      .sort()
      .map((k) => `${k}:${goValue((raw as Record<string, unknown>)[k])}`);
    return `map[${entries.join(' ')}]`;
  }
  return String(raw);
}

/** Go's %q for the printable strings these messages quote. */
export function goQuote(s: string): string {
  return escapeGoHtml(JSON.stringify(s));
}

// ---- writing back, as encoding/json writes the struct ----

/** The struct as Go's encoding/json writes it: field order, omitempty, durations as text. */
export function goJson(value: Readonly<GoStruct>, fields: readonly Field[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    if (f.ignored === true) continue;
    const v = value[f.name];
    if (f.omitEmpty === true && (f.nilable === true ? v === undefined : isEmpty(v, f.type))) continue;
    out[f.name] = jsonValue(v, f.type);
  }
  return out;
}

function jsonValue(v: unknown, type: FieldType): unknown {
  if (v === undefined || v === null) return null;
  switch (type.t) {
    case 'duration':
      return formatDuration(v as number);
    case 'struct':
      return goJson(v as GoStruct, type.fields);
    case 'slice':
      return (v as unknown[]).map((item) => jsonValue(item, type.of));
    case 'map': {
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(v as object).sort()) out[k] = jsonValue((v as Record<string, unknown>)[k], type.of);
      return out;
    }
    default:
      return v;
  }
}

/** Go's omitempty: false, 0, "", a nil pointer, an empty slice or map; never a struct value. */
function isEmpty(v: unknown, type: FieldType): boolean {
  if (v === undefined || v === null) return true;
  switch (type.t) {
    case 'struct':
      return false;
    case 'slice':
      return (v as unknown[]).length === 0;
    case 'map':
      return Object.keys(v as object).length === 0;
    case 'any':
      return false;
    default:
      return v === '' || v === 0 || v === false;
  }
}
