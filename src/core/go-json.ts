// JSON as Go's encoding/json writes it, for every layer that answers as Consul does: `<`, `>`, `&`,
// U+2028 and U+2029 escaped inside strings, and uint64 values (KV flags) exact beyond 2^53. Key
// order is the caller's object order. The HTTP body forms (compact, `?pretty`) are http/json.ts.
import { randomBytes } from 'node:crypto';

/** A uint64 kept as its decimal digits so values above 2^53 are written exactly. */
export class Uint64 {
  constructor(readonly digits: string) {}
  toJSON(): string {
    return U64_MARK + this.digits;
  }
}

// The mark carries a per-process random tag, so no string a client sends (a KV key of
// "\u0000u64:5") can pass for a Uint64 and come out as a bare number.
const U64_TAG = randomBytes(8).toString('hex');
const U64_MARK = `\u0000u64:${U64_TAG}:`;
// JSON.stringify writes the mark's NUL as the six characters \u0000.
const U64_ENCODED_MARK = `\\u0000u64:${U64_TAG}:`;
const U64_ENCODED = new RegExp(`"\\\\u0000u64:${U64_TAG}:(\\d+)"`, 'g');
const HTML_UNSAFE = /[<>&\u2028\u2029]/;
const HTML_UNSAFE_ALL = /[<>&\u2028\u2029]/g;
const HTML_ESCAPES: Record<string, string> = {
  '<': '\\u003c',
  '>': '\\u003e',
  '&': '\\u0026',
  '\u2028': '\\u2028',
  '\u2029': '\\u2029',
};

/** `value` as Go's encoder writes it; `indent` spaces per level (Go's MarshalIndent) when given. */
export function encodeGoJson(value: unknown, indent?: number): string {
  let out = indent === undefined ? JSON.stringify(value) : JSON.stringify(value, null, indent);
  if (out.includes(U64_ENCODED_MARK)) out = out.replace(U64_ENCODED, '$1');
  return escapeGoHtml(out);
}

/** JSON text with Go's HTML escapes applied: outside strings JSON never holds these characters. */
export function escapeGoHtml(json: string): string {
  return HTML_UNSAFE.test(json) ? json.replace(HTML_UNSAFE_ALL, (c) => HTML_ESCAPES[c] as string) : json;
}
