// The operations of one transaction as the HTTP layer hands them over (Consul's api.TxnOp: one of
// KV, Node, Service, Check or Session, each with its verb), what the results and errors look like,
// and the small authorizer the transaction asks (an acl/ Identity's authorizer fits it).
import type { CheckInput, ServiceInput } from '../catalog/register.js';
import type { KvEntryJson, StoredKv } from '../kv/entries.js';

export interface KvTxnOp {
  readonly type: 'KV';
  /** One of Consul's KV verbs; another fails as Consul's does, `unknown KV verb`. */
  readonly verb: string;
  readonly key: string;
  readonly value: StoredKv;
  /** ModifyIndex for cas, check-index and delete-cas (0 for cas: only if absent). */
  readonly index: number;
  readonly session: string;
}

/** Consul's api.Node as a Node op carries it (its ModifyIndex for cas and delete-cas). */
export interface NodeInput {
  readonly ID: string;
  readonly Node: string;
  readonly Address: string;
  /** '' for the agent's own. */
  readonly Datacenter: string;
  readonly TaggedAddresses: Readonly<Record<string, string>>;
  readonly Meta: Readonly<Record<string, string>>;
  readonly ModifyIndex: number;
}

export interface NodeTxnOp {
  readonly type: 'Node';
  readonly verb: string;
  readonly node: NodeInput;
}

export interface ServiceTxnOp {
  readonly type: 'Service';
  readonly verb: string;
  /** The node the service is on. */
  readonly node: string;
  readonly service: ServiceInput;
  readonly index: number;
}

export interface CheckTxnOp {
  readonly type: 'Check';
  readonly verb: string;
  /** Its Node names the node it is on. */
  readonly check: CheckInput;
  readonly index: number;
}

export interface SessionTxnOp {
  readonly type: 'Session';
  readonly verb: string;
  /** The session's ID. */
  readonly id: string;
}

export type TxnOp = KvTxnOp | NodeTxnOp | ServiceTxnOp | CheckTxnOp | SessionTxnOp;

/** One entry of Results: the object the op read or wrote, under its kind (Consul's TxnResult, its omitempty fields). */
export type TxnResult =
  | { readonly KV: KvEntryJson }
  | { readonly Node: Record<string, unknown> }
  | { readonly Service: Record<string, unknown> }
  | { readonly Check: Record<string, unknown> };

export interface TxnError {
  readonly OpIndex: number;
  readonly What: string;
}

export type TxnOutcome =
  | {
      readonly results: TxnResult[];
      readonly index: number;
      /** Results the token may not read were left out (Consul's FilterTxnResults). */
      readonly filtered: boolean;
    }
  | { readonly errors: TxnError[] };

/** What a transaction asks of the caller's token; acl/'s Authorizer is one. */
export interface TxnAuthorizer {
  allowed(resource: 'key' | 'node' | 'service' | 'session', access: 'read' | 'write', name?: string): boolean;
  /** A recursive KV delete: write on the prefix and on every rule beneath it. */
  keyWritePrefix(prefix: string): boolean;
}

/** KV verbs that write: a transaction of the others (and of catalog gets) is read-only. */
const KV_WRITES: ReadonlySet<string> = new Set(['set', 'cas', 'lock', 'unlock', 'delete', 'delete-tree', 'delete-cas']);

/** Consul's Txn.Read path (`?stale` allowed): no op writes. A catalog op other than `get` writes, as a session op does. */
export function isReadOnly(ops: readonly TxnOp[]): boolean {
  return ops.every((op) => {
    switch (op.type) {
      case 'KV':
        return !KV_WRITES.has(op.verb);
      case 'Session':
        return false;
      default:
        return op.verb === 'get';
    }
  });
}

/** An index the commit takes, known once it is made: results carry this until then. */
export const PENDING = -1;
