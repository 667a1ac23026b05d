// The authorize request body: a scanner for the shape proxies send (one JSON object of string
// fields, ASCII, no escapes) that reads the fields straight out of the bytes, and behind it the
// general decoder for everything else, which words each failure as Consul does. The scanner
// only ever takes a body JSON.parse would read to the same fields, and hands any other body on.
// Hot path: bench/micro/authorize-calls.ts counts its instructions.
import { agentError } from '../../core/errors.js';
import { jsonObjectDecoder } from '../body.js';

export interface AuthorizeBody {
  Target: string;
  ClientCertURI: string;
  Namespace: string;
}

const DECODE_PREFIX = 'Request decode failed';
const FIELDS = ['Target', 'ClientCertURI', 'ClientCertSerial', 'Namespace'] as const;

/** The general decoder: Consul's error texts for every malformed body (EOF, arrays, unknown keys). */
const decodeSlow = jsonObjectDecoder({
  prefix: DECODE_PREFIX,
  typeName: 'structs.ConnectAuthorizeRequest',
  fields: FIELDS,
});

/**
 * The body's fields; throws the 400 the endpoint answers with. `latin1`: the body's bytes as
 * latin1 text, when the caller has it already (latin1 maps each byte to one character, and the
 * scanner refuses any byte over 0x7e, so what it reads is the UTF-8 text too).
 */
export function decodeAuthorizeBody(body: Buffer | undefined, latin1?: string): AuthorizeBody {
  if (body === undefined || body.length === 0) return typed(decodeSlow(body));
  return scanAuthorizeBody(latin1 ?? body.toString('latin1')) ?? decodeParsed(body);
}

// What Go's encoder and JSON.stringify write: a compact object of up to four members (the four
// fields, any order), each value printable ASCII with no escapes. One regular expression reads it
// all (native code, a few instructions a byte, where a JavaScript loop over the characters costs
// ~40 and each indexOf ~350): member i's Target, ClientCertURI and Namespace are groups 3i+1..3i+3.
const VALUE = '[ !#-\\[\\]-~]*';
const MEMBER = `(?:"Target":"(${VALUE})"|"ClientCertURI":"(${VALUE})"|"ClientCertSerial":"${VALUE}"|"Namespace":"(${VALUE})")`;
const COMPACT_BODY = new RegExp(`^\\{(?:${MEMBER}(?:,${MEMBER}(?:,${MEMBER}(?:,${MEMBER})?)?)?)?\\}$`);

/**
 * The fields of a compact body, as JSON.parse reads them (a repeated key: the last value wins);
 * undefined for any other body.
 */
export function scanAuthorizeBody(s: string): AuthorizeBody | undefined {
  const m = COMPACT_BODY.exec(s);
  if (m === null) return undefined;
  return { Target: lastOf(m, 1), ClientCertURI: lastOf(m, 2), Namespace: lastOf(m, 3) };
}

/** The field's value in the last member that set it. */
function lastOf(m: RegExpExecArray, group: number): string {
  return m[group + 9] ?? m[group + 6] ?? m[group + 3] ?? m[group] ?? '';
}

/** One JSON.parse and a switch over its keys; anything unusual goes to the general decoder. */
function decodeParsed(body: Buffer): AuthorizeBody {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    parsed = undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return typed(decodeSlow(body));
  const o = parsed as Record<string, unknown>;
  const out: AuthorizeBody = { Target: '', ClientCertURI: '', Namespace: '' };
  for (const key in o) {
    switch (key) {
      case 'Target':
        out.Target = stringField(o.Target, key);
        break;
      case 'ClientCertURI':
        out.ClientCertURI = stringField(o.ClientCertURI, key);
        break;
      case 'Namespace':
        out.Namespace = stringField(o.Namespace, key);
        break;
      case 'ClientCertSerial':
        stringField(o.ClientCertSerial, key);
        break;
      default:
        return typed(decodeSlow(body));
    }
  }
  return out;
}

function stringField(value: unknown, field: string): string {
  if (value === null || value === undefined) return '';
  if (typeof value !== 'string') throw typeError(value, field);
  return value;
}

function typed(raw: Record<string, unknown>): AuthorizeBody {
  const out: AuthorizeBody = { Target: '', ClientCertURI: '', Namespace: '' };
  for (const [name, value] of Object.entries(raw)) {
    if (value === null || value === undefined) continue;
    if (typeof value !== 'string') throw typeError(value, name);
    if (name !== 'ClientCertSerial') out[name as keyof AuthorizeBody] = value;
  }
  return out;
}

function typeError(value: unknown, field: string): Error {
  const kind = Array.isArray(value)
    ? 'array'
    : typeof value === 'number'
      ? 'number'
      : typeof value === 'boolean'
        ? 'bool'
        : 'object';
  return agentError('BODY_DECODE', {
    prefix: DECODE_PREFIX,
    detail: `json: cannot unmarshal ${kind} into Go struct field ConnectAuthorizeRequest.${field} of type string`,
  });
}
