// /v1/session/*, as Consul's agent serves it (agent/session_endpoint.go): create, destroy and renew
// change shared state (a client agent forwards them to a server, which holds the leases), and
// info, node and list read the sessions table of this agent's view, blocking on it and filtered by
// session:read on each session's node. docs/decisions.md#sessions.
import { permissionDenied } from '../../acl/errors.js';
import type { Identity } from '../../acl/identity.js';
import { agentError } from '../../core/errors.js';
import { SESSIONS_TABLE, sessionJson, type StoredSession } from '../../sessions/model.js';
import type { Sessions } from '../../sessions/sessions.js';
import type { Row, StateStore } from '../../state/types.js';
import {
  parseBlockingParams,
  queryMetaHeaders,
  type BlockingLimits,
  type BlockingQueries,
  type Parked,
} from '../blocking.js';
import type { BrandHeaders } from '../brand.js';
import { JSON_TYPE, jsonReply, type Reply } from '../reply.js';
import type { ApiRequest } from '../request.js';
import type { Route } from '../routes.js';
import { decodeSessionCreate } from './session-body.js';

/** The writes run where sessions are kept: undefined on a client agent, which forwards them. */
export function sessionWriteRoutes(deps: { readonly sessions: () => Sessions }): Route[] {
  const writable = (identity: Identity, node: string): void => {
    if (!identity.authorizer.allowed('session', 'write', node))
      throw permissionDenied(identity, 'session', 'write', node);
  };

  const create = async (req: ApiRequest, identity: Identity): Promise<Reply> => {
    const sessions = deps.sessions();
    const input = decodeSessionCreate(req.body);
    // The asking agent's node, where a client agent forwarded the create.
    const own = req.head.originNode;
    writable(identity, sessions.nodeOf(input, own));
    return jsonReply({ ID: await sessions.create(input, own) }, req.pretty);
  };

  const destroy = async (req: ApiRequest, identity: Identity): Promise<Reply> => {
    const id = req.rest;
    if (id === '') throw agentError('SESSION_MISSING');
    const sessions = deps.sessions();
    const row = sessions.get(id);
    if (row !== undefined) writable(identity, row.value.Node);
    await sessions.end(id, 'destroyed');
    return { status: 200, body: req.pretty ? 'true\n' : 'true', contentType: JSON_TYPE };
  };

  const renew = async (req: ApiRequest, identity: Identity): Promise<Reply> => {
    const id = req.rest;
    if (id === '') throw agentError('SESSION_MISSING');
    const sessions = deps.sessions();
    const before = sessions.get(id);
    if (before !== undefined) writable(identity, before.value.Node);
    const row = await sessions.renew(id);
    if (row === undefined) throw agentError('SESSION_NOT_FOUND', { id });
    return jsonReply([sessionJson(row)], req.pretty);
  };

  const put = (handler: (req: ApiRequest, identity: Identity) => Promise<Reply>) => ({
    PUT: { handler, acl: 'resolved' as const },
  });
  return [
    { path: '/v1/session/create', prefix: false, methods: put(create) },
    { path: '/v1/session/destroy/', prefix: true, methods: put(destroy) },
    { path: '/v1/session/renew/', prefix: true, methods: put(renew) },
  ];
}

export interface SessionReadDeps {
  readonly store: StateStore;
  readonly blocking: BlockingQueries;
  readonly brand: BrandHeaders;
  readonly limits: BlockingLimits;
  readonly random: () => number;
}

export function sessionReadRoutes(deps: SessionReadDeps): Route[] {
  const { store, brand } = deps;

  /** A blocking read of the sessions that `pick` chooses, as the caller may see them. */
  const answer = (req: ApiRequest, identity: Identity, pick: () => Row<StoredSession>[]): Reply | Parked => {
    const params = parseBlockingParams(req.query, deps.limits, deps.random);
    return deps.blocking.answer(req, params, {
      target: { table: SESSIONS_TABLE },
      index: () => store.tableIndex(SESSIONS_TABLE),
      render: (index) => {
        const all = pick();
        const rows = all.filter((row) => identity.authorizer.allowed('session', 'read', row.value.Node));
        const meta = queryMetaHeaders(brand, index);
        if (rows.length < all.length) meta.push([brand.resultsFilteredByAcls, 'true']);
        return jsonReply(rows.map(sessionJson), req.pretty, meta);
      },
    });
  };
  const all = (): Row<StoredSession>[] => store.list<StoredSession>(SESSIONS_TABLE, '');

  const info = (req: ApiRequest, identity: Identity): Reply | Parked => {
    const id = req.rest;
    if (id === '') throw agentError('SESSION_MISSING');
    return answer(req, identity, () => {
      const row = store.get<StoredSession>(SESSIONS_TABLE, id);
      return row === undefined ? [] : [row];
    });
  };
  const node = (req: ApiRequest, identity: Identity): Reply | Parked => {
    const name = req.rest;
    if (name === '') throw agentError('SESSION_NODE_NAME_MISSING');
    return answer(req, identity, () => all().filter((row) => row.value.Node === name));
  };
  const list = (req: ApiRequest, identity: Identity): Reply | Parked => answer(req, identity, all);

  const get = (handler: (req: ApiRequest, identity: Identity) => Reply | Parked) => ({
    GET: { handler, acl: 'resolved' as const },
  });
  return [
    { path: '/v1/session/info/', prefix: true, methods: get(info) },
    { path: '/v1/session/node/', prefix: true, methods: get(node) },
    { path: '/v1/session/list', prefix: false, methods: get(list) },
  ];
}
