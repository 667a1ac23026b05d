// The body of PUT /v1/session/create, read as Consul's handler reads it (decodeBody with its
// FixupLockDelay and FixupChecks): field names match case-insensitively, unknown fields are
// ignored, an empty body takes every default; LockDelay is nanoseconds or a duration text, either
// below 1000 counting as seconds; naming Checks or NodeChecks, even empty, drops the serfHealth default.
import { durationError } from '../../core/duration.js';
import { lockDelayInput, type ServiceCheckRef, type SessionInput } from '../../sessions/model.js';
import { GoFields } from '../go-fields.js';

const PREFIX = 'Request decode failed';

export function decodeSessionCreate(body: Buffer | undefined): SessionInput {
  const text = body === undefined ? '' : body.toString('utf8');
  if (text.trim() === '') return {};
  const g = new GoFields(PREFIX, 'Session');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw g.fail((err as Error).message);
  }
  if (parsed === null) return {};
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw g.fail(
      `json: cannot unmarshal ${Array.isArray(parsed) ? 'array' : typeof parsed} into Go value of type structs.Session`,
    );
  }
  const o = lowerKeys(parsed);
  const checks = g.strings(o['checks'], 'Checks');
  const nodeChecks = g.strings(o['nodechecks'], 'NodeChecks');
  const named = 'checks' in o || 'nodechecks' in o;
  return {
    Name: g.string(o['name'], 'Name'),
    Node: g.string(o['node'], 'Node'),
    NodeChecks: named ? [...(nodeChecks ?? []), ...(checks ?? [])] : undefined,
    ServiceChecks: serviceChecks(g, o['servicechecks']),
    LockDelayMs: lockDelay(g, o['lockdelay']),
    Behavior: g.string(o['behavior'], 'Behavior'),
    TTL: g.string(o['ttl'], 'TTL'),
  };
}

/** The object's fields by lower-case name; of two spellings of one field the later wins, as in Go's decoder. */
function lowerKeys(value: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) out[key.toLowerCase()] = v;
  return out;
}

function lockDelay(g: GoFields, value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' && typeof value !== 'string') throw g.typeError(value, 'LockDelay', 'time.Duration');
  const ms = lockDelayInput(value);
  if (ms === undefined) throw g.fail(durationError(String(value)));
  return ms;
}

function serviceChecks(g: GoFields, value: unknown): ServiceCheckRef[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw g.typeError(value, 'ServiceChecks', '[]structs.ServiceCheck');
  return value.map((item) => {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      throw g.typeError(item, 'ServiceChecks', 'structs.ServiceCheck');
    }
    const c = lowerKeys(item);
    return {
      ID: g.string(c['id'], 'ServiceChecks.ID') ?? '',
      Namespace: g.string(c['namespace'], 'ServiceChecks.Namespace') ?? '',
    };
  });
}
