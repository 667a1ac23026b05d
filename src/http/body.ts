// Decoding JSON request bodies the way Consul's handlers do: field names matched
// case-insensitively, unknown fields rejected, and errors worded like Go's decoder behind the
// handler's prefix ("Request decode failed: EOF", `json: unknown field "Foo"`).
import { agentError, type AgentError } from '../core/errors.js';

export interface JsonObjectShape {
  /** The handler's prefix, e.g. "Request decode failed". */
  readonly prefix: string;
  /** The Go type named in "cannot unmarshal" errors, e.g. "structs.ConnectAuthorizeRequest". */
  readonly typeName: string;
  /** The accepted field names in their canonical spelling. */
  readonly fields: readonly string[];
}

export interface JsonObjectDecoder {
  (body: Buffer | undefined): Record<string, unknown>;
}

/** Builds a decoder for one body shape; the field lookup table is made once, here. */
export function jsonObjectDecoder(shape: JsonObjectShape): JsonObjectDecoder {
  const canonical = new Map(shape.fields.map((f) => [f.toLowerCase(), f]));
  const fail = (detail: string): AgentError => agentError('BODY_DECODE', { prefix: shape.prefix, detail });
  return (body) => {
    const text = body === undefined ? '' : body.toString('utf8');
    if (text.trim() === '') throw fail('EOF');
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw fail((err as Error).message);
    }
    if (parsed === null) return {};
    if (typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw fail(`json: cannot unmarshal ${goKind(parsed)} into Go value of type ${shape.typeName}`);
    }
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(parsed)) {
      const name = canonical.get(key.toLowerCase());
      if (name === undefined) throw fail(`json: unknown field ${JSON.stringify(key)}`);
      out[name] = value;
    }
    return out;
  };
}

function goKind(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'bool';
  return 'object';
}
