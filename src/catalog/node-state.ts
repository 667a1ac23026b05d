// One node's rows (the node, its services, its checks) read from the store's view, and the write
// that turns one such state into another: only rows whose content differs are written, and each
// write rewrites the index rows of the answers it changes (model.ts, CATALOG_INDEX).
import { sameRow } from './same.js';
import type { StateStore, WriteOp } from '../state/types.js';
import {
  byNameKey,
  CATALOG_BY_CONNECT,
  CATALOG_BY_SERVICE,
  CATALOG_CHECKS,
  CATALOG_INDEX,
  CATALOG_NODES,
  CATALOG_SERVICES,
  connectIndexKey,
  connectName,
  memberKey,
  nodeIndexKey,
  nodePrefix,
  serviceIndexKey,
  type StoredCheck,
  type StoredNode,
  type StoredService,
} from './model.js';

export interface NodeState {
  readonly node: StoredNode | undefined;
  /** By service ID. */
  readonly services: ReadonlyMap<string, StoredService>;
  /** By check ID. */
  readonly checks: ReadonlyMap<string, StoredCheck>;
}

type ViewReads = Pick<StateStore, 'get' | 'list'>;

export function readNodeState(store: ViewReads, node: string): NodeState {
  const prefix = nodePrefix(node);
  const services = new Map<string, StoredService>();
  for (const row of store.list<StoredService>(CATALOG_SERVICES, prefix)) services.set(row.value.ID, row.value);
  const checks = new Map<string, StoredCheck>();
  for (const row of store.list<StoredCheck>(CATALOG_CHECKS, prefix)) checks.set(row.value.CheckID, row.value);
  return { node: store.get<StoredNode>(CATALOG_NODES, node)?.value, services, checks };
}

/**
 * The ops that turn `from` into `to` for node `name`: a set per new or changed row, a delete per
 * row gone, and one set per index row whose answer changed. Empty when nothing differs.
 */
export function planNodeWrite(name: string, from: NodeState, to: NodeState): WriteOp[] {
  const ops: WriteOp[] = [];
  const touched = new Set<string>();
  const touchService = (service: StoredService | undefined): void => {
    if (service === undefined) return;
    touched.add(serviceIndexKey(service.Service));
    const mesh = connectName(service);
    if (mesh !== undefined && mesh !== '') touched.add(connectIndexKey(mesh));
  };
  const touchAllServices = (): void => {
    for (const s of from.services.values()) touchService(s);
    for (const s of to.services.values()) touchService(s);
  };

  if (!sameRow(from.node, to.node)) {
    ops.push(
      to.node === undefined
        ? { op: 'delete', table: CATALOG_NODES, key: name }
        : { op: 'set', table: CATALOG_NODES, key: name, value: to.node },
    );
    touchAllServices();
  }
  for (const [id, before] of from.services) {
    const after = to.services.get(id);
    if (after === undefined) ops.push({ op: 'delete', table: CATALOG_SERVICES, key: memberKey(name, id) });
    if (after === undefined || !sameRow(before, after)) {
      touchService(before);
      touchService(after);
    }
    ops.push(...nameRows(name, id, before, after));
  }
  for (const [id, after] of to.services) {
    const before = from.services.get(id);
    if (before === undefined) ops.push(...nameRows(name, id, undefined, after));
    if (before !== undefined && sameRow(before, after)) continue;
    ops.push({ op: 'set', table: CATALOG_SERVICES, key: memberKey(name, id), value: after });
    touchService(after);
  }
  const touchCheck = (check: StoredCheck): void => {
    if (check.ServiceID === '') touchAllServices();
    else touchService(to.services.get(check.ServiceID) ?? from.services.get(check.ServiceID));
  };
  for (const [id, before] of from.checks) {
    if (to.checks.has(id)) continue;
    ops.push({ op: 'delete', table: CATALOG_CHECKS, key: memberKey(name, id) });
    touchCheck(before);
  }
  for (const [id, after] of to.checks) {
    const before = from.checks.get(id);
    if (before !== undefined && sameRow(before, after)) continue;
    ops.push({ op: 'set', table: CATALOG_CHECKS, key: memberKey(name, id), value: after });
    touchCheck(after);
  }
  if (ops.length === 0) return ops;
  touched.add(nodeIndexKey(name));
  for (const key of touched) ops.push({ op: 'set', table: CATALOG_INDEX, key, value: true });
  return ops;
}

/** The by-name rows that change when service `id` on `node` goes from `before` to `after`. */
function nameRows(node: string, id: string, before?: StoredService, after?: StoredService): WriteOp[] {
  const ops: WriteOp[] = [];
  const move = (table: string, was: string | undefined, now: string | undefined): void => {
    if (was === now) return;
    if (was !== undefined && was !== '') ops.push({ op: 'delete', table, key: byNameKey(was, node, id) });
    if (now !== undefined && now !== '') ops.push({ op: 'set', table, key: byNameKey(now, node, id), value: true });
  };
  move(CATALOG_BY_SERVICE, before?.Service, after?.Service);
  move(
    CATALOG_BY_CONNECT,
    before === undefined ? undefined : connectName(before),
    after === undefined ? undefined : connectName(after),
  );
  return ops;
}
