// Plain-object helpers for config layers: the deep merge that stacks defaults, files and flags, and
// the deep freeze that makes the loaded config immutable for the agent's lifetime.

export type PlainObject = Record<string, unknown>;

export function isPlainObject(value: unknown): value is PlainObject {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * Merges `layers` left to right: objects merge key by key, anything else (scalars, arrays, an
 * object replacing a scalar) is replaced by the later layer. Inputs are not modified.
 */
export function deepMerge(...layers: readonly PlainObject[]): PlainObject {
  // No prototype: a "__proto__" key from a JSON file stays an ordinary (unknown) key instead of
  // replacing the merged object's prototype.
  const out = Object.create(null) as PlainObject;
  for (const layer of layers) {
    for (const [name, value] of Object.entries(layer)) {
      const current = out[name];
      out[name] = isPlainObject(current) && isPlainObject(value) ? deepMerge(current, value) : value;
    }
  }
  return out;
}

/** Freezes `value` and everything reachable from it; returns it for chaining. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
