// A registration body decoded as Consul's decodeBody does: one JSON object, unknown fields
// left to the domain (src/local/fields.ts ignores them), errors worded as Go's decoder words them.
import { agentError } from '../../core/errors.js';

export function decodeObjectBody(body: Buffer | undefined): Record<string, unknown> {
  const text = body === undefined ? '' : body.toString('utf8');
  const fail = (detail: string): Error => agentError('BODY_DECODE', { prefix: 'Request decode failed', detail });
  if (text.trim() === '') throw fail('EOF');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw fail((err as Error).message);
  }
  if (parsed === null) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    const kind = Array.isArray(parsed) ? 'array' : typeof parsed === 'boolean' ? 'bool' : typeof parsed;
    throw fail(`json: cannot unmarshal ${kind} into Go value of type structs.ServiceDefinition`);
  }
  return parsed as Record<string, unknown>;
}

/** Go's strconv.ParseBool. */
export function parseGoBool(text: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return false;
  return undefined;
}
