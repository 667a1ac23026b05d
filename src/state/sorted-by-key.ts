// Key order for the state store (UTF-8 byte order) and a cached, sorted array over a Map's values,
// so list() and prefix scans are two binary searches and a slice instead of a sort per read.

/**
 * Compares keys in UTF-8 byte order, which is code point order. Plain `<` compares UTF-16 code
 * units and ranks U+10000.. (surrogates D800-DFFF) below U+E000-FFFF; only that case is remapped.
 */
export function compareKeys(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return x >= 0xd800 && y >= 0xd800 ? codePointRank(x) - codePointRank(y) : x - y;
  }
  return a.length - b.length;
}

/** Maps E000-FFFF below the surrogates (D800-DFFF) so that supplementary characters sort last. */
function codePointRank(unit: number): number {
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}

/**
 * Above this size an insert or delete drops the cached order instead of splicing it: a splice is
 * a memmove of the whole tail (about 50 µs at 64k entries), which would dominate a write-heavy
 * huge table, while a rebuild on the next read is one O(n log n) sort.
 */
const SPLICE_LIMIT = 65_536;

/** Values of `source` sorted by key; the owner reports every insert, replace and delete. */
export class SortedByKey<T extends { readonly key: string }> {
  private sorted: T[] | undefined;

  constructor(private readonly source: ReadonlyMap<string, T>) {}

  /** A key that was not in the map before was added (call after the map is updated). */
  inserted(item: T): void {
    const sorted = this.sorted;
    if (sorted === undefined) return;
    if (sorted.length >= SPLICE_LIMIT) {
      this.sorted = undefined;
      return;
    }
    sorted.splice(lowerBound(sorted, item.key), 0, item);
  }

  /** An existing key got a new value object; the order is unchanged. */
  replaced(item: T): void {
    const sorted = this.sorted;
    if (sorted === undefined) return;
    const at = lowerBound(sorted, item.key);
    if (sorted[at]?.key === item.key) sorted[at] = item;
    else this.sorted = undefined; // never expected; rebuild rather than serve a wrong order
  }

  /** A key was removed from the map. */
  removed(key: string): void {
    const sorted = this.sorted;
    if (sorted === undefined) return;
    if (sorted.length >= SPLICE_LIMIT) {
      this.sorted = undefined;
      return;
    }
    const at = lowerBound(sorted, key);
    if (sorted[at]?.key === key) sorted.splice(at, 1);
    else this.sorted = undefined;
  }

  /** Every value whose key starts with `prefix`, in key order (a fresh array). */
  withPrefix(prefix: string): T[] {
    const sorted = this.order();
    if (prefix === '') return sorted.slice();
    const start = lowerBound(sorted, prefix);
    return sorted.slice(start, prefixEnd(sorted, prefix, start));
  }

  /** Calls `fn` for each value under `prefix` without copying (fn must not mutate the map). */
  forEachWithPrefix(prefix: string, fn: (item: T) => void): void {
    const sorted = this.order();
    const start = prefix === '' ? 0 : lowerBound(sorted, prefix);
    const end = prefix === '' ? sorted.length : prefixEnd(sorted, prefix, start);
    for (let i = start; i < end; i++) fn(sorted[i] as T);
  }

  private order(): T[] {
    if (this.sorted === undefined) {
      this.sorted = Array.from(this.source.values()).sort((a, b) => compareKeys(a.key, b.key));
    }
    return this.sorted;
  }
}

/** First position whose key is >= `key`. */
function lowerBound<T extends { readonly key: string }>(sorted: readonly T[], key: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareKeys((sorted[mid] as T).key, key) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** End of the run of keys starting with `prefix` that begins at `start` (keys with a prefix are contiguous). */
function prefixEnd<T extends { readonly key: string }>(sorted: readonly T[], prefix: string, start: number): number {
  let lo = start;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((sorted[mid] as T).key.startsWith(prefix)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
