// /v1/health/*: a node's checks, a service's checks, a service's (or its mesh) instances with
// their checks (`?passing`, `?tag`, `?node-meta`, `?filter`), and checks by state. Blocking reads
// wake only when their own answer's rows changed (docs/decisions.md D6); lists are filtered by
// node:read and service:read, with the results-filtered header.
import type { Identity } from '../../acl/identity.js';
import { checkJson, checkServiceNodeJson } from '../../catalog/json.js';
import {
  CATALOG_CHECKS,
  CATALOG_INDEX,
  CATALOG_NODES,
  connectIndexKey,
  nodeIndexKey,
  serviceIndexKey,
  type StoredCheck,
} from '../../catalog/model.js';
import type { Row } from '../../state/types.js';
import { agentError } from '../../core/errors.js';
import type { Parked } from '../blocking.js';
import type { Reply } from '../reply.js';
import type { ApiRequest } from '../request.js';
import type { Route } from '../routes.js';
import {
  allOf,
  answerRead,
  canReadNode,
  canReadService,
  filterOf,
  nodeMetaOf,
  pathName,
  readable,
  variantOf,
  type CatalogReadDeps,
} from './catalog-read.js';
import { instanceReadable, withTags } from './catalog.js';

const CHECK_FIELDS = new Set([
  'Node',
  'CheckID',
  'Name',
  'Status',
  'Notes',
  'Output',
  'ServiceID',
  'ServiceName',
  'ServiceTags',
  'Type',
]);
const NO_MAPS: ReadonlySet<string> = new Set();
const ENTRY_FIELDS = new Set([
  'Node.ID',
  'Node.Node',
  'Node.Address',
  'Node.Datacenter',
  'Node.TaggedAddresses',
  'Node.Meta',
  'Service.Kind',
  'Service.ID',
  'Service.Service',
  'Service.Tags',
  'Service.Address',
  'Service.Meta',
  'Service.Port',
  'Service.EnableTagOverride',
  'Service.Proxy.DestinationServiceName',
  'Service.Connect.Native',
  'Checks',
  // Selectors through the list: any check that matches (src/core/bexpr.ts).
  ...[...CHECK_FIELDS].map((field) => `Checks.${field}`),
]);
const ENTRY_MAPS = new Set(['Node.TaggedAddresses', 'Node.Meta', 'Service.Meta']);
const STATES = new Set(['any', 'passing', 'warning', 'critical', 'maintenance']);

/** A check the token may see: node:read on its node, and service:read on its service if it has one. */
function checkReadable(identity: Identity, row: Row<StoredCheck>): boolean {
  const c = row.value;
  return canReadNode(identity, c.Node) && (c.ServiceName === '' || canReadService(identity, c.ServiceName));
}

/** `?passing` as Go's strconv.ParseBool reads it; present and empty is true. */
function passingOf(req: ApiRequest): boolean {
  if (!req.query.has('passing')) return false;
  const value = req.query.get('passing') ?? '';
  if (value === '' || ['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  throw agentError('HEALTH_BAD_PASSING');
}

export function healthRoutes(deps: CatalogReadDeps): Route[] {
  const { queries } = deps;

  const checkList = (
    req: ApiRequest,
    identity: Identity,
    target: { table: string; key?: string },
    rows: () => Row<StoredCheck>[],
  ): Reply | Parked => {
    const predicate = filterOf(req, CHECK_FIELDS, NO_MAPS);
    const meta = nodeMetaOf(req);
    const keyed = target.key !== undefined;
    return answerRead(deps, req, identity, {
      target: target.key === undefined ? { table: target.table } : { table: target.table, key: target.key },
      variant: variantOf(req, ['filter', 'node-meta']),
      // A keyed index row moves with its node's Meta; the checks table does not.
      ...(meta !== undefined && !keyed ? { alsoReads: CATALOG_NODES } : {}),
      answer() {
        const all =
          meta === undefined ? rows() : rows().filter((r) => meta(queries.node(r.value.Node)?.value.Meta ?? {}));
        const { kept, filtered } = readable(all, (row) => checkReadable(identity, row));
        const shown = kept.map(checkJson);
        return { value: predicate === undefined ? shown : shown.filter(predicate), filtered };
      },
    });
  };

  const nodeChecks = (req: ApiRequest, identity: Identity): Reply | Parked => {
    const name = pathName(req, 'node');
    return checkList(req, identity, { table: CATALOG_INDEX, key: nodeIndexKey(name) }, () => queries.nodeChecks(name));
  };

  const serviceChecks = (req: ApiRequest, identity: Identity): Reply | Parked => {
    const name = pathName(req, 'service');
    return checkList(req, identity, { table: CATALOG_INDEX, key: serviceIndexKey(name) }, () =>
      queries.serviceChecks(name),
    );
  };

  const stateChecks = (req: ApiRequest, identity: Identity): Reply | Parked => {
    const state = req.rest;
    if (!STATES.has(state)) throw agentError('HEALTH_BAD_STATE');
    return checkList(req, identity, { table: CATALOG_CHECKS }, () =>
      state === 'any' ? queries.allChecks() : queries.allChecks().filter((c) => c.value.Status === state),
    );
  };

  const serviceHealth =
    (connect: boolean) =>
    (req: ApiRequest, identity: Identity): Reply | Parked => {
      const name = pathName(req, 'service');
      const passing = passingOf(req);
      const predicate = filterOf(req, ENTRY_FIELDS, ENTRY_MAPS);
      const meta = nodeMetaOf(req);
      const tags = allOf(req, 'tag');
      return answerRead(deps, req, identity, {
        target: { table: CATALOG_INDEX, key: connect ? connectIndexKey(name) : serviceIndexKey(name) },
        variant: variantOf(req, ['filter', 'node-meta', 'tag', 'passing']),
        answer() {
          const all = withTags(queries.instances(name, connect), tags).filter(
            (i) => meta === undefined || meta(i.node.value.Meta),
          );
          const { kept, filtered } = readable(all, (i) => instanceReadable(identity, i));
          let entries = queries.withChecks(kept);
          // Consul's ?passing drops an instance with any check not passing (its node's included).
          if (passing) entries = entries.filter((e) => e.checks.every((c) => c.value.Status === 'passing'));
          const shown = entries.map(checkServiceNodeJson);
          return { value: predicate === undefined ? shown : shown.filter(predicate), filtered };
        },
      });
    };

  return [
    { path: '/v1/health/node/', prefix: true, methods: { GET: { acl: 'resolved', handler: nodeChecks } } },
    { path: '/v1/health/checks/', prefix: true, methods: { GET: { acl: 'resolved', handler: serviceChecks } } },
    { path: '/v1/health/service/', prefix: true, methods: { GET: { acl: 'resolved', handler: serviceHealth(false) } } },
    { path: '/v1/health/connect/', prefix: true, methods: { GET: { acl: 'resolved', handler: serviceHealth(true) } } },
    { path: '/v1/health/state/', prefix: true, methods: { GET: { acl: 'resolved', handler: stateChecks } } },
  ];
}
