// Validation and canonical form of commit ops: every op is checked before it takes an index, and
// the store applies the JSON round-trip of the ops, exactly what the WAL replays after a restart
// (so a live view and a recovered view can never differ, e.g. on NaN, Date or undefined fields).
import { agentError, type AgentError } from '../core/errors.js';
import type { WriteOp } from './types.js';

export interface CanonicalOps {
  /** The ops as JSON, as written into the WAL record. */
  readonly json: string;
  /** The parsed copy the view applies (no reference to the caller's objects survives). */
  readonly ops: readonly WriteOp[];
}

export function canonicalOps(ops: readonly WriteOp[]): CanonicalOps {
  if (!Array.isArray(ops)) throw bad('ops must be an array');
  let json: string;
  try {
    json = JSON.stringify(ops);
  } catch (cause) {
    throw agentError('STATE_INVALID_OP', { detail: 'commit ops are not JSON-serialisable', cause });
  }
  const parsed = JSON.parse(json) as unknown[];
  parsed.forEach(checkOp);
  return { json, ops: parsed as WriteOp[] };
}

function checkOp(value: unknown, i: number): void {
  if (typeof value !== 'object' || value === null) throw bad(`op ${i} is not an object`);
  const op = value as Record<string, unknown>;
  if (typeof op['table'] !== 'string' || op['table'] === '') throw bad(`op ${i} needs a table name`);
  switch (op['op']) {
    case 'set':
    case 'delete':
    case 'check':
      if (op['op'] === 'set' && !('value' in op)) throw bad(`op ${i} (set) has no JSON value`);
      if (op['op'] === 'check' && op['ifIndex'] === undefined) throw bad(`op ${i} (check) needs an ifIndex`);
      if (op['lease'] !== undefined && !(typeof op['lease'] === 'string' && /^[1-9]\d{0,18}$/.test(op['lease']))) {
        throw bad(`op ${i} has an invalid lease`);
      }
      if (typeof op['key'] !== 'string') throw bad(`op ${i} needs a string key`);
      if (op['ifIndex'] !== undefined && !(Number.isSafeInteger(op['ifIndex']) && (op['ifIndex'] as number) >= 0)) {
        throw bad(`op ${i} has an invalid ifIndex`);
      }
      return;
    case 'delete-prefix':
      if (typeof op['prefix'] !== 'string') throw bad(`op ${i} needs a string prefix`);
      return;
    default:
      throw bad(`op ${i} has unknown kind ${JSON.stringify(op['op'])}`);
  }
}

function bad(detail: string): AgentError {
  return agentError('STATE_INVALID_OP', { detail });
}
