// The query string, parsed only when a handler first asks (the authorize hot path usually has none).
// Semantics follow Go's url.Values: a key may be present with an empty value (`?pretty`, `?recurse`).

export class Query {
  private params: URLSearchParams | undefined;
  constructor(readonly raw: string) {}

  private get values(): URLSearchParams {
    return (this.params ??= new URLSearchParams(this.raw));
  }

  /** True when the key is present, whatever its value. */
  has(key: string): boolean {
    return this.raw !== '' && this.values.has(key);
  }

  /** The first value of the key, or undefined when absent. */
  get(key: string): string | undefined {
    if (this.raw === '') return undefined;
    return this.values.get(key) ?? undefined;
  }

  /** Go's url.Values.Encode(): keys sorted, `k=v` pairs joined by `&` (used in error texts). */
  encode(): string {
    const keys = [...new Set(this.values.keys())].sort();
    const parts: string[] = [];
    for (const key of keys) {
      for (const value of this.values.getAll(key)) parts.push(`${encodeQueryPart(key)}=${encodeQueryPart(value)}`);
    }
    return parts.join('&');
  }
}

// Go's QueryEscape: like encodeURIComponent, but space becomes '+' and !'()* are escaped too.
function encodeQueryPart(s: string): string {
  return encodeURIComponent(s)
    .replace(/%20/g, '+')
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

export const EMPTY_QUERY = new Query('');
