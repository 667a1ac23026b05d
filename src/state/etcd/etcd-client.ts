// The only file that imports the etcd3 client (and cockatiel, the policy library it is configured
// with): range, txn, watch and compact in the store's own small types, with deadlines on every
// call. One member down costs latency only: a member whose calls fail is skipped for a while (its
// streams move to the others), and a failed call is tried again on another member with a short
// backoff, all within the caller's deadline. Every error it hands out is one line. Ranges are read
// in pages bounded in bytes and watch responses come in fragments, so no message passes the
// receive limit (MAX_RECEIVE_BYTES).
import { BrokenCircuitError, isBrokenCircuitError, noop, type IDefaultPolicyContext, type IPolicy } from 'cockatiel';
import {
  castGrpcError,
  ClientClosedError,
  Etcd3,
  GRPCCancelledError,
  GRPCDeadlineExceededError,
  GRPCResourceExhastedError,
  GRPCUnavailableError,
  isRecoverableError,
  type IKeyValue,
  type IRangeRequest,
  type IRangeResponse,
  type IRequestOp,
  type Lease,
  type Watcher,
} from 'etcd3';
import type { Logger } from '../../core/log.js';
import { backoffDelay, type Backoff } from '../../core/backoff.js';
import { KeepAlives } from './keep-alives.js';
import { shareOneChannel, type ChannelHost, type MemberChannel } from './member-channel.js';

export interface EtcdConnectionOptions {
  /** Client URLs (`http://host:2379` or `https://…`). */
  readonly endpoints: readonly string[];
  readonly auth?: { readonly username: string; readonly password: string } | undefined;
  readonly tls?:
    { readonly ca: Buffer; readonly cert?: Buffer | undefined; readonly key?: Buffer | undefined } | undefined;
  /** Where a member going away or coming back is said (once each), and each failed call at debug. */
  readonly log?: Logger | undefined;
  readonly random?: (() => number) | undefined;
}

export interface EtcdKeyValue {
  readonly key: string;
  readonly value: Buffer;
  readonly createRevision: number;
  readonly modRevision: number;
  /** The key's lease ID ('0' for none). */
  readonly lease: string;
}

/** How rangeKeys reads. */
export interface EtcdRangeOptions {
  /** Whatever the member asked holds (no round trip through the leader); else a linearizable read. */
  readonly serializable?: boolean;
  /** Keys and revisions only: etcd sends no values (etcd's keys_only; every `value` is empty). */
  readonly keysOnly?: boolean;
  /**
   * The most bytes the rows may hold (keys past their first `keyRootBytes`, and values): a read
   * that goes over rejects with EtcdRangeTooLarge once the page that crossed it is in.
   */
  readonly maxBytes?: number;
  readonly keyRootBytes?: number;
  /** Read at this revision (one etcd still holds: it answers until it compacts it away); else the current one. */
  readonly revision?: number;
  /**
   * A key read in one transaction with the first page, so at the range's revision (a snapshot
   * restore's fence: etcd-snapshot.ts); the result's `guard`.
   */
  readonly guard?: Buffer;
  /**
   * Each page's rows as they come, instead of in the result (whose `kvs` then stays empty): a
   * caller that keeps less than the rows holds one page at a time.
   */
  readonly onPage?: (kvs: readonly EtcdKeyValue[]) => void;
  /**
   * Rows a page holds at most (default RANGE_PAGE_MAX_ROWS), its bytes still bounded: etcd counts
   * every key left in the range for each page, so a whole prefix read in small pages costs etcd
   * the square of its keys (a snapshot's 110,000 rows in pages of 1,000: seconds).
   */
  readonly pageRows?: number;
}

/** A range held more than its `maxBytes` (EtcdRangeOptions). */
export class EtcdRangeTooLarge extends Error {
  constructor(readonly maxBytes: number) {
    super(`the range holds more than ${maxBytes} bytes`);
    this.name = 'EtcdRangeTooLarge';
  }
}

export interface EtcdRangeResult {
  /** The store revision the whole range was read at. */
  readonly revision: number;
  readonly kvs: EtcdKeyValue[];
  /** The `guard` key at that revision, when asked for and present (EtcdRangeOptions). */
  readonly guard?: EtcdKeyValue;
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
  /**
   * An earlier attempt of this txn went unanswered and may have been applied (see txn): a failed
   * compare may be that attempt's doing, so `succeeded: false` does not say the write was not made.
   */
  readonly unsure?: true;
}

/**
 * A txn whose outcome is unknown: an attempt was sent and etcd's answer never came (the call timed
 * out, was cancelled or lost its connection, or etcd said its own request timed out), and no later
 * attempt answered for it. etcd says the same of such a request: it may have been applied.
 */
export class EtcdOutcomeUnknown extends Error {
  constructor(readonly last: unknown) {
    super(`the transaction may have been applied: ${last instanceof Error ? last.message : String(last)}`);
    this.name = 'EtcdOutcomeUnknown';
    this.stack = `${this.name}: ${this.message}`; // one line, as every error handed out (oneLine)
  }
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
  /** The cluster's raised alarms in etcd's words (`memberID:1 alarm:NOSPACE`); empty when none. */
  readonly alarms: readonly string[];
}

export interface EtcdMember {
  readonly id: string;
  readonly name: string;
  readonly clientUrls: readonly string[];
}

/** What an error from etcd means to the caller (`outcome-unknown`: EtcdOutcomeUnknown, a txn that may have been applied). */
export type EtcdFailure = 'unavailable' | 'outcome-unknown' | 'too-large' | 'no-space' | 'closed' | 'other';

export interface EtcdConnection {
  /** Every key under `prefix` at one revision, read in pages (a linearizable read). */
  rangePrefix(prefix: Buffer, deadlineMs: number): Promise<EtcdRangeResult>;
  txn(txn: EtcdTxn, deadlineMs: number): Promise<EtcdTxnResult>;
  /** Watches `prefix` from `startRevision`; every event at or after it is delivered once. */
  watchPrefix(prefix: Buffer, startRevision: number, listener: EtcdWatchListener): EtcdWatch;
  compact(revision: number, deadlineMs: number): Promise<void>;
  /**
   * Every key in [start, end) at one revision, read in pages bounded in bytes (RANGE_PAGE_BYTES):
   * a linearizable read, or with `serializable` whatever the member asked holds.
   */
  rangeKeys(start: Buffer, end: Buffer, deadlineMs: number, options?: EtcdRangeOptions): Promise<EtcdRangeResult>;
  /** Watches [start, end) from `startRevision`, like watchPrefix. */
  watchRange(start: Buffer, end: Buffer, startRevision: number, listener: EtcdWatchListener): EtcdWatch;
  /** One key, or undefined (a linearizable read). */
  getKey(key: Buffer, deadlineMs: number): Promise<EtcdKeyValue | undefined>;
  /** A lease for one request's keys (leaf signing): not kept alive, it lapses after `ttlSeconds`. */
  grantRequestLease(ttlSeconds: number, deadlineMs: number): Promise<string>;
  /** Ends a request lease at once, deleting its keys. */
  revokeRequestLease(id: string, deadlineMs: number): Promise<void>;
  /** Keeps a lease alive once (its full TTL again): the seconds it now has, or 0 if it has ended. */
  renewLease(id: string, deadlineMs: number): Promise<number>;
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
  rangeKeys(start: Buffer, end: Buffer, deadlineMs: number, options?: EtcdRangeOptions): Promise<EtcdRangeResult> {
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
  renewLease(id: string, deadlineMs: number): Promise<number> {
    return this.c.renewLease(id, deadlineMs);
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

const MiB = 1024 * 1024;
/**
 * The largest row the agent writes. Every write comes in one request body of at most
 * limits.http_max_body_bytes (4 MiB by default), stored as JSON with the value base64 (4/3) beside
 * its key: under 6 MiB. etcd refuses any request over its --max-request-bytes (1.5 MiB by
 * default), so with etcd's defaults no row passes 1.5 MiB.
 */
const LARGEST_ROW_BYTES = 6 * MiB;
/**
 * gRPC's receive limit for every call and stream (its default, 4 MiB, is under one such row): a
 * one-row page fits four times over, and so does each fragment of a watch response (watchRange).
 */
const MAX_RECEIVE_BYTES = 4 * LARGEST_ROW_BYTES;
/**
 * Bytes a range page aims at: etcd builds each page whole in memory, and the agent holds it twice
 * while decoding; 2 MiB keeps both small, and a page whose rows run up to 12 times larger than the
 * last page's still fits the receive limit.
 */
const RANGE_PAGE_BYTES = 2 * MiB;
/** Rows a page holds at most, however small: the 1,000 of every page before, as many calls as ever. */
const RANGE_PAGE_MAX_ROWS = 1000;
/**
 * Rows of a first page, before any row's size is known: 16 rows of etcd's largest request by
 * default (1.5 MiB) fill the receive limit (24 MiB). Keys alone take RANGE_PAGE_MAX_ROWS at once.
 */
const FIRST_PAGE_ROWS = 16;
/** A row's bytes in a range response besides its key and value: 4 revisions and fields' tags. */
const ROW_OVERHEAD_BYTES = 32;

/**
 * Pings on an idle link find a hung or partitioned member without waiting for TCP. etcd refuses
 * pings more often than its --grpc-keepalive-min-time (5 s by default), so 10 s, with 5 s to answer.
 * A call that finds a member hung moves its streams sooner (MemberHealth); this is the backstop.
 * A member's connection is not closed on errors (see wireIntoPool): gRPC reconnects it, at most
 * 2 s apart, so a member back from an outage is used again within about 2 s; one cut off (its
 * packets dropped) within about FRESH_CONNECTION_MS more.
 */
const CHANNEL_OPTIONS = {
  'grpc.keepalive_time_ms': 10_000,
  'grpc.keepalive_timeout_ms': 5_000,
  'grpc.initial_reconnect_backoff_ms': 200,
  'grpc.max_reconnect_backoff_ms': 2_000,
  'grpc.max_receive_message_length': MAX_RECEIVE_BYTES,
};

/**
 * One attempt gets a third of the caller's deadline, and at least ATTEMPT_FLOOR_MS: a hung member
 * costs that once, and the rest is left for the other members.
 */
const ATTEMPT_SHARE = 3;
const ATTEMPT_FLOOR_MS = 250;
/** Pause between attempts: short and capped, so a call rides out an election within its deadline. */
const RETRY_BACKOFF: Backoff = { initialMs: 20, maxMs: 250 };
/** How long a failed member is skipped before one call tries it again; doubles per failed try. */
const SKIP_BACKOFF: Backoff = { initialMs: 250, maxMs: 1_500 };
/**
 * etcd auth: each Authenticate call has a deadline (etcd3 sets none: one hung member would hold
 * every call), and after a failed authentication the next waits AUTH_BACKOFF (etcd3 would try again
 * on every call, which during an outage is thousands of Authenticate calls a second).
 */
const AUTH_DEADLINE_MS = 2_000;
const AUTH_BACKOFF: Backoff = { initialMs: 250, maxMs: 2_000 };
/**
 * A call that needs the leader (reads, txns, leases) may wait out an election, whatever its
 * caller's deadline, as long as Consul holds a request for a leader (7 s): etcd's default election
 * timeout is 1 s, randomised up to 2 s, plus the vote, and a member back from a partition forces
 * a new election (etcd 3.4 has pre-vote off), which on a loaded host took over 5 s in CI. Only
 * while some member is up: with every member unreachable the call fails at once, and with every
 * member silent it ends at its own deadline (see call()).
 */
const ELECTION_WAIT_MS = 7_000;
/**
 * A member whose attempt timed out is asked for its status within this long: silence means hung.
 * With an attempt's share of a commit's deadline (500 ms), a member is judged hung after 1.5 s of
 * silence; a shorter probe judged healthy members hung whenever the agent's own event loop ran late
 * (a wave of leaves on a loaded host), and with all three so judged every call failed at once.
 */
const PROBE_DEADLINE_MS = 1_000;
/**
 * A member whose every try has failed for this long, its connection attempt still under way, gets
 * a new attempt (member-channel.ts): a SYN lost in a partition leaves the attempt waiting on TCP's
 * doubling retransmission timer (up to a minute) after the link is back. An abandoned attempt's
 * socket is closed by the kernel within about two minutes, so a long partition leaves about a
 * dozen per member. A refused attempt is not stuck: gRPC tries again within 2 s by itself.
 */
const FRESH_CONNECTION_MS = 10_000;
/** Grant and put of a leased key: the owner (members.ts) tries again with its own backoff. */
const LEASED_PUT_DEADLINE_MS = 2_000;

export function connectEtcd(options: EtcdConnectionOptions): EtcdConnection {
  const random = options.random ?? Math.random;
  const members: MemberHealth[] = [];
  const credentials =
    options.tls === undefined
      ? {}
      : {
          credentials: {
            rootCertificate: options.tls.ca,
            ...(options.tls.key === undefined ? {} : { privateKey: options.tls.key }),
            ...(options.tls.cert === undefined ? {} : { certChain: options.tls.cert }),
          },
        };
  const client = new Etcd3({
    hosts: [...options.endpoints],
    ...(options.auth === undefined
      ? {}
      : {
          auth: {
            username: options.auth.username,
            password: options.auth.password,
            callOptions: () => ({ deadline: Date.now() + AUTH_DEADLINE_MS }),
          },
        }),
    ...credentials,
    grpcOptions: CHANNEL_OPTIONS,
    // Retries are this file's (bounded by the caller's deadline, see call()); etcd3's own would reuse
    // one deadline for every attempt. Per member, the client skips members that failed lately.
    faultHandling: {
      global: noop,
      host: (host) => {
        const member = new MemberHealth(host, options.log, random);
        members.push(member);
        return member;
      },
    },
  });
  wireIntoPool(client);
  if (options.auth !== undefined) throttleAuthentication(client, random);
  keepWatchesCreatable(client, options.log);
  return new Etcd3Connection(client, members, random, options.log);
}

/** A gRPC stream etcd3 opened through a member's policy (a watch, a lease keepalive). */
interface LiveStream {
  cancel(): void;
  once(event: string, listener: () => void): unknown;
}

function isStream(value: unknown): value is LiveStream {
  if (typeof value !== 'object' || value === null) return false;
  return typeof (value as LiveStream).cancel === 'function' && typeof (value as LiveStream).once === 'function';
}

const NEVER_ABORTED = new AbortController().signal;

/**
 * One member's standing, as etcd3's per-host policy: once a call finds it unreachable, or silent
 * past the attempt's deadline and then to a status probe (a follower waiting out an election is
 * slow, not gone), calls skip it (etcd3 moves on to the next host) for SKIP_BACKOFF,
 * then one call at a time tries it again; its open streams are cancelled so that they reconnect
 * to a member that answers. It says once that the member went, and once that it came back.
 */
class MemberHealth implements IPolicy<IDefaultPolicyContext> {
  declare readonly _altReturn: never;
  readonly onSuccess = noop.onSuccess;
  readonly onFailure = noop.onFailure;
  private down = false;
  /** Down because it said nothing in time (hung, or slow), not because it could not be reached. */
  private silent = false;
  private failedTries = 0;
  private skipUntil = 0;
  private trying = false;
  private probing = false;
  /** Since when failed tries have used the member's present connection (0: up). */
  private connectionFailingSince = 0;
  private readonly streams = new Set<LiveStream>();
  /** Asks this member alone for its status (see wireIntoPool). */
  probe: (deadlineMs: number) => Promise<void> = () => Promise.resolve();
  /** The member's connection (see wireIntoPool). */
  channel: MemberChannel = { connecting: () => false, reconnect: () => {} };

  constructor(
    readonly host: string,
    private readonly log: Logger | undefined,
    private readonly random: () => number,
  ) {}

  /** Whether the member is down and not due for a try (or being tried by another call). */
  gone(now: number): boolean {
    return this.down && (now < this.skipUntil || this.trying);
  }

  /** Whether it is gone because it could not be reached (refused, reset): etcd is not there. */
  refused(now: number): boolean {
    return this.gone(now) && !this.silent;
  }

  /** Whether it is down (silent or unreachable), due for a try or not. */
  get isDown(): boolean {
    return this.down;
  }

  /** Whether a call made now passes this member by: gone, or its status probe not back yet. */
  skipping(now: number): boolean {
    return this.probing || this.gone(now);
  }

  async execute<T>(fn: (context: IDefaultPolicyContext) => PromiseLike<T> | T, signal?: AbortSignal): Promise<T> {
    if (this.skipping(Date.now())) throw new BrokenCircuitError();
    const tryingAgain = this.down;
    if (tryingAgain) this.trying = true;
    try {
      const result = await fn({ signal: signal ?? NEVER_ABORTED });
      // A stream is opened before the member says anything: only an answer shows it is back.
      if (isStream(result)) this.track(result);
      else this.answered();
      return result;
    } catch (err) {
      if (err instanceof GRPCDeadlineExceededError && !this.down) this.check();
      else if (memberFault(err)) this.failed(err);
      throw err;
    } finally {
      if (tryingAgain) this.trying = false;
    }
  }

  /** After a timed-out call: a member that answers its status is alive (perhaps leaderless). */
  private check(): void {
    if (this.probing) return;
    this.probing = true;
    this.probe(PROBE_DEADLINE_MS).then(
      () => (this.probing = false),
      (err: unknown) => {
        this.probing = false;
        if (memberFault(err)) this.failed(err);
      },
    );
  }

  private answered(): void {
    if (!this.down) return;
    this.down = false;
    this.failedTries = 0;
    this.connectionFailingSince = 0;
    this.log?.info({ member: this.host }, 'etcd member answers again');
  }

  private failed(err: unknown): void {
    this.silent = err instanceof GRPCDeadlineExceededError;
    if (this.down) {
      this.failedTries++;
    } else {
      this.down = true;
      const reason = reasonOf(err);
      this.log?.warn({ member: this.host, reason }, 'etcd member not answering; using the other members');
    }
    const now = Date.now();
    this.skipUntil = now + backoffDelay(SKIP_BACKOFF, this.failedTries, this.random);
    this.freshConnectionIfStuck(now);
    const streams = [...this.streams];
    this.streams.clear();
    for (const stream of streams) stream.cancel();
  }

  /** An attempt still connecting after tries have failed for FRESH_CONNECTION_MS is replaced. */
  private freshConnectionIfStuck(now: number): void {
    if (this.connectionFailingSince === 0) this.connectionFailingSince = now;
    else if (now - this.connectionFailingSince >= FRESH_CONNECTION_MS && this.channel.connecting()) {
      this.connectionFailingSince = now;
      this.log?.debug({ member: this.host }, 'etcd member: its connection attempt still under way; trying a new one');
      this.channel.reconnect();
    }
  }

  private track(stream: LiveStream): void {
    this.streams.add(stream);
    const untrack = (): void => void this.streams.delete(stream);
    stream.once('close', untrack);
    stream.once('status', untrack);
  }
}

/** The member could not be reached, or did not answer within the attempt's deadline. */
function memberFault(err: unknown): boolean {
  if (err instanceof GRPCDeadlineExceededError) return true;
  // "etcdserver: no leader" and the like come as UNAVAILABLE from a member that did answer.
  return err instanceof GRPCUnavailableError && !err.message.includes('etcdserver:');
}

/** Whether another attempt (on another member, or on this one after an election) may succeed. */
function retryable(err: unknown): boolean {
  if (err instanceof ClientClosedError || isNoSpace(err)) return false;
  return isBrokenCircuitError(err) || (err instanceof Error && isRecoverableError(err));
}

/** An error's one line: gRPC errors from etcd3 carry long stacks that say nothing to an operator. */
function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Every error handed out is one line (its stack trimmed to its message); the full error goes to
 * the debug log first. Its class stays, so that etcdFailure still reads it.
 */
function oneLine(err: unknown, log: Logger | undefined): unknown {
  if (!(err instanceof Error)) return err;
  if (log?.isLevelEnabled?.('debug') !== false) log?.debug({ err }, 'etcd call failed');
  err.stack = `${err.name}: ${err.message}`;
  return err;
}

/**
 * etcd3 authenticates again on every call after an authentication failed (against each member in
 * turn, with no pause). This wraps its authenticator (internal to etcd3 1.1.2, pinned in
 * package.json) so that after a failure the next attempt waits AUTH_BACKOFF, and calls meanwhile
 * fail at once with the last error.
 */
function throttleAuthentication(client: Etcd3, random: () => number): void {
  const authenticator = poolOf(client).authenticator;
  if (authenticator === undefined || typeof authenticator.getMetadata !== 'function') return;
  const getMetadata = authenticator.getMetadata.bind(authenticator);
  let failures = 0;
  let nextTry = 0;
  let lastError: unknown;
  let watched: Promise<unknown> | undefined;
  authenticator.getMetadata = () => {
    if (failures > 0 && Date.now() < nextTry) return Promise.reject(lastError);
    const pending = getMetadata();
    if (pending !== watched) {
      // etcd3 hands every caller the same promise until it settles: count each attempt once.
      watched = pending;
      pending.then(
        () => (failures = 0),
        (err: unknown) => {
          lastError = err;
          nextTry = Date.now() + backoffDelay(AUTH_BACKOFF, failures, random);
          failures++;
        },
      );
    }
    return pending;
  };
}

/** What etcd3's watch stream carries when etcd refused a new watch at once (created and canceled). */
interface CreatedResponse {
  readonly canceled?: boolean;
  readonly cancel_reason?: string;
}

/** The parts of etcd3's WatchManager and its AttachQueue (internal to etcd3 1.1.2) used here. */
interface WatchManagerInternals {
  queue?: { queue: unknown[]; readQueue(): void };
  stream?: { removeAllListeners(): unknown; on(event: 'error', listener: () => void): unknown };
  handleCreatedResponse(res: CreatedResponse): void;
  handleCancelResponse(watcher: unknown, res: CreatedResponse): void;
  handleError(err: Error): void;
}

/** The watch stream was reopened to take a new auth token; its watches carry on from where they were. */
class WatchStreamRenewed extends Error {}

/**
 * etcd checks the auth token a watch stream was opened with each time a watch is created on it, and
 * a simple token (etcd's default) lapses after --auth-token-ttl (300 s) unused on that member; etcd
 * then refuses the watch in its created response. etcd3 1.1.2 leaves such a watch at the head of
 * its queue of watches to create, which sends one at a time, so no later watch of the process was
 * ever created (a quiet client agent's forwarded writes then took 2 s each, through the sweeps).
 * Here a refused watch leaves the queue; when the token was the reason, the stream is reopened
 * with a new token and every watch on it, the refused one too, is created again from its revision
 * (docs/decisions.md#one-member-down).
 */
function keepWatchesCreatable(client: Etcd3, log: Logger | undefined): void {
  const manager = (client as unknown as { watchManager?: WatchManagerInternals }).watchManager;
  if (manager === undefined || typeof manager.handleCreatedResponse !== 'function') return;
  const handleCreated = manager.handleCreatedResponse.bind(manager);
  manager.handleCreatedResponse = (res) => {
    const queue = manager.queue;
    const refused = queue?.queue[0];
    if (res.canceled !== true || queue === undefined || refused === undefined) return handleCreated(res);
    if (STALE_TOKEN.test(res.cancel_reason ?? '')) {
      log?.info(
        { reason: res.cancel_reason },
        'etcd refused a watch: the watch stream has an expired auth token; reopening it with a new one',
      );
      poolOf(client).authenticator?.invalidateMetadata?.();
      // Cancelling the stream makes gRPC emit CANCELLED on it, which etcd3 would take for a second,
      // real error and pass to every watch: the old stream's listeners go first.
      manager.stream?.removeAllListeners();
      manager.stream?.on('error', () => {});
      manager.handleError(new WatchStreamRenewed(res.cancel_reason));
      return;
    }
    queue.queue.shift();
    manager.handleCancelResponse(refused, res);
    queue.readQueue();
  };
}

const STALE_TOKEN = /invalid auth token|auth: revision in header is old/;

/** The parts of etcd3's per-member Host (internal to etcd3 1.1.2, pinned in package.json) used here. */
interface PoolHost extends ChannelHost {
  readonly host: string;
  faultHandling?: unknown;
}

interface PoolInternals {
  hosts?: PoolHost[];
  withConnection?: (service: string, fn: (conn: PoolConnection) => unknown, ...rest: unknown[]) => Promise<unknown>;
  authenticator?: {
    getMetadata(): Promise<unknown>;
    invalidateMetadata?(): void;
    getCredentialsFromHost(address: string, name: string, password: string, callOptions: unknown): Promise<string>;
  };
}

/** grpc-js's Metadata, as much of it as is used here. */
interface CallMetadata {
  clone(): CallMetadata;
  set(key: string, value: string): void;
}

interface PoolConnection {
  readonly metadata: CallMetadata;
}

function poolOf(client: Etcd3): PoolInternals {
  return (client as unknown as { pool?: PoolInternals }).pool ?? {};
}

/** Calls one unary method of one member's gRPC client, its connection shared with every other call. */
function unary<T>(host: PoolHost, service: string, method: string, request: unknown, options: unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    const client = host.getServiceClient(service) as Record<string, (...args: unknown[]) => unknown>;
    const done = (err: Error | null, res: T): void => (err ? reject(castGrpcError(err)) : resolve(res));
    client[method]!.call(client, request, options, done);
  });
}

/**
 * Three changes to etcd3's connection pool, each so that an agent keeps one connection per member:
 * - etcd3 closes a member's gRPC clients after any retryable error (and the next call opens new
 *   ones): a stream still open on the old connection kept it beside the new one for as long as the
 *   stream lived, so an outage ended with more connections than it began with. They share one
 *   channel now (member-channel.ts), dropped only when it never connected; gRPC reconnects it by
 *   itself (CHANNEL_OPTIONS), and MemberHealth moves the streams.
 * - the status probe of a member and each Authenticate call go over the member's own clients
 *   (etcd3 opens a new client per Authenticate and never closes it, a connection each);
 *   Authenticate passes a member that is being skipped by.
 */
function wireIntoPool(client: Etcd3): void {
  const pool = poolOf(client);
  const byAddress = new Map<string, { host: PoolHost; member: MemberHealth }>();
  for (const host of pool.hosts ?? []) {
    const member = host.faultHandling;
    if (!(member instanceof MemberHealth)) continue;
    member.channel = shareOneChannel(host, host.channelOptions);
    member.probe = (deadlineMs) => unary(host, 'Maintenance', 'status', {}, { deadline: Date.now() + deadlineMs });
    byAddress.set(host.host, { host, member });
  }
  requireLeaderOnWatches(pool);
  const authenticator = pool.authenticator;
  if (authenticator === undefined) return;
  authenticator.getCredentialsFromHost = async (address, name, password, callOptions) => {
    const found = byAddress.get(address);
    if (found === undefined) throw new GRPCUnavailableError(`unknown etcd member ${address}`);
    if (found.member.skipping(Date.now())) throw new GRPCUnavailableError('etcd member not answering');
    const request = { name, password };
    const res = await unary<{ token: string }>(found.host, 'Auth', 'authenticate', request, callOptions ?? {});
    return res.token;
  };
}

/**
 * Watch streams carry etcd's `hasleader` metadata (etcd's WithRequireLeader): a member cut off from
 * its peers cancels them once it has no leader, so they reconnect to a member that has one, where
 * etcd3 sends nothing and a silent stream on a partitioned member would wait out the partition.
 */
function requireLeaderOnWatches(pool: PoolInternals): void {
  const withConnection = pool.withConnection?.bind(pool);
  if (withConnection === undefined) return;
  pool.withConnection = (service, fn, ...rest) => {
    if (service !== 'Watch') return withConnection(service, fn, ...rest);
    const withLeader = (conn: PoolConnection): unknown => {
      const metadata = conn.metadata.clone();
      metadata.set('hasleader', 'true');
      return fn({ ...conn, metadata });
    };
    return withConnection(service, withLeader, ...rest);
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}

class Etcd3Connection implements EtcdConnection {
  private readonly keepAlives = new KeepAlives({
    open: () => this.client.leaseClient.leaseKeepAlive(),
    streamLost: (why, cause) => (cause === undefined ? new GRPCUnavailableError(why) : castGrpcError(cause)),
    deadlineExceeded: () => new GRPCDeadlineExceededError('the lease keep-alive went unanswered'),
  });

  constructor(
    private readonly client: Etcd3,
    private readonly health: readonly MemberHealth[],
    private readonly random: () => number,
    private readonly log: Logger | undefined,
  ) {}

  /**
   * Runs one etcd call within `deadlineMs`: each attempt has a share of it (`run` gets the attempt's
   * absolute deadline), and a failure that another member (or a new leader) may not repeat is tried
   * again after a short backoff while time is left. A call that needs the leader has at least
   * ELECTION_WAIT_MS while some member is up (it may be electing). With every member unreachable
   * nothing is sent and the call fails at once; with every member silent (hung, or slow: the agent
   * cannot tell until its own deadline) the call waits for one to answer within its deadline.
   * A write retried after its attempt went unanswered may have been applied by that attempt: what
   * a txn then says of its outcome is txn's (below); a leased put writes the same value again.
   */
  private async call<T>(deadlineMs: number, run: (deadline: number) => Promise<T>, needsLeader = true): Promise<T> {
    const started = Date.now();
    const own = started + deadlineMs;
    const election = started + (needsLeader ? Math.max(deadlineMs, ELECTION_WAIT_MS) : deadlineMs);
    const share = Math.max(ATTEMPT_FLOOR_MS, Math.ceil(deadlineMs / ATTEMPT_SHARE));
    for (let attempt = 0; ; attempt++) {
      const now = Date.now();
      if (this.health.length > 0 && this.health.every((m) => m.refused(now))) {
        throw oneLine(new GRPCUnavailableError('no etcd member is answering'), this.log);
      }
      let failure: unknown;
      if (this.health.length > 0 && this.health.every((m) => m.skipping(now))) {
        // A probe is out, or every member is silent: wait for one rather than send to a hung member.
        failure = new BrokenCircuitError();
      } else {
        try {
          return await run(Math.min(this.endOf(own, election), now + share));
        } catch (err) {
          failure = err;
        }
      }
      const pause = backoffDelay(RETRY_BACKOFF, attempt, this.random);
      if (!retryable(failure) || Date.now() + pause >= this.endOf(own, election)) {
        const nobody = isBrokenCircuitError(failure);
        throw oneLine(nobody ? new GRPCUnavailableError('no etcd member is answering') : failure, this.log);
      }
      await sleep(pause);
    }
  }

  /** A call's end: an election's wait while some member is up, else the caller's own deadline. */
  private endOf(own: number, election: number): number {
    return this.health.length === 0 || this.health.some((m) => !m.isDown) ? election : own;
  }

  rangePrefix(prefix: Buffer, deadlineMs: number): Promise<EtcdRangeResult> {
    return this.rangeKeys(prefix, prefixEnd(prefix), deadlineMs);
  }

  async getKey(key: Buffer, deadlineMs: number): Promise<EtcdKeyValue | undefined> {
    const res = await this.call(deadlineMs, (deadline) => this.client.kv.range({ key }, { deadline }));
    const kv = res.kvs[0];
    return kv === undefined ? undefined : keyValue(kv);
  }

  async grantRequestLease(ttlSeconds: number, deadlineMs: number): Promise<string> {
    const grant = { TTL: ttlSeconds };
    const res = await this.call(deadlineMs, (deadline) => this.client.leaseClient.leaseGrant(grant, { deadline }));
    return String(res.ID);
  }

  async revokeRequestLease(id: string, deadlineMs: number): Promise<void> {
    await this.call(deadlineMs, (deadline) => this.client.leaseClient.leaseRevoke({ ID: id }, { deadline }));
  }

  /** One keep-alive on the connection's long-lived keep-alive stream (keep-alives.ts). */
  renewLease(id: string, deadlineMs: number): Promise<number> {
    return this.call(deadlineMs, (deadline) => this.keepAlives.renew(id, deadline));
  }

  async rangeKeys(
    start: Buffer,
    end: Buffer,
    deadlineMs: number,
    options: EtcdRangeOptions = {},
  ): Promise<EtcdRangeResult> {
    const kvs: EtcdKeyValue[] = [];
    const keysOnly = options.keysOnly === true;
    const request = { range_end: end, serializable: options.serializable === true, keys_only: keysOnly };
    const until = Date.now() + deadlineMs;
    const maxRows = options.pageRows ?? RANGE_PAGE_MAX_ROWS;
    let limit = keysOnly ? maxRows : FIRST_PAGE_ROWS;
    let counted = 0;
    let from = start;
    let revision = options.revision ?? 0;
    let guard: EtcdKeyValue | undefined;
    let guarded = options.guard === undefined;
    /** The last page's rows, handed to onPage while etcd reads the next. */
    let pending: EtcdKeyValue[] | undefined;
    for (;;) {
      const page = { ...request, key: from, limit, ...(revision === 0 ? {} : { revision }) };
      const left = Math.max(1, until - Date.now());
      const read = (deadline: number): Promise<GuardedRange> =>
        guarded ? this.client.kv.range(page, { deadline }) : this.guardedRange(options.guard as Buffer, page, deadline);
      const call = this.call(left, (deadline) =>
        read(deadline).catch((err: unknown) => {
          // Over the receive limit: no other member would answer smaller, so read it again smaller here.
          if (overReceiveLimit(err)) return err;
          throw err;
        }),
      );
      if (pending !== undefined) {
        const rows = pending;
        pending = undefined;
        try {
          options.onPage?.(rows);
        } catch (err) {
          call.catch(() => {});
          throw err;
        }
      }
      const res = await call;
      if (res instanceof Error) {
        if (limit === 1) throw oneLine(new Error(`a row at ${from.toString('utf8')}: ${res.message}`), this.log);
        limit = smallerPage(limit, res);
        continue;
      }
      if (revision === 0) revision = Number(res.header.revision);
      if (!guarded) {
        guarded = true;
        guard = res.guard === undefined ? undefined : keyValue(res.guard);
      }
      let bytes = 0;
      const into = options.onPage === undefined ? kvs : [];
      for (const kv of res.kvs) {
        into.push(keyValue(kv));
        bytes += kv.key.length + kv.value.length;
      }
      if (options.onPage !== undefined) pending = into;
      if (options.maxBytes !== undefined) {
        counted += bytes - res.kvs.length * (options.keyRootBytes ?? 0);
        if (counted > options.maxBytes) throw new EtcdRangeTooLarge(options.maxBytes);
      }
      const last = res.kvs[res.kvs.length - 1];
      if (!res.more || last === undefined) {
        if (pending !== undefined) options.onPage?.(pending);
        return guard === undefined ? { revision, kvs } : { revision, kvs, guard };
      }
      from = Buffer.concat([last.key, Buffer.from([0])]);
      // The next page's rows from this one's size: a run of large rows shrinks pages at once, and
      // small rows after it grow them back in one page.
      const perRow = bytes / res.kvs.length + ROW_OVERHEAD_BYTES;
      limit = Math.max(1, Math.min(maxRows, Math.floor(RANGE_PAGE_BYTES / perRow)));
    }
  }

  /** One page and the guard key in one read-only transaction: both at one revision, in one round trip. */
  private async guardedRange(guard: Buffer, page: IRangeRequest, deadline: number): Promise<GuardedRange> {
    const at = page.revision === undefined ? {} : { revision: page.revision };
    const res = await this.client.kv.txn(
      {
        compare: [],
        success: [
          { request_range: { key: guard, serializable: page.serializable === true, ...at } },
          { request_range: page },
        ],
        failure: [],
      },
      { deadline },
    );
    const [read, rows] = res.responses;
    if (read === undefined || rows === undefined) throw new Error('etcd answered a guarded range without its reads');
    const found = read.response_range.kvs[0];
    return { ...rows.response_range, header: res.header, ...(found === undefined ? {} : { guard: found }) };
  }

  async txn(txn: EtcdTxn, deadlineMs: number): Promise<EtcdTxnResult> {
    const request = {
      compare: txn.compares.map((c) =>
        c.target === 'create'
          ? { key: c.key, target: 'Create' as const, result: 'Equal' as const, create_revision: c.equals }
          : { key: c.key, target: 'Mod' as const, result: 'Equal' as const, mod_revision: c.equals },
      ),
      success: txn.success.map(requestOp),
      failure: txn.failure.map(requestOp),
    };
    // A commit's retries, decided here: an attempt that went unanswered (see unanswered) may have
    // been applied, or may be yet (a hung member applies what it holds once it runs again). The txn
    // is still tried again on another member within the deadline, so that one hung member costs
    // latency, not writes (docs/decisions.md#one-member-down), and what the retries say is read so:
    // - an answer that it succeeded is its outcome: an earlier attempt of a guarded txn can no
    //   longer pass the compares this one moved; an unguarded one writes the same rows again (and
    //   if it lands late, over a write made meanwhile: the cost of not failing the write, which
    //   etcd's Go client pays the other way by never retrying a write that may have been sent);
    // - an answer that its compares failed is flagged `unsure`: that earlier attempt may be what
    //   moved them, so it is no proof the write was not made (the caller decides, etcd-store.ts);
    // - no answer at all, or a failure after one that went unanswered, rejects EtcdOutcomeUnknown.
    // A failure known to have applied nothing (not sent, or refused by etcd) stays what it is.
    let unsure: unknown;
    const attempt = (deadline: number) =>
      this.client.kv.txn(request, { deadline }).catch((err: unknown) => {
        if (unsure === undefined && unanswered(err)) unsure = err;
        throw err;
      });
    const res = await this.call(deadlineMs, attempt).catch((err: unknown) => {
      throw unsure === undefined ? err : new EtcdOutcomeUnknown(err);
    });
    return {
      succeeded: res.succeeded,
      revision: Number(res.header.revision),
      ...(unsure !== undefined && !res.succeeded ? { unsure: true as const } : {}),
    };
  }

  watchPrefix(prefix: Buffer, startRevision: number, listener: EtcdWatchListener): EtcdWatch {
    return this.watchRange(prefix, prefixEnd(prefix), startRevision, listener);
  }

  watchRange(start: Buffer, end: Buffer, startRevision: number, listener: EtcdWatchListener): EtcdWatch {
    const builder = this.client.watch().inRange({ start, end }).startRevision(String(startRevision));
    // etcd sends a watch response larger than its --max-request-bytes in fragments (each of one
    // event at least, so each under the receive limit): a watch catching up over many large rows
    // would otherwise come as one message over MAX_RECEIVE_BYTES, breaking the agent's watch stream
    // each time it is created again. The fragments are joined here into the response they make.
    (builder as unknown as { request: { fragment?: boolean } }).request.fragment = true;
    const watcher: Watcher = builder.watcher();
    let live = true;
    /** Events of fragments of a response still coming; `resumeFrom`: etcd3's revision to resume at before it. */
    let fragments: EtcdWatchEvent[] = [];
    let resumeFrom: string | number | undefined;
    /** `cancelledByEtcd`: etcd3 has already let go of it, and a cancel request would come back for a watch it no longer knows (etcd3 throws). */
    const stop = (cancelledByEtcd = false): void => {
      if (!live) return;
      live = false;
      watcher.removeAllListeners();
      // Swallowed: cancelling a watch on a dead stream has nothing left to tell.
      watcher.on('error', () => {});
      if (!cancelledByEtcd) watcher.cancel().catch(() => {});
    };
    watcher.on('connected', () => {
      if (live) listener.connected();
    });
    // Before etcd3 moves its resume revision past a fragment's header (its own 'data' listener).
    watcher.prependListener('data', (res: { fragment?: boolean }) => {
      if (res.fragment === true && fragments.length === 0) resumeFrom = watcher.request.start_revision;
    });
    watcher.on('data', (res) => {
      if (!live) return;
      const events = res.events.map((ev): EtcdWatchEvent => ({
        type: ev.type === 'Delete' ? 'delete' : 'put',
        kv: keyValue(ev.kv),
      }));
      if (res.fragment) {
        // A watch etcd3 creates again (WatchStreamRenewed) resumes before the whole response.
        if (resumeFrom !== undefined) watcher.request.start_revision = resumeFrom;
        fragments.push(...events);
        return;
      }
      const whole = fragments.length === 0 ? events : [...fragments, ...events];
      fragments = [];
      listener.events(whole, Number(res.header.revision));
    });
    watcher.on('disconnected', (err: unknown) => {
      // A response cut off is sent again whole from where the watch resumes.
      fragments = [];
      // etcd3 creates this watch again on the renewed stream, from its last revision.
      if (!live || err instanceof WatchStreamRenewed) return;
      stop();
      listener.disconnected(oneLine(err, this.log));
    });
    watcher.on('error', (err: unknown) => {
      if (!live) return;
      stop(true);
      listener.cancelled(oneLine(err, this.log));
    });
    return { cancel: () => stop() };
  }

  async compact(revision: number, deadlineMs: number): Promise<void> {
    await this.call(deadlineMs, (deadline) => this.client.kv.compact({ revision, physical: true }, { deadline }));
  }

  putLeased(key: Buffer, value: Buffer, ttlSeconds: number, lost: (err: unknown) => void): EtcdLeasedKey {
    const lease: Lease = this.client.lease(ttlSeconds, { deadline: Date.now() + LEASED_PUT_DEADLINE_MS });
    let live = true;
    const end = (): void => {
      live = false;
      lease.removeAllListeners();
      // etcd3 emits `lost` on a lease it gave up; nobody listens any more.
      lease.on('lost', () => {});
    };
    const ready = (async () => {
      const id = await lease.grant();
      const put = { key, value, lease: id };
      await this.call(LEASED_PUT_DEADLINE_MS, (deadline) => this.client.kv.put(put, { deadline }));
    })().catch((err: unknown) => {
      // Never kept alive: a lease granted for a put that failed lapses after its TTL.
      end();
      lease.release();
      throw oneLine(err, this.log);
    });
    // A grant that fails both emits `lost` and rejects `ready`: the rejection alone reports it.
    lease.on('lost', (err) => {
      if (!live) return;
      end();
      ready.then(
        () => lost(oneLine(err, this.log)),
        () => {},
      );
    });
    return {
      ready,
      revoke: async (deadlineMs) => {
        end();
        // Swallowed: a lease etcd cannot revoke now still expires after its TTL.
        await lease.revoke({ deadline: Date.now() + deadlineMs }).catch(() => lease.release());
      },
    };
  }

  async status(deadlineMs: number): Promise<EtcdStatus> {
    const res = await this.call(deadlineMs, (deadline) => this.client.maintenance.status({ deadline }), false);
    return {
      memberId: String(res.header.member_id),
      leaderId: String(res.leader),
      alarms: res.errors.map((e) => e.trim()),
    };
  }

  async members(deadlineMs: number): Promise<EtcdMember[]> {
    // Serializable: the member list is a configuration read that must answer without a quorum.
    const list = (deadline: number) => this.client.cluster.memberList({ linearizable: false }, { deadline });
    const res = await this.call(deadlineMs, list, false);
    return res.members.map((m) => ({ id: String(m.ID), name: m.name, clientUrls: [...m.clientURLs] }));
  }

  close(): void {
    this.keepAlives.close();
    this.client.close();
  }
}

/**
 * etcd's space quota is spent (its NOSPACE alarm): every write is refused, on every member, until
 * an operator frees space and disarms the alarm, so trying again within a call only delays the answer.
 * It comes as RESOURCE_EXHAUSTED, as etcd's "too many requests" does, which is worth another try.
 */
function isNoSpace(err: unknown): boolean {
  return err instanceof Error && err.message.includes('database space exceeded');
}

/**
 * A response over the gRPC receive limit (MAX_RECEIVE_BYTES): grpc-js says so in a
 * RESOURCE_EXHAUSTED, the code etcd's own "too many requests" and NOSPACE also use.
 */
function overReceiveLimit(err: unknown): err is Error {
  return err instanceof GRPCResourceExhastedError && RECEIVED_TOO_LARGE.test(err.message);
}

const RECEIVED_TOO_LARGE = /Received message larger than max \((\d+) vs/;

/**
 * The rows of a page to read again after `limit` rows came back over the receive limit: sized from
 * what grpc-js says the page weighed, to RANGE_PAGE_BYTES, and at least halved.
 */
function smallerPage(limit: number, err: Error): number {
  const weighed = Number(RECEIVED_TOO_LARGE.exec(err.message)?.[1] ?? 0);
  const fitting = weighed > 0 ? Math.floor((limit * RANGE_PAGE_BYTES) / weighed) : limit;
  return Math.max(1, Math.min(Math.floor(limit / 2), fitting));
}

/** Classifies an error thrown by a call of this connection. */
export function etcdFailure(err: unknown): EtcdFailure {
  if (err instanceof EtcdOutcomeUnknown) return 'outcome-unknown';
  if (err instanceof ClientClosedError) return 'closed';
  if (
    err instanceof GRPCUnavailableError ||
    err instanceof GRPCDeadlineExceededError ||
    err instanceof GRPCCancelledError
  ) {
    return 'unavailable';
  }
  if (isBrokenCircuitError(err)) return 'unavailable';
  if (isNoSpace(err)) return 'no-space';
  const message = err instanceof Error ? err.message : '';
  if (/request is too large|too many operations in txn request/.test(message)) return 'too-large';
  if (/no leader|leader changed|timed out|deadline exceeded|not capable|unhealthy/.test(message)) return 'unavailable';
  return 'other';
}

/**
 * Whether a write's failed attempt may have been applied: it was sent and its answer never came
 * (the deadline passed, the call was cancelled, the connection dropped under it), or etcd answered
 * that the proposal timed out or its server stopped waiting for it. Anything else applied nothing:
 * the call was never sent (no connection, still waiting for one, the member skipped), or etcd
 * refused it (no leader, too many requests, permission, size); a write that etcd applied is answered.
 */
export function unanswered(err: unknown): boolean {
  const message = err instanceof Error ? err.message : '';
  if (err instanceof GRPCDeadlineExceededError) return !message.includes(WAITING_FOR_CONNECTION);
  if (err instanceof GRPCCancelledError) return true;
  if (ETCD_UNANSWERED.test(message)) return true;
  return err instanceof GRPCUnavailableError && !message.includes('etcdserver:') && !NOT_SENT.test(message);
}

/** grpc-js's words for a call whose deadline passed before it had a connection to go out on. */
const WAITING_FOR_CONNECTION = 'Waiting for LB pick';
/**
 * etcd's own: the proposal was made and its result did not come in time (its leader changed, or its
 * server stopped). Not etcd's bare "context deadline exceeded": raft took no proposal (no leader).
 */
const ETCD_UNANSWERED = /request timed out|request cancelled|leader changed|server stopped/;
/** Unavailable before anything was sent: grpc-js had no connection, or the member was passed by (MemberHealth, wireIntoPool, call()). */
const NOT_SENT =
  /No connection established|Channel closed before call started|Stream refused by server|etcd member not answering|no etcd member is answering|unknown etcd member/;

function requestOp(op: EtcdTxnOp): IRequestOp {
  if (op.op === 'put')
    return { request_put: { key: op.key, value: op.value, ...(op.lease === undefined ? {} : { lease: op.lease }) } };
  return { request_delete_range: op.end === undefined ? { key: op.key } : { key: op.key, range_end: op.end } };
}

/** A range page, and the guard key read with it (EtcdRangeOptions.guard). */
type GuardedRange = IRangeResponse & { readonly guard?: IKeyValue };

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
