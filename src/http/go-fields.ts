// Typed reads of a decoded JSON body the way Go's encoding/json fills a struct: null leaves the
// zero value, nested field names match case-insensitively, unknown fields are refused, and every
// failure is Go's text ("json: cannot unmarshal number into Go struct field ACLToken.Local of
// type bool") behind the handler's prefix. Shared by the body decoders of src/http/handlers/.
import { durationError, parseDuration } from '../core/duration.js';
import { agentError, type AgentError } from '../core/errors.js';

const RFC3339 = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$/;

export class GoFields {
  constructor(
    private readonly prefix: string,
    /** The Go struct named in type errors, e.g. "ACLToken". */
    private readonly struct: string,
  ) {}

  fail(detail: string): AgentError {
    return agentError('BODY_DECODE', { prefix: this.prefix, detail });
  }

  typeError(value: unknown, path: string, type: string): AgentError {
    return this.fail(
      `json: cannot unmarshal ${goValue(value)} into Go struct field ${this.struct}.${path} of type ${type}`,
    );
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
      throw this.fail(
        `json: cannot unmarshal number ${value} into Go struct field ${this.struct}.${path} of type ${type}`,
      );
    }
    return value;
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

  /** A nested struct: its fields under their canonical names; null is the zero value. */
  fields(value: unknown, path: string, type: string, names: readonly string[]): Record<string, unknown> | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'object' || Array.isArray(value)) throw this.typeError(value, path, type);
    const canonical = new Map(names.map((name) => [name.toLowerCase(), name]));
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
      const name = canonical.get(key.toLowerCase());
      if (name === undefined) throw this.fail(`json: unknown field ${JSON.stringify(key)}`);
      out[name] = v;
    }
    return out;
  }

  /** An array of structs, each read by `read` from its canonical fields. */
  objects<T>(
    value: unknown,
    path: string,
    arrayType: string,
    elementType: string,
    names: readonly string[],
    read: (o: Record<string, unknown>, path: string, g: this) => T,
  ): T[] | undefined {
    if (value === undefined || value === null) return undefined;
    if (!Array.isArray(value)) throw this.typeError(value, path, arrayType);
    return value.map((item) => read(this.fields(item, path, elementType, names) ?? {}, path, this));
  }

  /** A time.Time in RFC 3339, as epoch milliseconds (finer digits are dropped). */
  time(value: unknown): number | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string') throw this.fail('Time.UnmarshalJSON: input is not a JSON string');
    const m = RFC3339.exec(value);
    const ms =
      m === null ? NaN : Date.parse(`${m[1]}${m[2] === undefined ? '' : `.${m[2].slice(0, 3).padEnd(3, '0')}`}${m[3]}`);
    if (Number.isNaN(ms)) {
      throw this.fail(
        `parsing time ${JSON.stringify(value)} as "2006-01-02T15:04:05Z07:00": cannot parse ${JSON.stringify(value)} as "2006"`,
      );
    }
    return ms;
  }

  /** A time.Duration as Consul accepts it: a Go duration string, or nanoseconds; other types are ignored. */
  duration(value: unknown): number | undefined {
    if (typeof value === 'number') return value / 1e6;
    if (typeof value !== 'string') return undefined;
    const ms = parseDuration(value);
    if (ms === undefined) throw this.fail(durationError(value));
    return ms;
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

// config-entries/decode.ts does not share this: it maps each key to a field (aliases, unused keys), as mapstructure does.
/** The field of `o` named `name`, case-insensitively (an exact match first), as Go's decoder matches it. */
export function goField(o: Readonly<Record<string, unknown>>, name: string): unknown {
  if (name in o) return o[name];
  const lower = name.toLowerCase();
  for (const key of Object.keys(o)) if (key.toLowerCase() === lower) return o[key];
  return undefined;
}

/** `o` with its undefined fields deleted: only what a body set, so the domain fills Consul's defaults. */
export function definedOnly<T extends object>(o: T): T {
  for (const key of Object.keys(o) as (keyof T)[]) if (o[key] === undefined) delete o[key];
  return o;
}
