// User events as Consul fires them (agent/user_event.go): a name, an optional payload and regular
// expression filters on the node name, a service name and its tags. An event is a row of the
// events table, so it reaches every agent the way any shared row does (the embedded store alone,
// etcd's view in a cluster: docs/decisions.md#user-events); each agent keeps the ones that pass its
// filters. Its blocking index is Consul's: the last event's ID folded to 64 bits, not monotonic.
import { z } from 'zod';
import { agentError } from '../core/errors.js';

export const EVENTS_TABLE = 'events';

/** Events kept, in the table and in each agent's list: Consul keeps the most recent 256. */
export const EVENTS_KEPT = 256;

/** Consul's gossip limit on one user event, its fields together, before encoding. */
export const USER_EVENT_SIZE_LIMIT = 512;

/** A user event as stored and as `/v1/event/*` shows it (Payload base64, null when empty). */
export interface UserEvent {
  readonly ID: string;
  readonly Name: string;
  readonly Payload: string | null;
  readonly NodeFilter: string;
  readonly ServiceFilter: string;
  readonly TagFilter: string;
  readonly Version: number;
  readonly LTime: number;
}

export const userEventSchema = z.object({
  ID: z.string().uuid(),
  Name: z.string().min(1).max(USER_EVENT_SIZE_LIMIT),
  Payload: z
    .string()
    .max(USER_EVENT_SIZE_LIMIT * 2)
    .nullable(),
  NodeFilter: z.string().max(USER_EVENT_SIZE_LIMIT),
  ServiceFilter: z.string().max(USER_EVENT_SIZE_LIMIT),
  TagFilter: z.string().max(USER_EVENT_SIZE_LIMIT),
  Version: z.number().int(),
  LTime: z.number().int().nonnegative(),
}) satisfies z.ZodType<UserEvent>;

export interface FireParams {
  readonly name: string;
  readonly payload: Buffer | undefined;
  readonly node?: string | undefined;
  readonly service?: string | undefined;
  readonly tag?: string | undefined;
}

/** A new event from what was fired, checked as Consul checks it; `ltime` orders it among the agent's events. */
export function newUserEvent(params: FireParams, id: string, ltime: number): UserEvent {
  if (params.name === '') throw agentError('EVENT_NAME_MISSING');
  const [node, service, tag] = [params.node ?? '', params.service ?? '', params.tag ?? ''];
  if (tag !== '' && service === '')
    throw agentError('EVENT_INVALID', { detail: 'Cannot provide tag filter without service filter' });
  for (const [what, filter] of [
    ['node', node],
    ['service', service],
    ['tag', tag],
  ] as const) {
    if (filter !== '' && compiled(filter) === undefined)
      throw agentError('EVENT_INVALID', {
        detail: `Invalid ${what} filter: ${JSON.stringify(filter)} is not a regular expression`,
      });
  }
  const payload = params.payload ?? Buffer.alloc(0);
  const size = Buffer.byteLength(params.name) + payload.length + id.length + node.length + service.length + tag.length;
  if (size > USER_EVENT_SIZE_LIMIT) throw agentError('EVENT_TOO_LARGE', { max: USER_EVENT_SIZE_LIMIT, size });
  return {
    ID: id,
    Name: params.name,
    Payload: payload.length === 0 ? null : payload.toString('base64'),
    NodeFilter: node,
    ServiceFilter: service,
    TagFilter: tag,
    Version: 1,
    LTime: ltime,
  };
}

/** A service of this agent, as the filters see it. */
export interface LocalService {
  readonly name: string;
  readonly tags: readonly string[];
}

/** Whether this agent takes the event (Consul's shouldProcessUserEvent): its node and one of its services match. */
export function passesFilters(event: UserEvent, nodeName: string, services: readonly LocalService[]): boolean {
  if (event.NodeFilter !== '' && compiled(event.NodeFilter)?.test(nodeName) !== true) return false;
  if (event.ServiceFilter === '') return true;
  const service = compiled(event.ServiceFilter);
  const tag = event.TagFilter === '' ? undefined : compiled(event.TagFilter);
  if (service === undefined || (event.TagFilter !== '' && tag === undefined)) return false;
  return services.some((s) => service.test(s.name) && (tag === undefined || s.tags.some((t) => tag.test(t))));
}

/** Consul's index of an event list: the last event's UUID as 128 bits, its two halves XORed. */
export function eventIndex(id: string): bigint {
  const hex = id.replaceAll('-', '');
  return BigInt(`0x${hex.slice(0, 16)}`) ^ BigInt(`0x${hex.slice(16, 32)}`);
}

/** Go's regexp matches anywhere in the string, as an unanchored JavaScript RegExp does. */
function compiled(source: string): RegExp | undefined {
  try {
    return new RegExp(source, 'u');
  } catch {
    return undefined;
  }
}
