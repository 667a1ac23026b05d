// The `service`/`services` and `check`/`checks` blocks of config files: services and checks the
// agent registers at start and on reload (src/local/). Each file's blocks are taken out before
// the files are merged, so blocks from several files (a -config-dir) add up as in Consul instead
// of merging into one; their fields are validated by src/local/ when they are applied, with the
// size limits of an API registration (docs/decisions.md#size-limits), the error naming the block.
import { deepMerge, isPlainObject, type PlainObject } from './object.js';

export interface Registrations {
  readonly services: readonly PlainObject[];
  readonly checks: readonly PlainObject[];
}

export const NO_REGISTRATIONS: Registrations = Object.freeze({ services: [], checks: [] });

const SERVICE_KEYS = ['service', 'services'];
const CHECK_KEYS = ['check', 'checks'];
/** Keys whose HCL blocks (or lists of objects) stay lists instead of being merged into one object. */
const LIST_KEYS = new Set(['check', 'checks', 'upstreams', 'paths', 'services', 'service']);

/** The file each block came from, for its problems' lines (the block objects are the config's own). */
const ORIGINS = new WeakMap<object, string>();

/** The config file a service or check block was written in, when it came from one. */
export function blockOrigin(block: object): string | undefined {
  return ORIGINS.get(block);
}

/** Takes the registration blocks out of one file's values (from `path`); a problem names the key and file. */
export function takeRegistrations(
  values: PlainObject,
  path?: string,
): {
  values: PlainObject;
  registrations: Registrations;
  problems: string[];
} {
  // No prototype: a "__proto__" key stays an ordinary (unknown) key, as in deepMerge.
  const rest = Object.create(null) as PlainObject;
  const services: PlainObject[] = [];
  const checks: PlainObject[] = [];
  const problems: string[] = [];
  for (const [key, value] of Object.entries(values)) {
    const into = SERVICE_KEYS.includes(key) ? services : CHECK_KEYS.includes(key) ? checks : undefined;
    if (into === undefined) {
      rest[key] = value;
      continue;
    }
    const list = Array.isArray(value) ? value : [value];
    for (const item of list) {
      if (isPlainObject(item)) {
        into.push(item);
        if (path !== undefined) ORIGINS.set(item, path);
      } else problems.push(`${key}: expected an object or a list of objects`);
    }
  }
  return { values: rest, registrations: { services, checks }, problems };
}

/**
 * HCL's parse of a registration block (every block a list of bodies) folded as sources.ts folds
 * the rest, except that check lists and upstreams stay lists.
 */
export function foldRegistration(value: unknown, key = ''): unknown {
  if (Array.isArray(value)) {
    if (LIST_KEYS.has(key) && value.every(isPlainObject)) return value.map((v) => foldRegistration(v));
    if (value.length > 0 && value.every(isPlainObject))
      return deepMerge(...value.map((v) => foldRegistration(v) as PlainObject));
    return value;
  }
  if (isPlainObject(value))
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, foldRegistration(v, k.toLowerCase())]));
  return value;
}
