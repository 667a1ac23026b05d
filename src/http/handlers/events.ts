// /v1/event/fire/:name (PUT, the payload as the raw body, ?node, ?service, ?tag filters) and
// /v1/event/list (GET, ?name, blocking on Consul's event index), as Consul's agent serves them
// (docs/decisions.md#user-events). A fire writes the event's row, and the oldest rows past
// EVENTS_KEPT go in the same commit; each agent's list is its EventFeed's.
import { randomUUID } from 'node:crypto';
import type { Identity } from '../../acl/identity.js';
import type { EventFeed } from '../../events/event-feed.js';
import { EVENTS_KEPT, EVENTS_TABLE, eventIndex, newUserEvent, type UserEvent } from '../../events/user-event.js';
import type { StateStore, WriteOp } from '../../state/types.js';
import {
  parseBlockingParams,
  queryMetaHeaders,
  type BlockingLimits,
  type BlockingQueries,
  type Parked,
} from '../blocking.js';
import type { BrandHeaders } from '../brand.js';
import { jsonReply, type Reply } from '../reply.js';
import type { ApiRequest } from '../request.js';
import type { Route } from '../routes.js';

export interface EventDeps {
  readonly store: StateStore;
  /** This agent's events; undefined on a server running another agent's forwarded fire. */
  readonly feed: EventFeed | undefined;
  readonly blocking: BlockingQueries;
  readonly brand: BrandHeaders;
  readonly limits: BlockingLimits;
  readonly random: () => number;
}

/** The most a fire's body may be read to: the size check (512 bytes) says what was wrong. */
const FIRE_BODY_MAX = 64 * 1024;

export function eventFireRoutes(deps: Pick<EventDeps, 'store'>): Route[] {
  const fire = async (req: ApiRequest): Promise<Reply> => {
    const q = req.query;
    const event = newUserEvent(
      { name: req.rest, payload: req.body, node: q.get('node'), service: q.get('service'), tag: q.get('tag') },
      randomUUID(),
      0,
    );
    await deps.store.commit([...pruneOps(deps.store), { op: 'set', table: EVENTS_TABLE, key: event.ID, value: event }]);
    return jsonReply(event, req.pretty);
  };
  return [
    {
      path: '/v1/event/fire/',
      prefix: true,
      methods: { PUT: { handler: fire, acl: { resource: 'event', access: 'write', name: (req) => req.rest } } },
      maxBodyBytes: () => FIRE_BODY_MAX,
    },
  ];
}

export function eventListRoutes(deps: EventDeps): Route[] {
  const { brand } = deps;
  const list = (req: ApiRequest, identity: Identity): Reply | Parked => {
    const feed = deps.feed;
    if (feed === undefined) return jsonReply([], req.pretty);
    const params = parseBlockingParams(req.query, deps.limits, deps.random);
    const name = req.query.get('name') ?? '';
    const readable = (): { events: UserEvent[]; removed: boolean } => {
      const named = feed.list(name);
      const events = named.filter((e) => identity.authorizer.allowed('event', 'read', e.Name));
      return { events, removed: events.length < named.length };
    };
    return deps.blocking.answer(req, params, {
      target: (fn) => feed.watchOnce(fn),
      unordered: true,
      index: () => Number(indexOf(readable().events)),
      render: () => {
        const { events, removed } = readable();
        const meta = queryMetaHeaders(brand, indexOf(events));
        if (removed) meta.push([brand.resultsFilteredByAcls, 'true']);
        return jsonReply(events, req.pretty, meta);
      },
    });
  };
  return [{ path: '/v1/event/list', prefix: false, methods: { GET: { handler: list, acl: 'resolved' } } }];
}

/** Consul's index of a list: its last event's, or 1 when empty (never 0: clients would spin). */
function indexOf(events: readonly UserEvent[]): bigint {
  const last = events.at(-1);
  return last === undefined ? 1n : eventIndex(last.ID);
}

/** Deletes of the oldest rows, so that the table holds EVENTS_KEPT with the new one. */
function pruneOps(store: StateStore): WriteOp[] {
  const rows = store.list(EVENTS_TABLE, '');
  if (rows.length < EVENTS_KEPT) return [];
  return rows
    .sort((a, b) => a.createIndex - b.createIndex)
    .slice(0, rows.length - EVENTS_KEPT + 1)
    .map((row) => ({ op: 'delete', table: EVENTS_TABLE, key: row.key }));
}
