// Go's strconv.ParseUint(s, 10, 64), with its error texts: Consul returns them for bad `flags` and
// `cas` values, and clients have seen them for years.
import { agentError, type AgentError, type CodeTaking } from './errors.js';

const UINT64_MAX = 18446744073709551615n;

export function parseUint64(text: string, code: CodeTaking<'text' | 'reason'>): bigint {
  if (!/^\d+$/.test(text)) throw syntaxError(text, code);
  const value = BigInt(text);
  if (value > UINT64_MAX) throw agentError(code, { text, reason: 'value out of range' });
  return value;
}

function syntaxError(text: string, code: CodeTaking<'text' | 'reason'>): AgentError {
  return agentError(code, { text, reason: 'invalid syntax' });
}
