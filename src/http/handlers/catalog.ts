// /v1/catalog/*: register and deregister (ACL vetted by the domain: node:write, service:write),
// datacenters, nodes, services, a service's (or its mesh) instances, a node's services. Lists are
// filtered silently by node:read and service:read, with the results-filtered header.
import type { Identity } from '../../acl/identity.js';
import type { Catalog } from '../../catalog/catalog.js';
import { nodeJson, nodeServiceJson, serviceNodeJson } from '../../catalog/json.js';
import {
  CATALOG_INDEX,
  CATALOG_NODES,
  CATALOG_SERVICES,
  connectIndexKey,
  nodeIndexKey,
  serviceIndexKey,
} from '../../catalog/model.js';
import { nodeOfKey, type Instance } from '../../catalog/queries.js';
import type { Parked } from '../blocking.js';
import { jsonReply, type Reply } from '../reply.js';
import type { ApiRequest } from '../request.js';
import type { Route } from '../routes.js';
import { decodeDeregistration, decodeRegistration } from './catalog-body.js';
import {
  allOf,
  answerRead,
  canReadNode,
  canReadService,
  filterOf,
  nodeServiceFilterOf,
  nodeMetaOf,
  pathName,
  readable,
  variantOf,
  type CatalogReadDeps,
} from './catalog-read.js';

export interface CatalogDeps extends CatalogReadDeps {
  readonly catalog: Catalog;
  readonly datacenter: string;
}

const NODE_FIELDS = new Set(['ID', 'Node', 'Address', 'Datacenter', 'TaggedAddresses', 'Meta']);
const NODE_MAPS = new Set(['TaggedAddresses', 'Meta']);
const SERVICE_NODE_FIELDS = new Set([
  'ID',
  'Node',
  'Address',
  'Datacenter',
  'TaggedAddresses',
  'NodeMeta',
  'ServiceKind',
  'ServiceID',
  'ServiceName',
  'ServiceTags',
  'ServiceAddress',
  'ServiceMeta',
  'ServicePort',
  'ServiceEnableTagOverride',
  'ServiceWeights.Passing',
  'ServiceWeights.Warning',
  'ServiceProxy.DestinationServiceName',
  'ServiceProxy.DestinationServiceID',
  'ServiceConnect.Native',
]);
const SERVICE_NODE_MAPS = new Set(['TaggedAddresses', 'NodeMeta', 'ServiceMeta']);

/** An instance the token may see: node:read on its node and service:read on its service (Consul's ACL filter). */
export function instanceReadable(identity: Identity, instance: Instance): boolean {
  return canReadNode(identity, instance.node.value.Node) && canReadService(identity, instance.service.value.Service);
}

/** Instances carrying every `?tag` (Consul's ServiceTags filter). */
export function withTags<T extends Instance>(instances: readonly T[], tags: readonly string[]): T[] {
  if (tags.length === 0) return [...instances];
  return instances.filter((i) => tags.every((tag) => i.service.value.Tags.includes(tag)));
}

export function catalogRoutes(deps: CatalogDeps): Route[] {
  const { catalog, queries } = deps;

  const register = async (req: ApiRequest, identity: Identity): Promise<Reply> => {
    const reg = decodeRegistration(req.body);
    await catalog.register(reg, identity);
    return jsonReply(true, req.pretty);
  };

  const deregister = async (req: ApiRequest, identity: Identity): Promise<Reply> => {
    const dereg = decodeDeregistration(req.body);
    await catalog.deregister(dereg, identity);
    return jsonReply(true, req.pretty);
  };

  const nodes = (req: ApiRequest, identity: Identity): Reply | Parked => {
    const predicate = filterOf(req, NODE_FIELDS, NODE_MAPS);
    const meta = nodeMetaOf(req);
    return answerRead(deps, req, identity, {
      target: { table: CATALOG_NODES },
      variant: variantOf(req, ['filter', 'node-meta']),
      answer() {
        const all = queries.nodes().filter((row) => meta === undefined || meta(row.value.Meta));
        const { kept, filtered } = readable(all, (row) => canReadNode(identity, row.value.Node));
        const shown = kept.map(nodeJson);
        return { value: predicate === undefined ? shown : shown.filter(predicate), filtered };
      },
    });
  };

  const services = (req: ApiRequest, identity: Identity): Reply | Parked => {
    const predicate = filterOf(req, SERVICE_NODE_FIELDS, SERVICE_NODE_MAPS);
    const meta = nodeMetaOf(req);
    return answerRead(deps, req, identity, {
      target: { table: CATALOG_SERVICES },
      variant: variantOf(req, ['filter', 'node-meta']),
      // `?node-meta` and `?filter` look at each service's node, whose changes leave this table alone.
      ...(meta !== undefined || predicate !== undefined ? { alsoReads: CATALOG_NODES } : {}),
      answer() {
        const tags = new Map<string, Set<string>>();
        let filtered = false;
        for (const row of queries.allServices()) {
          const s = row.value;
          if (!canReadService(identity, s.Service)) {
            filtered = true;
            continue;
          }
          if (meta !== undefined || predicate !== undefined) {
            const node = queries.node(nodeOfKey(row.key));
            if (node === undefined) continue;
            if (meta !== undefined && !meta(node.value.Meta)) continue;
            if (predicate !== undefined && !predicate(serviceNodeJson({ node, service: row }))) continue;
          }
          let set = tags.get(s.Service);
          if (set === undefined) tags.set(s.Service, (set = new Set()));
          for (const tag of s.Tags) set.add(tag);
        }
        const value: Record<string, string[]> = {};
        for (const name of [...tags.keys()].sort()) value[name] = [...(tags.get(name) as Set<string>)].sort();
        return { value, filtered };
      },
    });
  };

  const serviceNodes =
    (connect: boolean) =>
    (req: ApiRequest, identity: Identity): Reply | Parked => {
      const name = pathName(req, 'service');
      const predicate = filterOf(req, SERVICE_NODE_FIELDS, SERVICE_NODE_MAPS);
      const meta = nodeMetaOf(req);
      const tags = allOf(req, 'tag');
      return answerRead(deps, req, identity, {
        target: { table: CATALOG_INDEX, key: connect ? connectIndexKey(name) : serviceIndexKey(name) },
        variant: variantOf(req, ['filter', 'node-meta', 'tag']),
        answer() {
          const all = withTags(queries.instances(name, connect), tags).filter(
            (i) => meta === undefined || meta(i.node.value.Meta),
          );
          const { kept, filtered } = readable(all, (i) => instanceReadable(identity, i));
          const shown = kept.map(serviceNodeJson);
          return { value: predicate === undefined ? shown : shown.filter(predicate), filtered };
        },
      });
    };

  /** `map`: /v1/catalog/node/:node's Services keyed by ID; else node-services' list. */
  const nodeServices =
    (map: boolean) =>
    (req: ApiRequest, identity: Identity): Reply | Parked => {
      const name = pathName(req, 'node');
      const predicate = nodeServiceFilterOf(req);
      return answerRead(deps, req, identity, {
        target: { table: CATALOG_INDEX, key: nodeIndexKey(name) },
        variant: variantOf(req, ['filter']),
        answer() {
          const node = queries.node(name);
          if (node === undefined) return { value: map ? null : { Node: null, Services: null }, filtered: false };
          if (!canReadNode(identity, name))
            return { value: map ? null : { Node: null, Services: null }, filtered: true };
          const { kept, filtered } = readable(queries.nodeServices(name), (row) =>
            canReadService(identity, row.value.Service),
          );
          const all = kept.map(nodeServiceJson);
          const shown = predicate === undefined ? all : all.filter(predicate);
          if (!map) return { value: { Node: nodeJson(node), Services: shown }, filtered };
          const byId: Record<string, unknown> = {};
          for (const service of shown.sort((a, b) => compare(a.ID as string, b.ID as string)))
            byId[service.ID as string] = service;
          return { value: { Node: nodeJson(node), Services: byId }, filtered };
        },
      });
    };

  const datacenters = (req: ApiRequest): Reply => jsonReply([deps.datacenter], req.pretty);

  return [
    { path: '/v1/catalog/register', methods: { PUT: { acl: 'resolved', handler: register } } },
    { path: '/v1/catalog/deregister', methods: { PUT: { acl: 'resolved', handler: deregister } } },
    { path: '/v1/catalog/datacenters', methods: { GET: { acl: 'none', handler: datacenters } } },
    { path: '/v1/catalog/nodes', methods: { GET: { acl: 'resolved', handler: nodes } } },
    { path: '/v1/catalog/services', methods: { GET: { acl: 'resolved', handler: services } } },
    { path: '/v1/catalog/service/', prefix: true, methods: { GET: { acl: 'resolved', handler: serviceNodes(false) } } },
    { path: '/v1/catalog/connect/', prefix: true, methods: { GET: { acl: 'resolved', handler: serviceNodes(true) } } },
    { path: '/v1/catalog/node/', prefix: true, methods: { GET: { acl: 'resolved', handler: nodeServices(true) } } },
    {
      path: '/v1/catalog/node-services/',
      prefix: true,
      methods: { GET: { acl: 'resolved', handler: nodeServices(false) } },
    },
  ];
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
