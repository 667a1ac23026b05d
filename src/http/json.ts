// JSON as Consul's Go encoder writes it: compact with no trailing newline, or `?pretty` with a
// 4-space indent and one trailing newline; `<`, `>`, `&`, U+2028 and U+2029 escaped inside strings;
// uint64 values (KV flags) exact beyond 2^53. Key order is the caller's object order.
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

export function encodeJson(value: unknown, pretty: boolean): string {
  let out = pretty ? `${JSON.stringify(value, null, 4)}\n` : JSON.stringify(value);
  if (out.includes(U64_ENCODED_MARK)) out = out.replace(U64_ENCODED, '$1');
  // Outside strings JSON never contains these characters, so a global replace is safe.
  if (HTML_UNSAFE.test(out)) out = out.replace(HTML_UNSAFE_ALL, (c) => HTML_ESCAPES[c] as string);
  return out;
}
