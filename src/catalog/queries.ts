// The catalog's reads, from the store's view: nodes, a service's instances joined with their nodes
// and checks, a node's services and checks, checks by state. Instances are found through the
// by-name rows written with each service (model.ts): a read costs its own instances, not the catalog.
import type { Row, StateStore } from '../state/types.js';
import {
  CATALOG_BY_CONNECT,
  CATALOG_BY_SERVICE,
  CATALOG_CHECKS,
  CATALOG_NODES,
  CATALOG_SERVICES,
  namePrefix,
  nodePrefix,
  type StoredCheck,
  type StoredNode,
  type StoredService,
} from './model.js';

type ViewReads = Pick<StateStore, 'get' | 'list'>;

/** One instance: its node's row and its own. */
export interface Instance {
  readonly node: Row<StoredNode>;
  readonly service: Row<StoredService>;
}

/** An instance with the checks that decide its health: its node's, then its own. */
export interface CheckedInstance extends Instance {
  readonly checks: readonly Row<StoredCheck>[];
}

export class CatalogQueries {
  constructor(private readonly store: ViewReads) {}

  nodes(): Row<StoredNode>[] {
    return this.store.list<StoredNode>(CATALOG_NODES, '');
  }

  node(name: string): Row<StoredNode> | undefined {
    return this.store.get<StoredNode>(CATALOG_NODES, name);
  }

  /** Every service row, in key order (node, then service ID). */
  allServices(): Row<StoredService>[] {
    return this.store.list<StoredService>(CATALOG_SERVICES, '');
  }

  nodeServices(name: string): Row<StoredService>[] {
    return this.store.list<StoredService>(CATALOG_SERVICES, nodePrefix(name));
  }

  nodeChecks(name: string): Row<StoredCheck>[] {
    return this.store.list<StoredCheck>(CATALOG_CHECKS, nodePrefix(name));
  }

  allChecks(): Row<StoredCheck>[] {
    return this.store.list<StoredCheck>(CATALOG_CHECKS, '');
  }

  /** Instances of `service`, or with `connect` its proxies and Connect-native instances, by node then ID. */
  instances(service: string, connect: boolean): Instance[] {
    const prefix = namePrefix(service);
    const out: Instance[] = [];
    for (const row of this.store.list(connect ? CATALOG_BY_CONNECT : CATALOG_BY_SERVICE, prefix)) {
      const key = row.key.slice(prefix.length);
      const node = this.store.get<StoredNode>(CATALOG_NODES, nodeOfKey(key));
      const own = this.store.get<StoredService>(CATALOG_SERVICES, key);
      if (node !== undefined && own !== undefined) out.push({ node, service: own });
    }
    return out;
  }

  /** Each instance with its node's checks (by check ID) and then its own. */
  withChecks(instances: readonly Instance[]): CheckedInstance[] {
    const byNode = new Map<string, Row<StoredCheck>[]>();
    return instances.map((instance) => {
      const name = instance.node.value.Node;
      let checks = byNode.get(name);
      if (checks === undefined) byNode.set(name, (checks = this.nodeChecks(name)));
      const id = instance.service.value.ID;
      const nodeLevel = checks.filter((c) => c.value.ServiceID === '');
      const own = checks.filter((c) => c.value.ServiceID === id);
      return { ...instance, checks: [...nodeLevel, ...own] };
    });
  }

  /** The checks of a service's instances (their own, not their nodes'). */
  serviceChecks(service: string): Row<StoredCheck>[] {
    const out: Row<StoredCheck>[] = [];
    for (const instance of this.instances(service, false)) {
      const id = instance.service.value.ID;
      for (const check of this.nodeChecks(instance.node.value.Node)) if (check.value.ServiceID === id) out.push(check);
    }
    return out;
  }
}

/** The node name of a `<node>/<id>` row key. */
export function nodeOfKey(key: string): string {
  return decodeURIComponent(key.slice(0, key.indexOf('/')));
}
