// Consul's transaction (agent/consul/state/txn.go: txnDispatch over KV, Node, Service, Check and
// Session ops) run as one commit of the store (one etcd transaction in a cluster): what the ops name
// is read first (keys, prefixes, lock rows, sessions, nodes), each op is vetted against the token
// (Consul's Txn.preCheck), the ops are played in order over that copy (each failing one gives
// Consul's error with its index, and then nothing is written), and what they write goes out in one
// commit guarded by the index of everything read. A guard that failed (a concurrent write) plays the
// transaction again on fresh reads, so its results are always those of the state it applied to.
// docs/decisions.md#txn.
import { CATALOG_NODES, type StoredNode } from '../catalog/model.js';
import type { Clock } from '../core/clock.js';
import { agentError } from '../core/errors.js';
import type { ReadConsistency, StateStore } from '../state/types.js';
import { CatalogPlay, readable, type CatalogTxnOp } from './catalog-play.js';
import { KvPlay } from './kv-play.js';
import {
  isReadOnly,
  PENDING,
  type KvTxnOp,
  type SessionTxnOp,
  type TxnAuthorizer,
  type TxnError,
  type TxnOp,
  type TxnOutcome,
  type TxnResult,
} from './ops.js';

/** Plays of one transaction whose guard failed before it is refused as conflicting. */
const TRIES = 8;

/** Consul's default datacenter, for a catalog that holds no node yet. */
const DEFAULT_DATACENTER = 'dc1';

export interface TxnOptions {
  /**
   * The agent's datacenter: what a Node op's empty Datacenter means, and the only one it may name.
   * Absent: the datacenter the catalog's nodes carry (every node the agent writes carries its own).
   */
  readonly datacenter?: string | undefined;
}

export class KvTxn {
  constructor(
    private readonly store: StateStore,
    private readonly clock: Clock,
    private readonly options: TxnOptions = {},
  ) {}

  async run(ops: readonly TxnOp[], consistency: ReadConsistency, authorizer: TxnAuthorizer): Promise<TxnOutcome> {
    const readOnly = isReadOnly(ops);
    const kvOps = ops.filter((op): op is KvTxnOp | SessionTxnOp => op.type === 'KV' || op.type === 'Session');
    const catalogOps = ops.filter((op): op is CatalogTxnOp => op.type !== 'KV' && op.type !== 'Session');
    for (let i = 0; i < TRIES; i++) {
      const kv = new KvPlay(this.store, this.clock.now());
      const catalog = new CatalogPlay(this.store, () => this.datacenter());
      await kv.load(kvOps, readOnly ? consistency : 'consistent');
      catalog.load(catalogOps);

      const denied = each(ops, (op) => {
        if (op.type === 'KV') return kv.vetKv(op, authorizer);
        if (op.type === 'Session') return kv.vetSession(op, authorizer);
        return catalog.vet(op, authorizer);
      });
      if (denied.length > 0) return { errors: denied };

      const results: TxnResult[] = [];
      const errors = each(ops, (op) => {
        if (op.type === 'KV') return kv.applyKv(op, results);
        if (op.type === 'Session') return kv.applySession(op);
        return catalog.apply(op, results);
      });
      if (errors.length > 0) return { errors };

      const visible = results.filter((result) => readable(result, authorizer));
      const filtered = visible.length < results.length;
      const planned = catalog.commitOps();
      const writes = [...kv.writes, ...planned.writes];
      if (writes.length === 0) {
        const index = Math.max(kv.revision, catalog.touched ? this.store.index : 0);
        return { results: settle(visible, index), index, filtered };
      }
      const commit = await this.store.commit([...kv.guards(), ...planned.guards, ...writes]);
      if (!commit.ok) continue;
      return { results: settle(visible, commit.index), index: commit.index, filtered };
    }
    throw agentError('TXN_CONFLICT', { tries: TRIES });
  }

  private datacenter(): string {
    return (
      this.options.datacenter ??
      this.store.list<StoredNode>(CATALOG_NODES, '')[0]?.value.Datacenter ??
      DEFAULT_DATACENTER
    );
  }
}

/** Each op's error, with its index (Consul's TxnError), in order. */
function each(ops: readonly TxnOp[], what: (op: TxnOp) => string | undefined): TxnError[] {
  const errors: TxnError[] = [];
  ops.forEach((op, at) => {
    const failed = what(op);
    if (failed !== undefined) errors.push({ OpIndex: at, What: failed });
  });
  return errors;
}

/** The results with the commit's index where they waited for it. */
function settle(results: TxnResult[], index: number): TxnResult[] {
  for (const result of results) {
    const object = Object.values(result)[0] as { CreateIndex: number; ModifyIndex: number };
    if (object.CreateIndex === PENDING) object.CreateIndex = index;
    if (object.ModifyIndex === PENDING) object.ModifyIndex = index;
  }
  return results;
}
