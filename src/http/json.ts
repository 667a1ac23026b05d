// The response body forms of Consul's HTTP API: compact with no trailing newline, or `?pretty`
// with a 4-space indent and one trailing newline. Go's escaping and uint64s: core/go-json.ts.
import { encodeGoJson } from '../core/go-json.js';

export function encodeJson(value: unknown, pretty: boolean): string {
  return pretty ? `${encodeGoJson(value, 4)}\n` : encodeGoJson(value);
}
