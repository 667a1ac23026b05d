// The only file that imports the etcd3 client (and cockatiel, the policy library it is configured
// with): range, txn, watch and compact in the store's own small types, with deadlines on every
// call and no retries, so a caller learns within its deadline that etcd cannot answer.
import { noop } from 'cockatiel';
import {
  ClientClosedError,
  Etcd3,
  GRPCCancelledError,
  GRPCDeadlineExceededError,
  GRPCUnavailableError,
  type IKeyValue,
  type IRequestOp,
  type Lease,
  type Watcher,
} from 'etcd3';

export interface EtcdConnectionOptions {
  /** Client URLs (`http://host:2379` or `https://…`). */
  readonly endpoints: readonly string[];
  readonly auth?: { readonly username: string; readonly password: string } | undefined;
  readonly tls?: { readonly ca: Buffer; readonly cert?: Buffer | undefined; readonly key?: Buffer | undefined } | undefined;
}

export interface EtcdKeyValue {
  readonly key: string;
  readonly value: Buffer;
  readonly createRevision: number;
  readonly modRevision: number;
  /** The key's lease ID ('0' for none). */
  readonly lease: string;
}

export interface EtcdRangeResult {
  /** The store revision the whole range was read at. */
  readonly revision: number;
  readonly kvs: EtcdKeyValue[];
}

export interface EtcdCompare {
  readonly key: Buffer;
  /** `create` compares create_revision (0 = the key does not exist), `mod` the mod_revision. */
  readonly target: 'create' | 'mod';
  readonly equals: number;
}

export type EtcdTxnOp =
  /** `lease`: the key goes when that lease expires or is revoked (see grantRequestLease). */
  | { readonly op: 'put'; readonly key: Buffer; readonly value: Buffer; readonly lease?: string | undefined }
  /** Deletes `key`, or every key in [key, end) when `end` is given. */
  | { readonly op: 'delete'; readonly key: Buffer; readonly end?: Buffer };

export interface EtcdTxn {
  readonly compares: readonly EtcdCompare[];
  readonly success: readonly EtcdTxnOp[];
  readonly failure: readonly EtcdTxnOp[];
}

export interface EtcdTxnResult {
  readonly succeeded: boolean;
  /** The revision after the txn: the txn's own revision whenever it wrote something. */
  readonly revision: number;
}

export interface EtcdWatchEvent {
  readonly type: 'put' | 'delete';
  readonly kv: EtcdKeyValue;
}

export interface EtcdWatchListener {
  /** etcd accepted the watch (events from its start revision follow). */
  connected(): void;
  /** Events of one watch response, in revision order; `revision` is the response's header revision. */
  events(events: readonly EtcdWatchEvent[], revision: number): void;
  /** The stream broke (etcd down, link lost): the watch is gone; start a new one to resume. */
  disconnected(err: unknown): void;
  /** etcd cancelled the watch (e.g. its start revision was compacted): resume needs a full read. */
  cancelled(err: unknown): void;
}

export interface EtcdWatch {
  cancel(): void;
}

/** A key that lives as long as its lease, kept alive by the client until revoked or lost. */
export interface EtcdLeasedKey {
  /** Resolves once etcd holds the key; rejects when the lease could not be granted or the put failed. */
  readonly ready: Promise<void>;
  /** Deletes the key at once (graceful stop); never rejects. */
  revoke(deadlineMs: number): Promise<void>;
}

/** What the member the client asked believes about the cluster's leadership. */
export interface EtcdStatus {
  /** The member that answered. */
  readonly memberId: string;
  /** The leader it knows; '0' when it knows none (an election, or no quorum). */
  readonly leaderId: string;
}

export interface EtcdMember {
  readonly id: string;
  readonly name: string;
  readonly clientUrls: readonly string[];
}

/** What an error from etcd means to the caller. */
export type EtcdFailure = 'unavailable' | 'too-large' | 'closed' | 'other';

export interface EtcdConnection {
  /** Every key under `prefix` at one revision, read in pages (a linearizable read). */
  rangePrefix(prefix: Buffer, deadlineMs: number): Promise<EtcdRangeResult>;
  txn(txn: EtcdTxn, deadlineMs: number): Promise<EtcdTxnResult>;
  /** Watches `prefix` from `startRevision`; every event at or after it is delivered once. */
  watchPrefix(prefix: Buffer, startRevision: number, listener: EtcdWatchListener): EtcdWatch;
  compact(revision: number, deadlineMs: number): Promise<void>;
  /**
   * Every key in [start, end) at one revision, read in pages: a linearizable read, or with
   * `serializable` whatever the member asked holds (no round trip through the leader).
   */
  rangeKeys(start: Buffer, end: Buffer, deadlineMs: number, options?: { readonly serializable?: boolean }): Promise<EtcdRangeResult>;
  /** Watches [start, end) from `startRevision`, like watchPrefix. */
  watchRange(start: Buffer, end: Buffer, startRevision: number, listener: EtcdWatchListener): EtcdWatch;
  /** One key, or undefined (a linearizable read). */
  getKey(key: Buffer, deadlineMs: number): Promise<EtcdKeyValue | undefined>;
  /** A lease for one request's keys (leaf signing): not kept alive, it lapses after `ttlSeconds`. */
  grantRequestLease(ttlSeconds: number, deadlineMs: number): Promise<string>;
  /** Ends a request lease at once, deleting its keys. */
  revokeRequestLease(id: string, deadlineMs: number): Promise<void>;
  /**
   * Puts `key` under a fresh lease of `ttlSeconds`, kept alive until revoked; `lost` is called
   * once if etcd let the lease expire (unreachable longer than the TTL): put it again then.
   */
  putLeased(key: Buffer, value: Buffer, ttlSeconds: number, lost: (err: unknown) => void): EtcdLeasedKey;
  status(deadlineMs: number): Promise<EtcdStatus>;
  members(deadlineMs: number): Promise<EtcdMember[]>;
  close(): void;
}

/**
 * Where a part reaches etcd: settings to open a client of its own, or a handle on the client the
 * agent's parts share (one gRPC connection per agent: etcd then serves a 5,000-host mesh with
 * 5,000 connections, not four times that; HTTP/2 keeps a slow call from holding up the others).
 */
export type EtcdTarget = EtcdConnectionOptions | { readonly shared: EtcdConnection };

export function openConnection(target: EtcdTarget): EtcdConnection {
  return 'shared' in target ? target.shared : connectEtcd(target);
}

/** Handles on one client: each part closes its own handle, and the last close closes the client. */
export function shareConnection(connection: EtcdConnection): () => EtcdConnection {
  let open = 0;
  return () => {
    open++;
    return new SharedHandle(connection, () => {
      if (--open === 0) connection.close();
    });
  };
}

class SharedHandle implements EtcdConnection {
  private closed = false;

  constructor(
    private readonly c: EtcdConnection,
    private readonly release: () => void,
  ) {}

  rangePrefix(prefix: Buffer, deadlineMs: number): Promise<EtcdRangeResult> {
    return this.c.rangePrefix(prefix, deadlineMs);
  }
  txn(txn: EtcdTxn, deadlineMs: number): Promise<EtcdTxnResult> {
    return this.c.txn(txn, deadlineMs);
  }
  watchPrefix(prefix: Buffer, startRevision: number, listener: EtcdWatchListener): EtcdWatch {
    return this.c.watchPrefix(prefix, startRevision, listener);
  }
  compact(revision: number, deadlineMs: number): Promise<void> {
    return this.c.compact(revision, deadlineMs);
  }
  rangeKeys(start: Buffer, end: Buffer, deadlineMs: number, options?: { readonly serializable?: boolean }): Promise<EtcdRangeResult> {
    return this.c.rangeKeys(start, end, deadlineMs, options);
  }
  watchRange(start: Buffer, end: Buffer, startRevision: number, listener: EtcdWatchListener): EtcdWatch {
    return this.c.watchRange(start, end, startRevision, listener);
  }
  getKey(key: Buffer, deadlineMs: number): Promise<EtcdKeyValue | undefined> {
    return this.c.getKey(key, deadlineMs);
  }
  grantRequestLease(ttlSeconds: number, deadlineMs: number): Promise<string> {
    return this.c.grantRequestLease(ttlSeconds, deadlineMs);
  }
  revokeRequestLease(id: string, deadlineMs: number): Promise<void> {
    return this.c.revokeRequestLease(id, deadlineMs);
  }
  putLeased(key: Buffer, value: Buffer, ttlSeconds: number, lost: (err: unknown) => void): EtcdLeasedKey {
    return this.c.putLeased(key, value, ttlSeconds, lost);
  }
  status(deadlineMs: number): Promise<EtcdStatus> {
    return this.c.status(deadlineMs);
  }
  members(deadlineMs: number): Promise<EtcdMember[]> {
    return this.c.members(deadlineMs);
  }
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.release();
  }
}

/** Keys per range page: keeps each response far below gRPC's 4 MiB default message limit. */
const RANGE_PAGE = 1000;

/**
 * Pings on an idle link find a hung or partitioned member without waiting for TCP. etcd refuses
 * pings more often than its --grpc-keepalive-min-time (5 s by default), so 10 s, with 5 s to answer.
 */
const KEEPALIVE = { 'grpc.keepalive_time_ms': 10_000, 'grpc.keepalive_timeout_ms': 5_000 };

export function connectEtcd(options: EtcdConnectionOptions): EtcdConnection {
  const client = new Etcd3({
    hosts: [...options.endpoints],
    ...(options.auth === undefined ? {} : { auth: { username: options.auth.username, password: options.auth.password } }),
    ...(options.tls === undefined
      ? {}
      : {
          credentials: {
            rootCertificate: options.tls.ca,
            ...(options.tls.key === undefined ? {} : { privateKey: options.tls.key }),
            ...(options.tls.cert === undefined ? {} : { certChain: options.tls.cert }),
          },
        }),
    grpcOptions: KEEPALIVE,
    // The store decides when to try again (reconnect backoff, caller deadlines); the client must not
    // retry behind its back nor hold a circuit open after etcd is back.
    faultHandling: { global: noop, host: () => noop },
  });
  return new Etcd3Connection(client);
}

class Etcd3Connection implements EtcdConnection {
  constructor(private readonly client: Etcd3) {}

  rangePrefix(prefix: Buffer, deadlineMs: number): Promise<EtcdRangeResult> {
    return this.rangeKeys(prefix, prefixEnd(prefix), deadlineMs);
  }

  async getKey(key: Buffer, deadlineMs: number): Promise<EtcdKeyValue | undefined> {
    const res = await this.client.kv.range({ key }, { deadline: Date.now() + deadlineMs });
    const kv = res.kvs[0];
    return kv === undefined ? undefined : keyValue(kv);
  }

  async grantRequestLease(ttlSeconds: number, deadlineMs: number): Promise<string> {
    const res = await this.client.leaseClient.leaseGrant({ TTL: ttlSeconds }, { deadline: Date.now() + deadlineMs });
    return String(res.ID);
  }

  async revokeRequestLease(id: string, deadlineMs: number): Promise<void> {
    await this.client.leaseClient.leaseRevoke({ ID: id }, { deadline: Date.now() + deadlineMs });
  }

  async rangeKeys(start: Buffer, end: Buffer, deadlineMs: number, options?: { readonly serializable?: boolean }): Promise<EtcdRangeResult> {
    const kvs: EtcdKeyValue[] = [];
    const serializable = options?.serializable === true;
    let from = start;
    let revision = 0;
    for (;;) {
      const res = await this.client.kv.range(
        { key: from, range_end: end, limit: RANGE_PAGE, serializable, ...(revision === 0 ? {} : { revision }) },
        { deadline: Date.now() + deadlineMs },
      );
      if (revision === 0) revision = Number(res.header.revision);
      for (const kv of res.kvs) kvs.push(keyValue(kv));
      const last = res.kvs[res.kvs.length - 1];
      if (!res.more || last === undefined) return { revision, kvs };
      from = Buffer.concat([last.key, Buffer.from([0])]);
    }
  }

  async txn(txn: EtcdTxn, deadlineMs: number): Promise<EtcdTxnResult> {
    const res = await this.client.kv.txn(
      {
        compare: txn.compares.map((c) =>
          c.target === 'create'
            ? { key: c.key, target: 'Create', result: 'Equal', create_revision: c.equals }
            : { key: c.key, target: 'Mod', result: 'Equal', mod_revision: c.equals },
        ),
        success: txn.success.map(requestOp),
        failure: txn.failure.map(requestOp),
      },
      { deadline: Date.now() + deadlineMs },
    );
    return { succeeded: res.succeeded, revision: Number(res.header.revision) };
  }

  watchPrefix(prefix: Buffer, startRevision: number, listener: EtcdWatchListener): EtcdWatch {
    return this.watchRange(prefix, prefixEnd(prefix), startRevision, listener);
  }

  watchRange(start: Buffer, end: Buffer, startRevision: number, listener: EtcdWatchListener): EtcdWatch {
    const watcher: Watcher = this.client.watch().inRange({ start, end }).startRevision(String(startRevision)).watcher();
    let live = true;
    const stop = (): void => {
      if (!live) return;
      live = false;
      watcher.removeAllListeners();
      // Swallowed: cancelling a watch on a dead stream has nothing left to tell.
      watcher.on('error', () => {});
      watcher.cancel().catch(() => {});
    };
    watcher.on('connected', () => {
      if (live) listener.connected();
    });
    watcher.on('data', (res) => {
      if (!live) return;
      const events = res.events.map((ev): EtcdWatchEvent => ({ type: ev.type === 'Delete' ? 'delete' : 'put', kv: keyValue(ev.kv) }));
      listener.events(events, Number(res.header.revision));
    });
    watcher.on('disconnected', (err: unknown) => {
      if (!live) return;
      stop();
      listener.disconnected(err);
    });
    watcher.on('error', (err: unknown) => {
      if (!live) return;
      stop();
      listener.cancelled(err);
    });
    return { cancel: stop };
  }

  async compact(revision: number, deadlineMs: number): Promise<void> {
    await this.client.kv.compact({ revision, physical: true }, { deadline: Date.now() + deadlineMs });
  }

  putLeased(key: Buffer, value: Buffer, ttlSeconds: number, lost: (err: unknown) => void): EtcdLeasedKey {
    const lease: Lease = this.client.lease(ttlSeconds);
    let live = true;
    lease.on('lost', (err) => {
      if (!live) return;
      live = false;
      lease.removeAllListeners();
      lease.on('lost', () => {});
      lost(err);
    });
    const ready = lease.put(key).value(value).exec().then(() => undefined);
    return {
      ready,
      revoke: async (deadlineMs) => {
        live = false;
        // Swallowed: a lease etcd cannot revoke now still expires after its TTL.
        await lease.revoke({ deadline: Date.now() + deadlineMs }).catch(() => lease.release());
      },
    };
  }

  async status(deadlineMs: number): Promise<EtcdStatus> {
    const res = await this.client.maintenance.status({ deadline: Date.now() + deadlineMs });
    return { memberId: String(res.header.member_id), leaderId: String(res.leader) };
  }

  async members(deadlineMs: number): Promise<EtcdMember[]> {
    // Serializable: the member list is a configuration read that must answer without a quorum.
    const res = await this.client.cluster.memberList({ linearizable: false }, { deadline: Date.now() + deadlineMs });
    return res.members.map((m) => ({ id: String(m.ID), name: m.name, clientUrls: [...m.clientURLs] }));
  }

  close(): void {
    this.client.close();
  }
}

/** Classifies an error thrown by a call of this connection. */
export function etcdFailure(err: unknown): EtcdFailure {
  if (err instanceof ClientClosedError) return 'closed';
  if (err instanceof GRPCUnavailableError || err instanceof GRPCDeadlineExceededError || err instanceof GRPCCancelledError) {
    return 'unavailable';
  }
  const message = err instanceof Error ? err.message : '';
  if (/request is too large|too many operations in txn request/.test(message)) return 'too-large';
  if (/no leader|leader changed|timed out|not capable|unhealthy/.test(message)) return 'unavailable';
  return 'other';
}

function requestOp(op: EtcdTxnOp): IRequestOp {
  if (op.op === 'put') return { request_put: { key: op.key, value: op.value, ...(op.lease === undefined ? {} : { lease: op.lease }) } };
  return { request_delete_range: op.end === undefined ? { key: op.key } : { key: op.key, range_end: op.end } };
}

function keyValue(kv: IKeyValue): EtcdKeyValue {
  return {
    key: kv.key.toString('utf8'),
    value: kv.value,
    createRevision: Number(kv.create_revision),
    modRevision: Number(kv.mod_revision),
    lease: String(kv.lease),
  };
}

/** The first key after every key that starts with `prefix` (etcd's range_end for a prefix). */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if ((end[i] as number) < 0xff) {
      end[i] = (end[i] as number) + 1;
      return end.subarray(0, i + 1);
    }
  }
  // All 0xff (or empty): to the end of the keyspace.
  return Buffer.from([0]);
}
