// The body of PUT /v1/config, decoded as Consul's ConfigApply decodes it (decodeBodyDeprecated into
// a map, then the kind's struct): Go's JSON errors behind "Request decoding failed".
import { agentError } from '../../core/errors.js';

/** The body as a JSON object (null: an empty one, as Go leaves a nil map). */
export function configEntryBody(body: Buffer | undefined): Record<string, unknown> {
  const text = body === undefined ? '' : body.toString('utf8');
  if (text.trim() === '') throw agentError('CONFIG_ENTRY_DECODE', { detail: 'EOF' });
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw agentError('CONFIG_ENTRY_DECODE', { detail: (err as Error).message });
  }
  if (parsed === null) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    const kind = Array.isArray(parsed)
      ? 'array'
      : typeof parsed === 'number'
        ? 'number'
        : typeof parsed === 'boolean'
          ? 'bool'
          : 'string';
    throw agentError('CONFIG_ENTRY_DECODE', {
      detail: `json: cannot unmarshal ${kind} into Go value of type map[string]interface {}`,
    });
  }
  return parsed as Record<string, unknown>;
}

/** `?cas`, when given: an unsigned integer, else Go's strconv error. */
export function casParam(value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  if (!/^\d+$/.test(value) || BigInt(value) > 18446744073709551615n) throw agentError('CONFIG_ENTRY_CAS', { value });
  return Number(value);
}
