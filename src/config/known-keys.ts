// Which keys of a config file the agent reads, which it ignores, and which it refuses: a key of
// schema.ts is read; a key only Consul has (consul-keys.ts) is ignored with a warning, so a
// Consul agent's file starts svc-agent; a key neither has is refused, with the nearest known key
// at its level offered, since it is most often a typo.
import { CONSUL_KEYS, type ConsulKeyTree } from './consul-keys.js';
import { nearestKey } from './did-you-mean.js';
import { isPlainObject, type PlainObject } from './object.js';
import { CONFIG_SCHEMA, ConfigKey, type ConfigTree } from './schema.js';

interface KeyCheck {
  /** Keys neither svc-agent nor Consul has: `invalid config key a.b (did you mean a.c?)`. */
  readonly problems: readonly string[];
  /** Consul keys the agent does not implement, each by its outermost dotted path. */
  readonly ignored: readonly string[];
}

export function checkKeys(raw: PlainObject): KeyCheck {
  const problems: string[] = [];
  const ignored: string[] = [];
  walk(raw, CONFIG_SCHEMA, CONSUL_KEYS, '', false, problems, ignored);
  return { problems, ignored };
}

/** The warning for an ignored key; load.ts prefixes the file. */
export const ignoredWarning = (path: string): string =>
  `${path} is ignored: svc-agent does not implement this Consul setting`;

function walk(
  raw: PlainObject,
  schema: ConfigTree | undefined,
  consul: ConsulKeyTree | undefined,
  prefix: string,
  insideIgnored: boolean,
  problems: string[],
  ignored: string[],
): void {
  for (const [name, value] of Object.entries(raw)) {
    const path = prefix + name;
    const ours = schema !== undefined && Object.hasOwn(schema, name) ? schema[name] : undefined;
    const theirs = consul !== undefined && Object.hasOwn(consul, name) ? consul[name] : undefined;
    const consulGroup = typeof theirs === 'object' ? theirs : undefined;
    if (ours !== undefined) {
      // A non-object where a group belongs is a type error, validate.ts's to report. A group
      // Consul leaves free (connect.ca_config) holds the keys of svc-agent's schema only.
      if (!(ours instanceof ConfigKey) && isPlainObject(value))
        walk(value, ours, consulGroup, `${path}.`, insideIgnored, problems, ignored);
      continue;
    }
    if (theirs !== undefined) {
      if (!insideIgnored) ignored.push(path);
      if (consulGroup !== undefined && isPlainObject(value))
        walk(value, undefined, consulGroup, `${path}.`, true, problems, ignored);
      continue;
    }
    const known = [...Object.keys(schema ?? {}), ...Object.keys(consul ?? {})];
    const near = nearestKey(name, known);
    problems.push(`invalid config key ${path}${near === undefined ? '' : ` (did you mean ${prefix}${near}?)`}`);
  }
}
