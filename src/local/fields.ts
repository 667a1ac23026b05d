// Reads a registration body or a config block as Consul's decoders do: a field is found whatever
// its case and with or without underscores (`EnableTagOverride`, `enable_tag_override`), and
// durations are Go duration text or nanoseconds. Unknown fields are ignored, as Go's decoder does
// for the API; a config file's block is read inside `findUnknownKeys`, which names each key of a
// service or check object that no field reads, with the field probably meant, as Consul's config
// parser refuses them.
import { nearestKey } from '../config/did-you-mean.js';
import { parseDuration } from '../core/duration.js';
import { agentError } from '../core/errors.js';

export type Raw = Readonly<Record<string, unknown>>;

const normal = (name: string): string => name.replace(/_/g, '').toLowerCase();

/** A key of a config block that no field reads: where (`Check`), the key as written, and the field probably meant. */
export interface UnknownKey {
  readonly path: string;
  readonly key: string;
  readonly near: string | undefined;
}

/** The objects read while findUnknownKeys runs that asked to be checked (Fields.checked()). */
let checking: Fields[] | undefined;

/** Runs `read` (a synchronous decode) and lists the keys of its checked objects that no field read. */
export function findUnknownKeys<T>(read: () => T): { value: T; unknown: UnknownKey[] } {
  const outer = checking;
  const seen: Fields[] = [];
  checking = seen;
  try {
    const value = read();
    return { value, unknown: seen.flatMap((f) => f.unread()) };
  } finally {
    checking = outer;
  }
}

/** One object's fields by normalized name; `path` names it in errors (`Check.Interval`). */
export class Fields {
  private readonly byName = new Map<string, unknown>();
  /** The fields asked for, by normalized name, each with the spelling it was asked in. */
  private readonly asked = new Map<string, string>();

  constructor(
    private readonly raw: Raw,
    private readonly path: string,
  ) {
    for (const [key, value] of Object.entries(raw)) {
      // The first spelling given wins, as Consul keeps a CamelCase field over its snake twin.
      const name = normal(key);
      if (!this.byName.has(name) && value !== null && value !== undefined) this.byName.set(name, value);
    }
  }

  /** Has findUnknownKeys, if running, check this object's keys (a service's or a check's, not a free-form map). */
  checked(): this {
    checking?.push(this);
    return this;
  }

  /** Fields Consul takes that svc-agent reads nowhere (`Token`): known, so never unknown keys. */
  known(...names: string[]): void {
    for (const name of names) this.asked.set(normal(name), name);
  }

  /** The keys given that no field read, each with the nearest field, in the key's own style. */
  unread(): UnknownKey[] {
    const unknown: UnknownKey[] = [];
    for (const key of Object.keys(this.raw)) {
      if (this.asked.has(normal(key))) continue;
      const snake = key === key.toLowerCase();
      const names = [...this.asked.values()].map((name) => (snake ? snakeCase(name) : name));
      unknown.push({ path: this.path, key, near: nearestKey(key, names) });
    }
    return unknown;
  }

  private value(name: string): unknown {
    const key = normal(name);
    this.asked.set(key, name);
    return this.byName.get(key);
  }

  private bad(name: string, expected: string): never {
    throw agentError('SERVICE_INVALID_FIELD', { field: this.path === '' ? name : `${this.path}.${name}`, expected });
  }

  has(name: string): boolean {
    return this.value(name) !== undefined;
  }

  string(name: string): string {
    const v = this.value(name);
    if (v === undefined) return '';
    if (typeof v !== 'string') this.bad(name, 'a string');
    return v;
  }

  bool(name: string): boolean {
    const v = this.value(name);
    if (v === undefined) return false;
    if (typeof v !== 'boolean') this.bad(name, 'a boolean');
    return v;
  }

  int(name: string): number {
    const v = this.value(name);
    if (v === undefined) return 0;
    if (typeof v !== 'number' || !Number.isInteger(v)) this.bad(name, 'an integer');
    return v;
  }

  /** Milliseconds from Go duration text ("10s") or a number of nanoseconds; 0 when absent. */
  duration(name: string): number {
    const v = this.value(name);
    if (v === undefined || v === '') return 0;
    if (typeof v === 'number') return v / 1e6;
    if (typeof v !== 'string') this.bad(name, 'a duration');
    const ms = parseDuration(v);
    if (ms === undefined) this.bad(name, 'a duration');
    return ms;
  }

  strings(name: string): string[] {
    const v = this.value(name);
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
    const v = this.value(name);
    if (v === undefined) return undefined;
    if (typeof v !== 'object' || Array.isArray(v)) this.bad(name, 'an object');
    return v as Raw;
  }

  /** A list of objects; a lone object counts as a list of one (HCL blocks). */
  objects(name: string): Raw[] {
    const v = this.value(name);
    if (v === undefined) return [];
    const list = Array.isArray(v) ? v : [v];
    if (list.some((item) => item === null || typeof item !== 'object' || Array.isArray(item)))
      this.bad(name, 'a list of objects');
    return list as Raw[];
  }

  /** Free-form JSON kept as given (a proxy's Config). */
  any(name: string): unknown {
    return this.value(name);
  }

  nested(name: string): Fields | undefined {
    const v = this.object(name);
    return v === undefined ? undefined : new Fields(v, this.path === '' ? name : `${this.path}.${name}`);
  }
}

/** `DeregisterCriticalServiceAfter` → `deregister_critical_service_after`, `TLSSkipVerify` → `tls_skip_verify`. */
export function snakeCase(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .toLowerCase();
}
