// Keys accepted in a second spelling. `kv_max_value_size` lives under `limits` in Consul; svc-agent's
// own docs name it at the top level, so both spellings work (never both in one file).
import { isPlainObject, type PlainObject } from './object.js';

const ALIASES: readonly (readonly [alias: string, section: string, key: string])[] = [
  ['kv_max_value_size', 'limits', 'kv_max_value_size'],
];

/** Returns the layer with aliases moved to their canonical place, and any conflict found. */
export function resolveAliases(layer: PlainObject): { values: PlainObject; problems: string[] } {
  const problems: string[] = [];
  let values = layer;
  for (const [alias, section, key] of ALIASES) {
    if (!(alias in values)) continue;
    const { [alias]: value, ...rest } = values;
    const target = rest[section];
    if (isPlainObject(target) && key in target) {
      problems.push(`${alias}: set either ${alias} or ${section}.${key}, not both`);
      continue;
    }
    values = { ...rest, [section]: { ...(isPlainObject(target) ? target : {}), [key]: value } };
  }
  return { values, problems };
}
