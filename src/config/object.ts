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

/** The value at `parts` in `object`, or undefined where the path leaves the tree. */
export function getPath(object: PlainObject, [head, ...rest]: readonly string[]): unknown {
  if (head === undefined || !Object.hasOwn(object, head)) return undefined;
  const value = object[head];
  if (rest.length === 0) return value;
  return isPlainObject(value) ? getPath(value, rest) : undefined;
}

/** A copy of `object` without the key at `parts`; a group left empty by it goes too. */
export function withoutPath(object: PlainObject, [head, ...rest]: readonly string[]): PlainObject {
  if (head === undefined) return object;
  const { [head]: child, ...others } = object;
  if (rest.length === 0 || !isPlainObject(child)) return others;
  const kept = withoutPath(child, rest);
  return Object.keys(kept).length === 0 ? others : { ...others, [head]: kept };
}

/** A copy of `object` with `value` at `parts`, groups made where missing (a non-object in the way is replaced). */
export function withPath(object: PlainObject, [head, ...rest]: readonly string[], value: unknown): PlainObject {
  if (head === undefined) return object;
  const child = object[head];
  return { ...object, [head]: rest.length === 0 ? value : withPath(isPlainObject(child) ? child : {}, rest, value) };
}
