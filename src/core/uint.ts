// Go's strconv.ParseUint(s, 10, 64), with its error texts: Consul returns them for bad `flags` and
// `cas` values, and clients have seen them for years.
import { invalid, type AgentError } from './errors.js';

const UINT64_MAX = 18446744073709551615n;

export function parseUint64(text: string, code: string): bigint {
  if (!/^\d+$/.test(text)) throw syntaxError(text, code);
  const value = BigInt(text);
  if (value > UINT64_MAX) throw invalid(code, `strconv.ParseUint: parsing ${JSON.stringify(text)}: value out of range`);
  return value;
}

function syntaxError(text: string, code: string): AgentError {
  return invalid(code, `strconv.ParseUint: parsing ${JSON.stringify(text)}: invalid syntax`);
}
