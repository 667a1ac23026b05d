// /v1/connect/intentions/*: list, legacy create/read/update/delete by ID, by-name read/upsert/
// delete (`/exact`), match and check (docs/decisions.md#intentions-api). Thin: parameters and names
// are parsed here, the store and the one validator do the rest. Blocking reads wake only when their
// own answer changed (docs/decisions.md D6). ACLs as in docs/decisions.md#intention-acls: the
// list is filtered, with the results-filtered header.
import { permissionDenied } from '../../acl/errors.js';
import { requirePermission, type Identity } from '../../acl/identity.js';
import {
  destinationIntentions,
  firstSourceMatch,
  sourceIntentions,
  type IndexedIntention,
} from '../../connect/intentions/index.js';
import { INTENTIONS_TABLE, intentionJson, intentionKey } from '../../connect/intentions/model.js';
import type { IntentionStore } from '../../connect/intentions/store.js';
import { assertValidIntention, normalizeIntention, type IntentionInput } from '../../connect/intentions/validate.js';
import { compileFilter, type Predicate } from '../../core/bexpr.js';
import { agentError } from '../../core/errors.js';
import { isUuid } from '../../core/ids.js';
import type { BlockingLimits, BlockingQueries, WatchedRead } from '../blocking.js';
import { parseBlockingParams, queryMetaHeaders } from '../blocking.js';
import type { BrandHeaders } from '../brand.js';
import { requestNamespace } from '../namespace.js';
import { JSON_TYPE, errorTextReply, jsonReply, type Reply } from '../reply.js';
import type { ApiRequest } from '../request.js';
import type { AclRequirement, Outcome, Route } from '../routes.js';
import { decodeIntentionBody } from './intention-body.js';
import {
  aclHidden,
  canRead,
  checkPartitionParam,
  defaultNamespace,
  FILTER_FIELDS,
  FILTER_MAPS,
  fingerprint,
  filterView,
  noPeer,
  parseServiceName,
  requiredParam,
  type ServiceRef,
} from './intention-query.js';

export interface IntentionsDeps {
  readonly intentions: IntentionStore;
  readonly blocking: BlockingQueries;
  readonly brand: BrandHeaders;
  readonly limits: BlockingLimits;
  readonly random: () => number;
  readonly connectEnabled: boolean;
}

export function intentionsRoutes(deps: IntentionsDeps): Route[] {
  const { intentions, brand } = deps;

  const enabled = (): void => {
    if (!deps.connectEnabled) throw agentError('CONNECT_DISABLED');
  };

  const bool = (value: boolean, pretty: boolean): Reply => ({
    status: 200,
    body: pretty ? `${value}\n` : String(value),
    contentType: JSON_TYPE,
  });

  /**
   * A blocking read over the intentions table that answers when its own content changes: while
   * parked, a table change whose answer has the same fingerprint keeps it parked. The reply is
   * always labelled with the current table index.
   */
  const changeAware = (
    req: ApiRequest,
    compute: () => { print: string; render: (index: number) => Reply },
  ): Outcome => {
    const params = parseBlockingParams(req.query, deps.limits, deps.random);
    let baseline: string | undefined;
    const read: WatchedRead = {
      target: { table: INTENTIONS_TABLE },
      index() {
        const index = intentions.current().tableIndex;
        if (index <= params.minIndex) {
          baseline ??= compute().print;
          return index;
        }
        if (baseline !== undefined && compute().print === baseline) return params.minIndex;
        return index;
      },
      render: () => compute().render(intentions.current().tableIndex),
    };
    return deps.blocking.answer(req, params, read);
  };

  // ---- GET, POST /v1/connect/intentions ----

  const list = (req: ApiRequest, identity: Identity): Outcome => {
    enabled();
    checkPartitionParam(req);
    const filterText = req.query.get('filter');
    let predicate: Predicate | undefined;
    if (filterText) predicate = compileFilter(filterText, FILTER_FIELDS, FILTER_MAPS);
    const pretty = req.pretty;
    // A namespace asked for (?ns or the header) scopes the list to destinations in it; `*` or none: all.
    const scope = requestNamespace(req, undefined, '*');
    return changeAware(req, () => {
      const all = intentions.current().all;
      const readable = all.filter(
        (e) => (scope === '*' || e.row.value.DestinationNS === scope) && canRead(identity, e.row.value),
      );
      const shown =
        predicate === undefined ? readable : readable.filter((e) => (predicate as Predicate)(filterView(e.row)));
      return {
        print: fingerprint(shown),
        render(index) {
          const meta = queryMetaHeaders(brand, index);
          if (aclHidden(all, scope, identity)) meta.push([brand.resultsFilteredByAcls, 'true']);
          return jsonReply(
            shown.map((e) => intentionJson(e.row)),
            pretty,
            meta,
          );
        },
      };
    });
  };

  const create = async (req: ApiRequest, identity: Identity): Promise<Reply> => {
    enabled();
    checkPartitionParam(req);
    const body = decodeIntentionBody(req.body, 'Failed to decode request body');
    const candidate = normalizeIntention(body, defaultNamespace(req, identity));
    requirePermission(identity, 'intention', 'write', candidate.DestinationName);
    if (body.ID) throw agentError('INTENTION_ID_SET');
    assertValidIntention(candidate, 'legacy');
    const id = await intentions.createLegacy(candidate);
    return jsonReply({ ID: id }, req.pretty);
  };

  // ---- GET, PUT, DELETE /v1/connect/intentions/:id ----

  const checkId = (id: string): void => {
    // memdb's UUID index refuses a malformed ID before any lookup; Consul turns that into a 400.
    if (id.length !== 36) throw agentError('INTENTION_BAD_ID', { reason: 'UUID must be 36 characters' });
    if (!isUuid(id)) throw agentError('INTENTION_BAD_ID', { reason: 'UUID improperly formatted' });
  };

  const getById = (req: ApiRequest, identity: Identity): Outcome => {
    enabled();
    const id = req.rest;
    checkId(id);
    const pretty = req.pretty;
    return changeAware(req, () => {
      const entry = intentions.current().byId.get(id);
      return {
        print: entry === undefined ? '' : fingerprint([entry]),
        render(index) {
          const meta = queryMetaHeaders(brand, index);
          if (entry === undefined) return errorTextReply(agentError('INTENTION_READ_NOT_FOUND'), meta);
          // Rendered possibly long after the request (a parked query): a denial is a reply, not a throw.
          const x = entry.row.value;
          if (!canRead(identity, x)) {
            return errorTextReply(permissionDenied(identity, 'intention', 'read', x.DestinationName), meta);
          }
          return jsonReply(intentionJson(entry.row), pretty, meta);
        },
      };
    });
  };

  const updateById = async (req: ApiRequest, identity: Identity): Promise<Reply> => {
    enabled();
    checkPartitionParam(req);
    const body = decodeIntentionBody(req.body, 'Request decode failed');
    const id = req.rest;
    checkId(id);
    const candidate = normalizeIntention(body, defaultNamespace(req, identity));
    const existing = intentions.current().byId.get(id);
    if (existing === undefined) throw agentError('INTENTION_NOT_FOUND', { action: 'modify', id });
    requirePermission(identity, 'intention', 'write', existing.row.value.DestinationName);
    requirePermission(identity, 'intention', 'write', candidate.DestinationName);
    assertValidIntention(candidate, 'legacy');
    await intentions.updateLegacy(id, candidate);
    return jsonReply({ ID: id }, req.pretty);
  };

  const deleteById = async (req: ApiRequest, identity: Identity): Promise<Reply> => {
    enabled();
    const id = req.rest;
    checkId(id);
    const existing = intentions.current().byId.get(id);
    if (existing === undefined) throw agentError('INTENTION_NOT_FOUND', { action: 'delete', id });
    requirePermission(identity, 'intention', 'write', existing.row.value.DestinationName);
    await intentions.deleteLegacy(id);
    return bool(true, req.pretty);
  };

  // ---- GET, PUT, DELETE /v1/connect/intentions/exact ----

  const exactPair = (
    req: ApiRequest,
    identity: Identity,
    allowPeerSource: boolean,
  ): { source: ServiceRef | 'peer'; destination: ServiceRef } => {
    const sourceText = requiredParam(req, 'source');
    const destinationText = requiredParam(req, 'destination');
    const ns = defaultNamespace(req, identity);
    const source = parseServiceName(sourceText, ns, 'source');
    const destination = noPeer(parseServiceName(destinationText, ns, 'destination'), 'destination', destinationText);
    return { source: allowPeerSource ? source : noPeer(source, 'source', sourceText), destination };
  };

  const getExact = (req: ApiRequest, identity: Identity): Outcome => {
    enabled();
    checkPartitionParam(req);
    const { source, destination } = exactPair(req, identity, true);
    if (
      !identity.authorizer.allowed('intention', 'read', destination.name) &&
      (source === 'peer' || !identity.authorizer.allowed('intention', 'read', source.name))
    ) {
      throw permissionDenied(identity, 'intention', 'read', destination.name);
    }
    const key =
      source === 'peer'
        ? undefined
        : intentionKey(destination.namespace, destination.name, source.namespace, source.name);
    const pretty = req.pretty;
    return changeAware(req, () => {
      const row = key === undefined ? undefined : intentions.get(key);
      return {
        print: row === undefined ? '' : `${row.modifyIndex}`,
        render(index) {
          const meta = queryMetaHeaders(brand, index);
          if (row === undefined) return errorTextReply(agentError('INTENTION_READ_NOT_FOUND'), meta);
          return jsonReply(intentionJson(row), pretty, meta);
        },
      };
    });
  };

  /** The exact write endpoints declare intentions:write on the destination named in the query. */
  const writeExactDestination = (req: ApiRequest): AclRequirement => {
    enabled();
    checkPartitionParam(req);
    const destinationText = requiredParam(req, 'destination');
    requiredParam(req, 'source');
    const destination = noPeer(
      parseServiceName(destinationText, 'default', 'destination'),
      'destination',
      destinationText,
    );
    return { resource: 'intention', access: 'write', name: () => destination.name };
  };

  const putExact = async (req: ApiRequest, identity: Identity): Promise<Reply> => {
    const { source, destination } = exactPair(req, identity, false) as { source: ServiceRef; destination: ServiceRef };
    const body = decodeIntentionBody(req.body, 'Request decode failed');
    // The pair comes from the URL; identity fields of the body (ID included) are ignored.
    const input: IntentionInput = {
      Description: body.Description,
      SourceType: body.SourceType,
      Action: body.Action,
      Permissions: body.Permissions,
      Meta: body.Meta,
      SourceNS: source.namespace,
      SourceName: source.name,
      DestinationNS: destination.namespace,
      DestinationName: destination.name,
    };
    const candidate = normalizeIntention(input, defaultNamespace(req, identity));
    assertValidIntention(candidate, 'exact');
    await intentions.upsertExact(candidate);
    return bool(true, req.pretty);
  };

  const deleteExact = async (req: ApiRequest, identity: Identity): Promise<Reply> => {
    const { source, destination } = exactPair(req, identity, false) as { source: ServiceRef; destination: ServiceRef };
    await intentions.deleteExact(destination.namespace, destination.name, source.namespace, source.name);
    return bool(true, req.pretty);
  };

  // ---- GET /v1/connect/intentions/match ----

  const match = (req: ApiRequest, identity: Identity): Outcome => {
    enabled();
    checkPartitionParam(req);
    const all = new URLSearchParams(req.head.rawQuery);
    const by = all.getAll('by');
    if (by.length !== 1) throw agentError('INTENTION_MISSING_PARAM', { name: 'by' });
    const bySource = by[0] === 'source';
    if (!bySource && by[0] !== 'destination') throw agentError('INTENTION_MATCH_BY');
    const names = all.getAll('name');
    if (names.length === 0) throw agentError('INTENTION_MISSING_PARAM', { name: 'name' });
    const ns = defaultNamespace(req, identity);
    const refs = names.map((n) => noPeer(parseServiceName(n, ns, 'name'), 'name', n));
    for (const ref of refs) requirePermission(identity, 'intention', 'read', ref.name);
    const pretty = req.pretty;
    return changeAware(req, () => {
      const index = intentions.current();
      const lists = refs.map((ref) =>
        bySource
          ? sourceIntentions(index, ref.namespace, ref.name)
          : destinationIntentions(index, ref.namespace, ref.name).list,
      );
      return {
        print: lists.map(fingerprint).join('|'),
        render(tableIndex) {
          const meta = queryMetaHeaders(brand, tableIndex);
          meta.push([brand.effectiveConsistency, 'leader']);
          // Keys as given, sorted as Go writes a map; an empty match is [].
          const order = names
            .map((name, i) => [name, i] as const)
            .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
          const out: Record<string, unknown> = {};
          for (const [name, i] of order)
            out[name] = (lists[i] as readonly IndexedIntention[]).map((e) => intentionJson(e.row));
          return jsonReply(out, pretty, meta);
        },
      };
    });
  };

  // ---- GET /v1/connect/intentions/check ----

  /** Parses check's parameters in Consul's order; the permission is service:read on the destination. */
  const checkParams = (req: ApiRequest): { source: string; destination: string } => {
    enabled();
    checkPartitionParam(req);
    const source = requiredParam(req, 'source');
    const destination = requiredParam(req, 'destination');
    const sourceType = req.query.get('source-type');
    if (sourceType !== undefined && sourceType !== 'consul') throw agentError('INTENTION_SOURCE_TYPE', { sourceType });
    return { source, destination };
  };

  const checkAcl = (req: ApiRequest): AclRequirement => {
    const { destination } = checkParams(req);
    const ref = noPeer(parseServiceName(destination, 'default', 'destination'), 'destination', destination);
    return { resource: 'service', access: 'read', name: () => ref.name };
  };

  const check = (req: ApiRequest, identity: Identity): Reply => {
    const params = checkParams(req);
    const ns = defaultNamespace(req, identity);
    const source = noPeer(parseServiceName(params.source, ns, 'source'), 'source', params.source);
    const destination = noPeer(
      parseServiceName(params.destination, ns, 'destination'),
      'destination',
      params.destination,
    );
    const entry = firstSourceMatch(
      destinationIntentions(intentions.current(), destination.namespace, destination.name),
      source.namespace,
      source.name,
    );
    const allowed = entry === undefined ? identity.authorizer.defaultAllow : entry.allowed;
    return jsonReply({ Allowed: allowed }, req.pretty);
  };

  return [
    {
      path: '/v1/connect/intentions',
      methods: { GET: { acl: 'resolved', handler: list }, POST: { acl: 'resolved', handler: create } },
    },
    { path: '/v1/connect/intentions/match', methods: { GET: { acl: 'resolved', handler: match } } },
    { path: '/v1/connect/intentions/check', methods: { GET: { acl: checkAcl, handler: check } } },
    {
      path: '/v1/connect/intentions/exact',
      methods: {
        GET: { acl: 'resolved', handler: getExact },
        PUT: { acl: writeExactDestination, handler: putExact },
        DELETE: { acl: writeExactDestination, handler: deleteExact },
      },
    },
    {
      path: '/v1/connect/intentions/',
      prefix: true,
      methods: {
        GET: { acl: 'resolved', handler: getById },
        PUT: { acl: 'resolved', handler: updateById },
        DELETE: { acl: 'resolved', handler: deleteById },
      },
    },
  ];
}
