// The checks behind docs/decisions.md#size-limits: every field a write stores is bounded, so every
// row, and so every page of rows an agent reads, is bounded. Each domain module declares its own
// limits and checks them with these, on writes only. Sizes are UTF-8 bytes, as Go's len() counts
// Consul's limits; a refusal is a 413 that names the field and its limit.
import { agentError } from './errors.js';

/** UTF-8 bytes of `text`; a string of at most max/3 UTF-16 units needs no count. */
function fits(text: string, max: number): boolean {
  return text.length * 3 <= max || Buffer.byteLength(text, 'utf8') <= max;
}

/** Refuses a string over `max` bytes. */
export function limitBytes(field: string, value: string | undefined, max: number): void {
  if (value === undefined || fits(value, max)) return;
  throw agentError('LIMIT_BYTES', { field, size: Buffer.byteLength(value, 'utf8'), max });
}

/** Refuses a list (or a map, by its pairs) of more than `max` entries. */
export function limitEntries(field: string, count: number, max: number): void {
  if (count > max) throw agentError('LIMIT_ENTRIES', { field, count, max });
}

/** Refuses a free-form value (a proxy's config, a check's definition) whose JSON is over `max` bytes. */
export function limitJson(field: string, value: unknown, max: number): void {
  if (value === undefined) return;
  const text = JSON.stringify(value) ?? '';
  if (!fits(text, max)) throw agentError('LIMIT_JSON', { field, size: Buffer.byteLength(text, 'utf8'), max });
}

export interface MapLimits {
  readonly pairs: number;
  readonly key: number;
  readonly value: number;
}

/** A map of strings: its pairs, then each key, then each value (the key named, once it is known to be short). */
export function limitStringMap(
  field: string,
  map: Readonly<Record<string, string>> | undefined,
  limits: MapLimits,
): void {
  if (map === undefined) return;
  const keys = Object.keys(map);
  limitEntries(field, keys.length, limits.pairs);
  for (const key of keys) {
    limitBytes(`${field} key`, key, limits.key);
    limitBytes(`${field}[${JSON.stringify(key)}]`, map[key], limits.value);
  }
}

/** A list of strings: its length, then each entry. */
export function limitStrings(field: string, list: readonly string[] | undefined, count: number, each: number): void {
  if (list === undefined) return;
  limitEntries(field, list.length, count);
  list.forEach((item, i) => limitBytes(`${field}[${i}]`, item, each));
}

/** `text` cut to at most `max` UTF-8 bytes, at a character boundary. */
export function cutUtf8(text: string, max: number): string {
  if (fits(text, max)) return text;
  const bytes = Buffer.from(text, 'utf8');
  let end = max;
  // Back off continuation bytes (10xxxxxx) so that no character is split.
  while (end > 0 && ((bytes[end] as number) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString('utf8');
}
