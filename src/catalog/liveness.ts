// Node liveness, as Consul's leader reconciles Serf members into the catalog
// (agent/consul/leader_registrator_v1.go), on every server agent: a live member with no node yet is
// registered (a cluster's client agents write nothing themselves: docs/decisions.md D25), a server
// with its `consul` service; a node whose agent is a live member has its serfHealth check passing;
// once its membership lease lapsed, critical (so `?passing` stops returning its instances) and the
// member is recorded failed; a member that leaves (its entry says so) is recorded left and its node
// deregistered at once. A failed member's node is removed after the reap interval
// (reconnect_timeout), a left member's record after LEFT_KEPT_MS (docs/decisions.md#departed-members).
// Only nodes that carry a serfHealth check (agents' own nodes) are judged: nodes registered through
// /v1/catalog/register are external and left alone. Each write is guarded, so servers doing the
// same pass apply it once.
import type { Clock, TimerHandle } from '../core/clock.js';
import { agentError, loggedAtSource } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import type { Row, StateStore } from '../state/types.js';
import type { Catalog, NodeFields } from './catalog.js';
import { CONSUL_SERVICE_ID } from './consul-service.js';
import {
  LEFT_KEPT_MS,
  MEMBER_STATUS_TABLE,
  type DepartedMember,
  type LiveMemberFields,
  type MemberFields,
} from './member-status.js';
import {
  CATALOG_INDEX,
  CATALOG_SERVICES,
  memberKey,
  nodeIndexKey,
  SERF_ALIVE_OUTPUT,
  SERF_CHECK_ID,
  type StoredCheck,
  type StoredService,
} from './model.js';
import type { CatalogQueries } from './queries.js';
import { sameRow } from './same.js';

/** Consul's serfHealth output for a member that failed. */
export const SERF_FAILED_OUTPUT = 'Agent not live or unreachable';
/** Consul's reconnect_timeout default: a failed node is removed after 72 hours. */
export const DEFAULT_REAP_AFTER_MS = 72 * 3600_000;
/** Between reconciles when no member changed (Consul's leader reconciles every 60 s): what reaps in time. */
const RECONCILE_INTERVAL_MS = 60_000;

/** A live member: its entry, and the node it should have. */
export interface LiveMember {
  readonly member: LiveMemberFields;
  readonly node: NodeFields;
}

export interface LivenessOptions {
  readonly catalog: Catalog;
  readonly queries: CatalogQueries;
  /** Where the departed members' rows live (member-status.ts). */
  readonly store: StateStore;
  /** The agents that are live members now, by name. */
  readonly liveMembers: () => ReadonlyMap<string, LiveMember>;
  /** The `consul` service a live member's node carries: a server's (consul-service.ts), none for a client. */
  readonly consulService?: ((member: MemberFields) => StoredService | undefined) | undefined;
  readonly clock: Clock;
  readonly log: Logger;
  /** reconnect_timeout: how long a failed member stays, its node critical, before both are removed. */
  readonly reapAfterMs?: number | undefined;
  /**
   * Told when a leaving member is recorded left and its node is gone: the member list may forget
   * an entry it kept past its delete (src/cluster/members.ts, departing()).
   */
  readonly recordedLeft?: ((name: string) => void) | undefined;
}

export class LivenessReconciler {
  /** Each member's entry as last seen alive: what a failed member is listed with. */
  private readonly lastSeen = new Map<string, MemberFields>();
  private running: Promise<void> | undefined;
  private again = false;
  private timer: TimerHandle | undefined;
  private closed = false;

  constructor(private readonly options: LivenessOptions) {}

  /** Reconciles now and then every RECONCILE_INTERVAL_MS, besides each member change (`schedule`). */
  start(): void {
    const tick = (): void => {
      if (this.closed) return;
      this.timer = this.options.clock.setTimer(RECONCILE_INTERVAL_MS, tick);
      void this.schedule();
    };
    tick();
  }

  close(): void {
    this.closed = true;
    this.timer?.cancel();
    this.timer = undefined;
  }

  /** Runs a reconcile soon; calls that arrive while one runs are folded into one more run. */
  schedule(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.running !== undefined) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        await this.reconcile().catch((err: unknown) =>
          // A cause logged where it arose (etcd down, or out of space) is not warned of twice.
          this.options.log[loggedAtSource(err) ? 'debug' : 'warn'](
            { err },
            'node liveness could not be written to the catalog; retried on the next change',
          ),
        );
      } while (this.again);
    })().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** One pass over the live members, the catalog's agent nodes and the departed rows; writes only what is wrong. */
  async reconcile(): Promise<void> {
    const { catalog, store, clock } = this.options;
    const live = this.options.liveMembers();
    const departed = departedRows(store);
    const agents = this.agentNodes();
    const now = clock.now();
    const reapAfter = this.options.reapAfterMs ?? DEFAULT_REAP_AFTER_MS;
    for (const [name, { member, node }] of live) {
      const row = departed.get(name);
      if (member.leaving === true) {
        if (row?.value.Status === 'left' && !agents.has(name)) this.options.recordedLeft?.(name);
        else {
          await this.recordLeft(name, member, row);
          if (agents.has(name)) await this.deregister(name, 'left');
        }
        continue;
      }
      this.lastSeen.set(name, fieldsOf(member));
      // Back after it failed or left: a member like any other.
      if (row !== undefined) await this.forget(name, row.modifyIndex);
      const serf = agents.get(name);
      const service = this.options.consulService?.(member);
      const held =
        service === undefined
          ? undefined
          : store.get<StoredService>(CATALOG_SERVICES, memberKey(name, CONSUL_SERVICE_ID));
      if (serf?.Status === 'passing' && (service === undefined || sameRow(held?.value, service))) continue;
      if (serf?.Status !== 'passing') this.options.log.info({ member: name }, 'member joined, marking health alive');
      await catalog.setLiveness(name, 'passing', SERF_ALIVE_OUTPUT, serf === undefined ? node : undefined, service);
    }
    for (const [name, serf] of agents) {
      if (live.has(name)) continue;
      const row = departed.get(name);
      if (row?.value.Status === 'left') {
        await this.deregister(name, 'left');
        continue;
      }
      if (serf.Status !== 'critical') {
        this.options.log.info({ member: name }, 'member failed, marking health critical');
        await catalog.setLiveness(name, 'critical', SERF_FAILED_OUTPUT);
      }
      if (row === undefined) await this.recordFailed(name);
      else if (now - row.value.Since >= reapAfter) {
        await this.deregister(name, 'reaped');
        await this.forget(name, row.modifyIndex);
      }
    }
    // Rows whose node is gone already: listed until their time is up.
    for (const [name, row] of departed) {
      if ((live.has(name) && live.get(name)?.member.leaving !== true) || agents.has(name)) continue;
      const kept = row.value.Status === 'left' ? LEFT_KEPT_MS : reapAfter;
      if (now - row.value.Since >= kept) await this.forget(name, row.modifyIndex);
    }
    for (const name of this.lastSeen.keys())
      if (!live.has(name) && !agents.has(name) && !departed.has(name)) this.lastSeen.delete(name);
  }

  /**
   * PUT /v1/agent/force-leave (Consul's RemoveFailedNode): a failed member is recorded left and its
   * node deregistered; `prune` removes the member's record and node at once. A live member stays:
   * a live Consul agent refutes the leave. An unknown name is AGENT_FORCE_LEAVE_UNKNOWN.
   */
  async forceLeave(name: string, prune: boolean): Promise<void> {
    const { store, log } = this.options;
    const live = this.options.liveMembers().get(name);
    const row = store.get<DepartedMember>(MEMBER_STATUS_TABLE, name);
    const agentNode = this.agentNodes().has(name);
    if (live === undefined && row === undefined && !agentNode)
      throw agentError('AGENT_FORCE_LEAVE_UNKNOWN', { node: name });
    log.info({ node: name, prune }, 'Force leaving node');
    if (live !== undefined && live.member.leaving !== true) {
      log.info({ node: name }, 'force-leave of a live member: it stays a member, as a live agent refutes the leave');
      return;
    }
    if (prune) {
      if (agentNode) await this.deregister(name, 'pruned');
      if (row !== undefined) await store.commit([{ op: 'delete', table: MEMBER_STATUS_TABLE, key: name }]);
      this.options.recordedLeft?.(name);
      return;
    }
    if (row?.value.Status !== 'left') await this.recordLeft(name, live?.member ?? this.lastKnown(name, row), row);
    if (agentNode) await this.deregister(name, 'left');
  }

  /** Nodes carrying a serfHealth check (agents' own), by name, with that check. */
  private agentNodes(): Map<string, StoredCheck> {
    const nodes = new Map<string, StoredCheck>();
    for (const row of this.options.queries.allChecks())
      if (row.value.CheckID === SERF_CHECK_ID) nodes.set(row.value.Node, row.value);
    return nodes;
  }

  private async recordLeft(name: string, member: MemberFields, row: Row<DepartedMember> | undefined): Promise<void> {
    if (row?.value.Status === 'left') return;
    const value: DepartedMember = { Status: 'left', Since: this.options.clock.now(), Member: fieldsOf(member) };
    // Guarded: another server recording it meanwhile wins, and this pass's view of it is stale.
    await this.options.store.commit([
      { op: 'set', table: MEMBER_STATUS_TABLE, key: name, value, ifIndex: row?.modifyIndex ?? 0 },
    ]);
  }

  /**
   * Records a member failed, once, while its node is as this pass saw it: a node a force-leave
   * pruned meanwhile gets no record back.
   */
  private async recordFailed(name: string): Promise<void> {
    const { store, clock } = this.options;
    const guard = store.get(CATALOG_INDEX, nodeIndexKey(name))?.modifyIndex ?? 0;
    const value: DepartedMember = { Status: 'failed', Since: clock.now(), Member: this.lastKnown(name, undefined) };
    await store.commit([
      { op: 'check', table: CATALOG_INDEX, key: nodeIndexKey(name), ifIndex: guard },
      { op: 'set', table: MEMBER_STATUS_TABLE, key: name, value, ifIndex: 0 },
    ]);
  }

  /** The member as last seen alive; else as its row or its catalog node says (port 0: unknown). */
  private lastKnown(name: string, row: Row<DepartedMember> | undefined): MemberFields {
    const seen = this.lastSeen.get(name) ?? row?.value.Member;
    if (seen !== undefined) return seen;
    const node = this.options.queries.node(name)?.value;
    const consul = this.options.store.get<StoredService>(CATALOG_SERVICES, memberKey(name, CONSUL_SERVICE_ID))?.value;
    return {
      name,
      id: node?.ID ?? '',
      address: node?.Address ?? '',
      port: consul?.Port ?? 0,
      datacenter: node?.Datacenter ?? '',
      server: consul !== undefined,
      version: '',
      aclsEnabled: false,
    };
  }

  private async deregister(name: string, reason: 'left' | 'reaped' | 'pruned'): Promise<void> {
    const result = await this.options.catalog.removeNode(name);
    if (result.changed > 0) this.options.log.info({ member: name, reason }, 'deregistering member');
  }

  private async forget(name: string, index: number): Promise<void> {
    await this.options.store.commit([{ op: 'delete', table: MEMBER_STATUS_TABLE, key: name, ifIndex: index }]);
  }
}

function departedRows(store: Pick<StateStore, 'list'>): Map<string, Row<DepartedMember>> {
  return new Map(store.list<DepartedMember>(MEMBER_STATUS_TABLE, '').map((row) => [row.key, row]));
}

/** The member's own fields, without what a live entry adds (`leaving`). */
function fieldsOf(member: LiveMemberFields): MemberFields {
  const { name, id, address, port, datacenter, server, version, aclsEnabled } = member;
  return { name, id, address, port, datacenter, server, version, aclsEnabled };
}
