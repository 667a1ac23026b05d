// Reads a registration body or a config block as Consul's decoders do: a field is found whatever
// its case and with or without underscores (`EnableTagOverride`, `enable_tag_override`), and
// durations are Go duration text or nanoseconds. Unknown fields are ignored, as Go's decoder does.
import { parseDuration } from '../core/duration.js';
import { agentError } from '../core/errors.js';

export type Raw = Readonly<Record<string, unknown>>;

const normal = (name: string): string => name.replace(/_/g, '').toLowerCase();

/** One object's fields by normalized name; `path` names it in errors (`Check.Interval`). */
export class Fields {
  private readonly byName = new Map<string, unknown>();

  constructor(
    raw: Raw,
    private readonly path: string,
  ) {
    for (const [key, value] of Object.entries(raw)) {
      // The first spelling given wins, as Consul keeps a CamelCase field over its snake twin.
      const name = normal(key);
      if (!this.byName.has(name) && value !== null && value !== undefined) this.byName.set(name, value);
    }
  }

  private bad(name: string, expected: string): never {
    throw agentError('SERVICE_INVALID_FIELD', { field: this.path === '' ? name : `${this.path}.${name}`, expected });
  }

  has(name: string): boolean {
    return this.byName.has(normal(name));
  }

  string(name: string): string {
    const v = this.byName.get(normal(name));
    if (v === undefined) return '';
    if (typeof v !== 'string') this.bad(name, 'a string');
    return v;
  }

  bool(name: string): boolean {
    const v = this.byName.get(normal(name));
    if (v === undefined) return false;
    if (typeof v !== 'boolean') this.bad(name, 'a boolean');
    return v;
  }

  int(name: string): number {
    const v = this.byName.get(normal(name));
    if (v === undefined) return 0;
    if (typeof v !== 'number' || !Number.isInteger(v)) this.bad(name, 'an integer');
    return v;
  }

  /** Milliseconds from Go duration text ("10s") or a number of nanoseconds; 0 when absent. */
  duration(name: string): number {
    const v = this.byName.get(normal(name));
    if (v === undefined || v === '') return 0;
    if (typeof v === 'number') return v / 1e6;
    if (typeof v !== 'string') this.bad(name, 'a duration');
    const ms = parseDuration(v);
    if (ms === undefined) this.bad(name, 'a duration');
    return ms;
  }

  strings(name: string): string[] {
    const v = this.byName.get(normal(name));
    if (v === undefined) return [];
    if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) this.bad(name, 'a list of strings');
    return [...(v as string[])];
  }

  stringMap(name: string): Record<string, string> | undefined {
    const v = this.object(name);
    if (v === undefined) return undefined;
    for (const value of Object.values(v)) if (typeof value !== 'string') this.bad(name, 'a map of strings');
    return { ...(v as Record<string, string>) };
  }

  object(name: string): Raw | undefined {
    const v = this.byName.get(normal(name));
    if (v === undefined) return undefined;
    if (typeof v !== 'object' || Array.isArray(v)) this.bad(name, 'an object');
    return v as Raw;
  }

  /** A list of objects; a lone object counts as a list of one (HCL blocks). */
  objects(name: string): Raw[] {
    const v = this.byName.get(normal(name));
    if (v === undefined) return [];
    const list = Array.isArray(v) ? v : [v];
    if (list.some((item) => item === null || typeof item !== 'object' || Array.isArray(item)))
      this.bad(name, 'a list of objects');
    return list as Raw[];
  }

  /** Free-form JSON kept as given (a proxy's Config). */
  any(name: string): unknown {
    return this.byName.get(normal(name));
  }

  nested(name: string): Fields | undefined {
    const v = this.object(name);
    return v === undefined ? undefined : new Fields(v, this.path === '' ? name : `${this.path}.${name}`);
  }
}
