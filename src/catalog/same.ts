// Equality of catalog rows (JSON values: plain objects, arrays, strings, numbers, booleans, null),
// whatever their keys' order; a key present with `undefined` differs from one absent, as in
// isDeepStrictEqual. About three times faster than isDeepStrictEqual on these rows, which a sync of
// a node compares one by one (20,000 check rows against their JSON copies: 56 ms against 163 ms,
// in-process, one run on a loaded shared machine).
export function sameRow(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameRow(a[i], b[i])) return false;
    return true;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const keys = Object.keys(x);
  if (keys.length !== Object.keys(y).length) return false;
  for (const key of keys) if (!Object.hasOwn(y, key) || !sameRow(x[key], y[key])) return false;
  return true;
}
