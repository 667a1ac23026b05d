// The catalog's writes: registrations through the API, a node's whole state from its agent
// (anti-entropy), and a node's liveness check. Each write reads the node's rows from the view,
// builds the next state and commits only what differs; writes run one at a time so that each
// plans from the state the previous one left.
import type { Identity } from '../acl/identity.js';
import { agentError } from '../core/errors.js';
import type { StateStore } from '../state/types.js';
import {
  CATALOG_CHECKS,
  CATALOG_INDEX,
  CATALOG_NODES,
  CATALOG_SERVICES,
  nodeIndexKey,
  SERF_ALIVE_OUTPUT,
  SERF_CHECK_ID,
  SERF_CHECK_NAME,
  type CheckStatus,
  type StoredNode,
  type StoredService,
} from './model.js';
import { planNodeWrite, readNodeState, type NodeState } from './node-state.js';
import {
  applyDeregistration,
  applyRegistration,
  vetDeregistration,
  vetRegistration,
  type Deregistration,
  type Registration,
} from './register.js';
import { nodeRow, syncTarget, type NodeFields, type NodeSync, type SyncScope } from './sync.js';

export type { NodeFields, NodeSync, SyncScope } from './sync.js';

export interface WriteResult {
  /** Records (nodes, services, checks) written or deleted; 0 when the catalog already held them. */
  readonly changed: number;
  /** The commit's index; the store's current index when nothing was written. */
  readonly index: number;
}

/** The tables of the records themselves; the others (index rows, by-name rows) follow them. */
const RECORD_TABLES: ReadonlySet<string> = new Set([CATALOG_NODES, CATALOG_SERVICES, CATALOG_CHECKS]);

export class Catalog {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: StateStore,
    private readonly datacenter: string,
  ) {}

  /** PUT /v1/catalog/register: vetted against `caller`'s ACL before anything is written. */
  register(reg: Registration, caller: Identity): Promise<WriteResult> {
    this.checkDatacenter(reg.Datacenter);
    const filled = { ...reg, Datacenter: this.datacenter };
    return this.write(reg.Node, (current) => {
      const next = applyRegistration(filled, current);
      vetRegistration(caller, filled, current, next);
      return next;
    });
  }

  /** PUT /v1/catalog/deregister. */
  deregister(dereg: Deregistration, caller: Identity): Promise<WriteResult> {
    this.checkDatacenter(dereg.Datacenter);
    if (dereg.Node === '') throw agentError('CATALOG_MISSING_NODE');
    return this.write(dereg.Node, (current) => {
      vetDeregistration(caller, dereg, current);
      return applyDeregistration(dereg, current);
    });
  }

  /**
   * Anti-entropy's one write: makes the catalog hold `desired` for node `name` (its node entry, and
   * these services and checks), writing only the rows that differ. Without `scope` the node holds
   * exactly these (a full sync removes the others); with one, only the scoped IDs are set or
   * removed (a partial sync). Idempotent: the same call twice writes nothing the second time.
   *
   * - `desired.node`: ID, Address, TaggedAddresses and Meta; the datacenter is the agent's.
   * - `desired.services`: Consul's NodeService fields (Service required; ID defaults to it; Kind
   *   `connect-proxy` with Proxy.DestinationServiceName and a Port; Connect.Native).
   * - `desired.checks`: Consul's HealthCheck fields (CheckID or Name; Status defaults to critical;
   *   ServiceID naming one of `desired.services`, whose name and tags the check takes; Type,
   *   Interval and Timeout as Go duration text; Definition as the agent reports it).
   * - `desired.keepOutput`: checks written with the Output the catalog holds (a deferred output).
   *
   * The liveness check (`serfHealth`) is the cluster's, not the agent's: it is kept as it is.
   */
  syncNode(name: string, desired: NodeSync, scope?: SyncScope): Promise<WriteResult> {
    return this.write(name, (current) =>
      syncTarget(nodeRow(name, this.datacenter, desired.node), current, desired, scope),
    );
  }

  /** The index of the last write to node `name`'s entries (its index row); 0 for a node never written. */
  nodeVersion(name: string): number {
    return this.store.get(CATALOG_INDEX, nodeIndexKey(name))?.modifyIndex ?? 0;
  }

  /**
   * Sets node `name`'s liveness check (`serfHealth`): passing while its agent is a live member,
   * critical once its membership lapsed. Registers the node with `fields` when it is new. With
   * `service`, sets it too (a server's `consul` service: consul-service.ts).
   */
  setLiveness(
    name: string,
    status: CheckStatus,
    output: string,
    fields?: NodeFields,
    service?: StoredService,
  ): Promise<WriteResult> {
    return this.write(name, (current) => {
      const node: StoredNode | undefined = fields === undefined ? current.node : nodeRow(name, this.datacenter, fields);
      if (node === undefined) return current;
      const services = service === undefined ? current.services : new Map(current.services).set(service.ID, service);
      const checks = new Map(current.checks);
      checks.set(SERF_CHECK_ID, {
        Node: name,
        CheckID: SERF_CHECK_ID,
        Name: SERF_CHECK_NAME,
        Status: status,
        Notes: '',
        Output: output,
        ServiceID: '',
        ServiceName: '',
        ServiceTags: [],
        Type: '',
        Interval: '',
        Timeout: '',
        ExposedPort: 0,
        Definition: {},
      });
      return { node, services, checks };
    });
  }

  /** This agent's own node, alive: registered with its serfHealth check passing (and a server's `consul` service). */
  registerSelf(name: string, fields: NodeFields, service?: StoredService): Promise<WriteResult> {
    return this.setLiveness(name, 'passing', SERF_ALIVE_OUTPUT, fields, service);
  }

  /** Removes a node and everything on it (a node reaped after its liveness lapsed). */
  removeNode(name: string): Promise<WriteResult> {
    return this.write(name, () => ({ node: undefined, services: new Map(), checks: new Map() }));
  }

  private checkDatacenter(datacenter: string): void {
    if (datacenter !== '' && datacenter !== this.datacenter) throw agentError('CATALOG_UNKNOWN_DATACENTER');
  }

  private write(name: string, next: (current: NodeState) => NodeState): Promise<WriteResult> {
    const run = this.queue.then(() => this.writeGuarded(name, next));
    this.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Plans from the view and commits guarded by the node's index row, which every write of the node
   * rewrites: a write made meanwhile by another agent (a cluster) fails the guard, and the write is
   * planned again once the view holds that agent's write.
   */
  private async writeGuarded(name: string, next: (current: NodeState) => NodeState): Promise<WriteResult> {
    const guardKey = nodeIndexKey(name);
    for (;;) {
      const guard = this.store.get(CATALOG_INDEX, guardKey)?.modifyIndex ?? 0;
      const current = readNodeState(this.store, name);
      const ops = planNodeWrite(name, current, next(current));
      if (ops.length === 0) return { changed: 0, index: this.store.index };
      const guarded = ops.map((op) =>
        op.op === 'set' && op.table === CATALOG_INDEX && op.key === guardKey ? { ...op, ifIndex: guard } : op,
      );
      const result = await this.store.commit(guarded);
      if (result.ok) return { changed: ops.filter((op) => RECORD_TABLES.has(op.table)).length, index: result.index };
      if ((this.store.get(CATALOG_INDEX, guardKey)?.modifyIndex ?? 0) === guard)
        await new Promise<void>((resolve) => this.store.watchOnce({ table: CATALOG_INDEX, key: guardKey }, resolve));
    }
  }
}
