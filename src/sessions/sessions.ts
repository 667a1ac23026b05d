// Sessions as Consul's Session endpoint keeps them (agent/consul/session_endpoint.go, session_ttl.go):
// create checks the node and its checks and writes the session's row (under a lease of twice its
// TTL when it has one); renew gives the lease its time again; a session ends when destroyed, when
// its lease lapses, or when one of its checks goes critical (SessionReaper), and its end releases
// or deletes the keys it holds (KvLocks.releaseHeldBy). docs/decisions.md#sessions.
import { randomUUID } from 'node:crypto';
import { CATALOG_CHECKS, CATALOG_NODES, memberKey, SERF_CHECK_ID, type StoredCheck } from '../catalog/model.js';
import { agentError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import type { Row, StateStore } from '../state/types.js';
import type { SessionLeases } from './leases.js';
import type { KvLocks } from './locks.js';
import { newSession, SESSIONS_TABLE, ttlMs, type SessionInput, type StoredSession } from './model.js';

export interface SessionsOptions {
  readonly store: StateStore;
  readonly leases: SessionLeases;
  readonly locks: KvLocks;
  readonly log: Logger;
  /** The node a session is on when create names none: this agent's. */
  readonly nodeName: string;
  readonly newId?: (() => string) | undefined;
}

/** Why a session ended, for the log. */
export type SessionEnd = 'destroyed' | 'ttl lapsed' | 'check critical' | 'node gone';

export class Sessions {
  private readonly newId: () => string;

  constructor(private readonly o: SessionsOptions) {
    this.newId = o.newId ?? randomUUID;
  }

  get(id: string): Row<StoredSession> | undefined {
    return this.o.store.get<StoredSession>(SESSIONS_TABLE, id);
  }

  list(): Row<StoredSession>[] {
    return this.o.store.list<StoredSession>(SESSIONS_TABLE, '');
  }

  /**
   * The session's node as create would make it (for the caller's session:write check first): the
   * one named, else `askingNode` (the client agent that forwarded the create), else this agent's.
   */
  nodeOf(input: SessionInput, askingNode?: string): string {
    return input.Node === undefined || input.Node === '' ? (askingNode ?? this.o.nodeName) : input.Node;
  }

  async create(input: SessionInput, askingNode?: string): Promise<string> {
    const node = this.nodeOf(input, askingNode);
    const session = newSession(input, this.newId(), { node, nodeCheck: SERF_CHECK_ID });
    this.checkRegistrations(session);
    const ttl = ttlMs(session);
    // Consul ends a TTL session once twice its TTL passed without a renew.
    const lease = ttl === 0 ? undefined : await this.o.leases.grant(2 * ttl);
    const row: StoredSession = lease === undefined ? session : { ...session, lease };
    try {
      await this.o.store.commit([
        { op: 'set', table: SESSIONS_TABLE, key: session.ID, value: row, ...(lease === undefined ? {} : { lease }) },
      ]);
    } catch (err) {
      if (lease !== undefined) void this.o.leases.revoke(lease).catch(() => undefined);
      throw err;
    }
    return session.ID;
  }

  /** Gives a TTL session its time again: the session, or undefined when it does not exist (any more). */
  async renew(id: string): Promise<Row<StoredSession> | undefined> {
    const row = this.get(id);
    if (row === undefined) return undefined;
    const lease = row.value.lease;
    if (lease === undefined || (await this.o.leases.renew(lease))) return row;
    await this.end(id, 'ttl lapsed');
    return undefined;
  }

  /** Ends the session and frees (or deletes) its keys; nothing when it does not exist. */
  async end(id: string, why: SessionEnd): Promise<void> {
    const row = this.get(id);
    if (row !== undefined) {
      const { ok } = await this.o.store.commit([
        { op: 'delete', table: SESSIONS_TABLE, key: id, ifIndex: row.modifyIndex },
      ]);
      if (ok && why !== 'destroyed') this.o.log.info({ session: id, node: row.value.Node, why }, 'session invalidated');
      if (row.value.lease !== undefined) await this.o.leases.revoke(row.value.lease);
    }
    await this.o.locks.releaseHeldBy(id);
  }

  /** A lone agent's lease that lapsed: its session ends. */
  leaseExpired(lease: string): void {
    const row = this.list().find((r) => r.value.lease === lease);
    if (row === undefined) return;
    this.end(row.key, 'ttl lapsed').catch((err: unknown) =>
      this.o.log.warn({ err, session: row.key }, 'ending a session whose TTL lapsed failed; the reaper tries again'),
    );
  }

  /** Takes on the leases of sessions made before this process (a lone agent's restart). */
  adoptLeases(): void {
    for (const row of this.list()) {
      if (row.value.lease !== undefined) this.o.leases.adopt(row.value.lease, 2 * ttlMs(row.value));
    }
  }

  /** Why `session` must end now (its node or one of its checks gone, a check critical), if it must. */
  endReason(session: StoredSession): SessionEnd | undefined {
    if (this.o.store.get(CATALOG_NODES, session.Node) === undefined) return 'node gone';
    const ids = [...session.NodeChecks, ...(session.ServiceChecks ?? []).map((c) => c.ID)];
    for (const id of ids) {
      const check = this.o.store.get<StoredCheck>(CATALOG_CHECKS, memberKey(session.Node, id))?.value;
      if (check === undefined || check.Status === 'critical') return 'check critical';
    }
    return undefined;
  }

  /** Create's checks (Consul's sessionCreateTxn): the node is registered, each check is and is not critical. */
  private checkRegistrations(session: StoredSession): void {
    if (this.o.store.get(CATALOG_NODES, session.Node) === undefined) throw agentError('SESSION_NODE_MISSING');
    const ids = [...session.NodeChecks, ...(session.ServiceChecks ?? []).map((c) => c.ID)];
    for (const id of ids) {
      const check = this.o.store.get<StoredCheck>(CATALOG_CHECKS, memberKey(session.Node, id))?.value;
      if (check === undefined) throw agentError('SESSION_CHECK_MISSING', { check: id });
      if (check.Status === 'critical') throw agentError('SESSION_CHECK_CRITICAL', { check: id, status: check.Status });
    }
  }
}
