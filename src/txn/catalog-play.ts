// One play of a transaction's Node, Service and Check ops (Consul's txnNode, txnService, txnCheck in
// agent/consul/state/txn.go) over the nodes they name, read from this agent's view as the catalog's
// own writes read them. Each op sees the ones before it; at the end each node's state as read and as
// played become the catalog's own write plan (planNodeWrite: the rows that differ, their by-name rows
// and index rows), guarded by the node's index row, which every catalog write of the node rewrites.
import { checkJson, nodeJson, nodeServiceJson } from '../catalog/json.js';
import { limitNode } from '../catalog/limits.js';
import {
  CATALOG_CHECKS,
  CATALOG_INDEX,
  CATALOG_NODES,
  CATALOG_SERVICES,
  memberKey,
  nodeIndexKey,
  type StoredCheck,
  type StoredNode,
  type StoredService,
} from '../catalog/model.js';
import { planNodeWrite, readNodeState, type NodeState } from '../catalog/node-state.js';
import { normalizeCheck, normalizeService } from '../catalog/register.js';
import { sameRow } from '../catalog/same.js';
import { nodeRow } from '../catalog/sync.js';
import { AgentError } from '../core/errors.js';
import type { Row, StateStore, WriteOp } from '../state/types.js';
import {
  PENDING,
  type CheckTxnOp,
  type NodeInput,
  type NodeTxnOp,
  type ServiceTxnOp,
  type TxnAuthorizer,
  type TxnResult,
} from './ops.js';

export type CatalogTxnOp = NodeTxnOp | ServiceTxnOp | CheckTxnOp;

interface Indexes {
  readonly createIndex: number;
  readonly modifyIndex: number;
}

/** One node as read and as played so far. */
interface NodeEntry {
  readonly from: NodeState;
  /** The node's index row as read (0: absent): the guard of everything read of the node. */
  readonly guard: number;
  /** Indexes of the rows read, by table and key. */
  readonly indexes: ReadonlyMap<string, Indexes>;
  node: StoredNode | undefined;
  readonly services: Map<string, StoredService>;
  readonly checks: Map<string, StoredCheck>;
}

/** Consul's write verbs of a catalog op; `get` is the one read. */
const WRITE_VERBS: ReadonlySet<string> = new Set(['set', 'cas', 'delete', 'delete-cas']);

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

const rowKey = (table: string, key: string): string => `${table}\u0000${key}`;

export class CatalogPlay {
  private readonly nodes = new Map<string, NodeEntry>();
  /** Names of the services the ops vetted so far set, by node and ID: a check's service may be one. */
  private readonly vettedServices = new Map<string, string>();
  private agentDatacenter: string | undefined;

  constructor(
    private readonly store: StateStore,
    /** The datacenter a node op's empty Datacenter means: the agent's. */
    private readonly datacenter: () => string,
  ) {}

  get touched(): boolean {
    return this.nodes.size > 0;
  }

  /** Reads every node the ops name (a node get by ID: the node holding it) from the view. */
  load(ops: readonly CatalogTxnOp[]): void {
    for (const op of ops) {
      if (op.type === 'Node') {
        this.entry(op.node.Node);
        const byId = op.verb === 'get' && op.node.ID !== '' ? this.viewNodeById(op.node.ID) : undefined;
        if (byId !== undefined) this.entry(byId);
      } else this.entry(op.type === 'Service' ? op.node : (op.check.Node ?? ''));
    }
  }

  /** A guard per node read, and the catalog's write plan of each node that changed. */
  commitOps(): { guards: WriteOp[]; writes: WriteOp[] } {
    const guards: WriteOp[] = [];
    const writes: WriteOp[] = [];
    for (const [name, e] of this.nodes) {
      guards.push({ op: 'check', table: CATALOG_INDEX, key: nodeIndexKey(name), ifIndex: e.guard });
      writes.push(...planNodeWrite(name, e.from, { node: e.node, services: e.services, checks: e.checks }));
    }
    return { guards, writes };
  }

  /**
   * Consul's pre-check of a catalog op (Txn.preCheck: nodePreApply, servicePreApplyValidate,
   * checkPreApply, then vetNodeTxnOp, vetServiceTxnOp, vetCheckTxnOp) against the state as read:
   * what refuses the op, if anything. Gets are not vetted: their results are filtered (`readable`).
   */
  vet(op: CatalogTxnOp, authorizer: TxnAuthorizer): string | undefined {
    const kind = op.type.toLowerCase();
    if (op.verb === 'get') return undefined;
    if (!WRITE_VERBS.has(op.verb)) return `unknown ${kind} operation: ${op.verb}`;
    const denied = (resource: 'node' | 'service', name: string): boolean =>
      !authorizer.allowed(resource, 'write', name);
    try {
      switch (op.type) {
        case 'Node':
          return this.vetNode(op.node, denied);
        case 'Service':
          return this.vetService(op, denied);
        case 'Check':
          return this.vetCheck(op, denied);
      }
    } catch (err) {
      if (err instanceof AgentError) return err.message;
      throw err;
    }
  }

  /** Plays one op (vetted: its verb is known): its result pushed, or what failed (Consul's texts). */
  apply(op: CatalogTxnOp, results: TxnResult[]): string | undefined {
    try {
      switch (op.type) {
        case 'Node':
          return this.applyNode(op, results);
        case 'Service':
          return this.applyService(op, results);
        case 'Check':
          return this.applyCheck(op, results);
      }
    } catch (err) {
      // The catalog's own refusals of a service or check (a missing name, a size limit): the op's error.
      if (err instanceof AgentError) return err.message;
      throw err;
    }
  }

  private vetNode(node: NodeInput, denied: (resource: 'node', name: string) => boolean): string | undefined {
    if (node.Node === '') return 'Must provide node';
    if (node.ID !== '' && !UUID.test(node.ID)) {
      return `Bad node ID: ${node.ID.length === 36 ? 'uuid is improperly formatted' : 'uuid string is wrong length'}`;
    }
    return denied('node', node.Node) ? 'Permission denied' : undefined;
  }

  private vetService(op: ServiceTxnOp, denied: (resource: 'service', name: string) => boolean): string | undefined {
    const service = normalizeService(op.service);
    const existing = this.entry(op.node).from.services.get(service.ID);
    if (existing !== undefined && existing.Service !== service.Service) {
      return `service name does not match existing service name for service ID ${JSON.stringify(service.ID)} on node ${JSON.stringify(op.node)}`;
    }
    if (denied('service', service.Service)) return 'Permission denied';
    if (service.Kind === 'connect-proxy' && denied('service', service.Proxy.DestinationServiceName ?? ''))
      return 'Permission denied';
    this.vettedServices.set(memberKey(op.node, service.ID), service.Service);
    return undefined;
  }

  /**
   * A check's binding is the stored check's when it exists, else the request's; a service check
   * needs service:write on its service: the stored one, else one an op before sets, else the name
   * the check gives.
   */
  private vetCheck(
    op: CheckTxnOp,
    denied: (resource: 'node' | 'service', name: string) => boolean,
  ): string | undefined {
    const node = op.check.Node ?? '';
    const id = checkId(op);
    const from = this.entry(node).from;
    const existing = from.checks.get(id);
    const serviceId = existing?.ServiceID ?? op.check.ServiceID ?? '';
    if (serviceId === '') return denied('node', node) ? 'Permission denied' : undefined;
    const service =
      from.services.get(serviceId)?.Service ??
      this.vettedServices.get(memberKey(node, serviceId)) ??
      existing?.ServiceName ??
      op.check.ServiceName ??
      '';
    if (service === '') return `unknown service ID ${JSON.stringify(serviceId)} for check ID ${JSON.stringify(id)}`;
    return denied('service', service) ? 'Permission denied' : undefined;
  }

  private applyNode(op: NodeTxnOp, results: TxnResult[]): string | undefined {
    const input = op.node;
    const name = input.Node;
    const e = this.entry(name);
    const stale = (what: string): string => `failed to ${what} node ${JSON.stringify(name)}, index is stale`;
    if (op.verb === 'get') {
      const found = input.ID === '' ? (e.node === undefined ? undefined : name) : this.playedNodeById(input.ID);
      if (found === undefined) return `node ${JSON.stringify(name)} doesn't exist`;
      results.push({ Node: this.nodeResult(found) });
      return undefined;
    }
    if (op.verb === 'set' || op.verb === 'cas') {
      if (op.verb === 'cas' && !casHolds(input.ModifyIndex, this.nodeIndexes(name))) return stale('set');
      const agent = (this.agentDatacenter ??= this.datacenter());
      // The catalog holds the agent's datacenter only (docs/decisions.md#txn).
      if (input.Datacenter !== '' && input.Datacenter !== agent) return 'No path to datacenter';
      limitNode({ ...input, NodeMeta: input.Meta });
      e.node = nodeRow(name, agent, input);
      results.push({ Node: this.nodeResult(name) });
      return undefined;
    }
    if (op.verb === 'delete-cas' && this.nodeIndexes(name)?.modifyIndex !== input.ModifyIndex) return stale('delete');
    // The node goes with its services and checks; sessions on it end after the commit (the reaper).
    e.node = undefined;
    e.services.clear();
    e.checks.clear();
    return undefined;
  }

  private applyService(op: ServiceTxnOp, results: TxnResult[]): string | undefined {
    const node = op.node;
    const e = this.entry(node);
    if (op.verb === 'get') {
      const id = op.service.ID ?? '';
      if (!e.services.has(id)) return `service ${JSON.stringify(id)} on node ${JSON.stringify(node)} doesn't exist`;
      results.push({ Service: this.serviceResult(node, id) });
      return undefined;
    }
    const service = normalizeService(op.service);
    const id = service.ID;
    const stale = (what: string): string =>
      `failed to ${what} service ${JSON.stringify(id)} on node ${JSON.stringify(node)}, index is stale`;
    if (op.verb === 'set' || op.verb === 'cas') {
      if (op.verb === 'cas' && !casHolds(op.index, this.serviceIndexes(node, id))) return stale('set');
      if (e.node === undefined) return 'Missing node registration';
      e.services.set(id, service);
      results.push({ Service: this.serviceResult(node, id) });
      return undefined;
    }
    if (op.verb === 'delete-cas' && this.serviceIndexes(node, id)?.modifyIndex !== op.index) return stale('delete');
    // A service goes with its checks.
    e.services.delete(id);
    for (const [checkId, check] of e.checks) if (check.ServiceID === id) e.checks.delete(checkId);
    return undefined;
  }

  private applyCheck(op: CheckTxnOp, results: TxnResult[]): string | undefined {
    const node = op.check.Node ?? '';
    const e = this.entry(node);
    if (op.verb === 'get') {
      const id = op.check.CheckID ?? '';
      if (!e.checks.has(id)) return `check ${JSON.stringify(id)} on node ${JSON.stringify(node)} doesn't exist`;
      results.push({ Check: this.checkResult(node, id) });
      return undefined;
    }
    const id = checkId(op);
    const stale = (what: string): string =>
      `failed to ${what} check ${JSON.stringify(id)} on node ${JSON.stringify(node)}, index is stale`;
    if (op.verb === 'set' || op.verb === 'cas') {
      if (op.verb === 'cas' && !casHolds(op.index, this.checkIndexes(node, id))) return stale('set');
      if (e.node === undefined) return 'Missing node registration';
      // Its service's name and tags are filled from the service (Consul's ensureCheckTxn).
      e.checks.set(id, normalizeCheck({ ...op.check, CheckID: id }, node, e.services));
      results.push({ Check: this.checkResult(node, id) });
      return undefined;
    }
    if (op.verb === 'delete-cas' && this.checkIndexes(node, id)?.modifyIndex !== op.index) return stale('delete');
    e.checks.delete(id);
    return undefined;
  }

  /** The node's entry, read from the view the first time it is named. */
  private entry(name: string): NodeEntry {
    const known = this.nodes.get(name);
    if (known !== undefined) return known;
    const indexes = new Map<string, Indexes>();
    const keep = <V>(table: string, row: Row<V>): void =>
      void indexes.set(rowKey(table, row.key), { createIndex: row.createIndex, modifyIndex: row.modifyIndex });
    // readNodeState itself, its reads' indexes kept on the way.
    const from = readNodeState(
      {
        get: <V>(table: string, key: string): Row<V> | undefined => {
          const row = this.store.get<V>(table, key);
          if (row !== undefined) keep(table, row);
          return row;
        },
        list: <V>(table: string, prefix: string): Row<V>[] => {
          const rows = this.store.list<V>(table, prefix);
          for (const row of rows) keep(table, row);
          return rows;
        },
      },
      name,
    );
    const entry: NodeEntry = {
      from,
      guard: this.store.get(CATALOG_INDEX, nodeIndexKey(name))?.modifyIndex ?? 0,
      indexes,
      node: from.node,
      services: new Map(from.services),
      checks: new Map(from.checks),
    };
    this.nodes.set(name, entry);
    return entry;
  }

  /** The name of the node the view has with this ID (Consul's IDs match case-insensitively). */
  private viewNodeById(id: string): string | undefined {
    const lower = id.toLowerCase();
    return this.store.list<StoredNode>(CATALOG_NODES, '').find((row) => row.value.ID.toLowerCase() === lower)?.key;
  }

  /** The name of the node the play has with this ID now. */
  private playedNodeById(id: string): string | undefined {
    const lower = id.toLowerCase();
    for (const [name, e] of this.nodes) if (e.node?.ID.toLowerCase() === lower) return name;
    return undefined;
  }

  /**
   * A row's indexes now: as read while it holds what was read, the commit's (PENDING) once it
   * differs, its CreateIndex kept when it existed before. Undefined while the row is absent.
   */
  private indexesOf(e: NodeEntry, table: string, key: string, before: unknown, now: unknown): Indexes | undefined {
    if (now === undefined) return undefined;
    const read = e.indexes.get(rowKey(table, key));
    if (read !== undefined && sameRow(before, now)) return read;
    return { createIndex: read?.createIndex ?? PENDING, modifyIndex: PENDING };
  }

  private nodeIndexes(name: string): Indexes | undefined {
    const e = this.entry(name);
    return this.indexesOf(e, CATALOG_NODES, name, e.from.node, e.node);
  }

  private serviceIndexes(node: string, id: string): Indexes | undefined {
    const e = this.entry(node);
    return this.indexesOf(e, CATALOG_SERVICES, memberKey(node, id), e.from.services.get(id), e.services.get(id));
  }

  private checkIndexes(node: string, id: string): Indexes | undefined {
    const e = this.entry(node);
    return this.indexesOf(e, CATALOG_CHECKS, memberKey(node, id), e.from.checks.get(id), e.checks.get(id));
  }

  /** Results are of rows present: each read just found or wrote its row. */
  private nodeResult(name: string): Record<string, unknown> {
    const value = this.entry(name).node as StoredNode;
    return nodeJson({ key: name, value, ...(this.nodeIndexes(name) as Indexes) });
  }

  private serviceResult(node: string, id: string): Record<string, unknown> {
    const value = this.entry(node).services.get(id) as StoredService;
    return nodeServiceJson({ key: memberKey(node, id), value, ...(this.serviceIndexes(node, id) as Indexes) });
  }

  private checkResult(node: string, id: string): Record<string, unknown> {
    const value = this.entry(node).checks.get(id) as StoredCheck;
    return checkJson({ key: memberKey(node, id), value, ...(this.checkIndexes(node, id) as Indexes) });
  }
}

/** Consul's ensure*CASTxn: index 0 sets only what is absent, another only what is at that index. */
function casHolds(index: number, current: Indexes | undefined): boolean {
  if (index === 0) return current === undefined;
  return current !== undefined && current.modifyIndex === index;
}

/** Consul's checkPreApply: a check without an ID takes its name. */
function checkId(op: CheckTxnOp): string {
  const id = op.check.CheckID ?? '';
  return id === '' ? (op.check.Name ?? '') : id;
}

/**
 * Consul's FilterTxnResults for catalog results: a node needs node:read, a service service:read,
 * a check node:read on its node and service:read on its service. KV results are never left out
 * (a KV read the token may not make is refused before the play).
 */
export function readable(result: TxnResult, authorizer: TxnAuthorizer): boolean {
  if ('Node' in result) return authorizer.allowed('node', 'read', result.Node.Node as string);
  if ('Service' in result) return authorizer.allowed('service', 'read', result.Service.Service as string);
  if ('Check' in result) {
    const service = result.Check.ServiceName as string;
    return (
      authorizer.allowed('node', 'read', result.Check.Node as string) &&
      (service === '' || authorizer.allowed('service', 'read', service))
    );
  }
  return true;
}
