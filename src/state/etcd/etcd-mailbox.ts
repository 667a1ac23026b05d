// A request/response mailbox through etcd, outside the shared view (etcd-keys.ts): client agents
// ask, server agents answer. Each mailbox has a root of its own under `<prefix>sign/`: leaf
// signatures at the root itself, token secrets under `acl/`, forwarded writes under `writes/`
// (docs/cluster-security.md). A request is written at `<root>requests/<id>` under a short lease of
// its own; every server watches that range, and the one whose create of `<root>claims/<id>`
// succeeds handles it and writes `<root>responses/<id>` under the same lease, so that nothing
// outlives the request. The port its users see is src/core/mailbox.ts. etcd authenticates each
// side (its users and RBAC, docs/cluster-security.md); the handler decides what a request may
// obtain, and the asker what an answer must hold. A response that is not JSON fails its one request, never the mailbox;
// close() ends every wait and timer.
import { randomUUID } from 'node:crypto';
import { systemClock } from '../../core/clock.js';
import { agentError, loggedAtSource } from '../../core/errors.js';
import type { Logger } from '../../core/log.js';
import { LogGate } from '../../core/log-gate.js';
import { settledWithin } from '../../core/wait.js';
import type { EtcdConnection, EtcdTarget, EtcdWatch, EtcdWatchEvent } from './etcd-client.js';
import { openConnection, prefixEnd } from './etcd-client.js';
import { EtcdKeyLayout } from './etcd-keys.js';
import { etcdError } from './etcd-errors.js';
import { DEFAULT_ETCD_PREFIX } from './etcd-store.js';

/** Codes whose message is `{detail}`-shaped, for an answer that is not JSON. */
type UnreadableAnswerCode = 'CA_SIGN_FAILED' | 'CLUSTER_FORWARD_FAILED';

export interface EtcdMailboxOptions {
  readonly etcd: EtcdTarget;
  readonly prefix?: string | undefined;
  readonly log: Logger;
  /** Deadline of each etcd call (default 1500 ms, as a commit's). */
  readonly callTimeoutMs?: number | undefined;
  /** A mailbox of its own under `<prefix>sign/<mailbox>/` (`acl`, `writes`); default the leaf signing one. */
  readonly mailbox?: string | undefined;
  /** The error (its message takes `{detail}`) of an answer that is not JSON; default CA_SIGN_FAILED. */
  readonly unreadableAnswer?: UnreadableAnswerCode | undefined;
}

export interface EtcdMailbox {
  /**
   * Writes a request and waits for its response. Resolves undefined when no server answered
   * within `deadlineMs`; rejects with STATE_NO_LEADER when etcd cannot take the request, and with
   * STATE_WRITE_OUTCOME_UNKNOWN when the request's write reached etcd and its answer never came.
   */
  request(body: unknown, deadlineMs: number): Promise<unknown>;
  /** Answers requests (server agents): exactly one server's handler runs per request. */
  serve(handler: (body: unknown) => Promise<unknown>): void;
  close(): void;
}

export function openEtcdMailbox(options: EtcdMailboxOptions): EtcdMailbox {
  const layout = new EtcdKeyLayout(options.prefix ?? DEFAULT_ETCD_PREFIX);
  const root = options.mailbox === undefined ? layout.signRoot : `${layout.signRoot}${options.mailbox}/`;
  return new EtcdRequestMailbox(
    openConnection(options.etcd),
    root,
    options.log.child({ component: options.mailbox === undefined ? 'mailbox-sign' : `mailbox-${options.mailbox}` }),
    options.callTimeoutMs ?? 1_500,
    options.unreadableAnswer ?? 'CA_SIGN_FAILED',
  );
}

/** Server watch restarts after a broken stream: fixed, short; a server that misses a request only delays a client's retry. */
const REWATCH_MS = 500;
/**
 * Both ends also read what a watch should have told them, this often: a watch stream on a member cut
 * off from its peers stays open and silent until etcd cancels it (docs/decisions.md#one-member-down),
 * while a read goes to a member that answers.
 */
const SWEEP_MS = 1_000;

class EtcdRequestMailbox implements EtcdMailbox {
  private readonly requests: Buffer;
  private watch: EtcdWatch | undefined;
  private timer: NodeJS.Timeout | undefined;
  private sweeping: NodeJS.Timeout | undefined;
  /** Requests this server is claiming or answering now (a sweep does not start them twice). */
  private readonly handling = new Set<string>();
  private closed = false;
  /** Requests awaiting their response: close() ends each (no answer), with its timers and watch. */
  private readonly waiting = new Set<() => void>();
  /**
   * A server's reads of the requests fail every REWATCH_MS while etcd is away: said once per cause,
   * counted when they work again; at debug when the cause is etcd's outage, which the store logs.
   */
  private readonly readFailures: LogGate;

  constructor(
    private readonly connection: EtcdConnection,
    private readonly root: string,
    private readonly log: Logger,
    private readonly timeoutMs: number,
    private readonly unreadable: UnreadableAnswerCode,
  ) {
    this.requests = Buffer.from(`${root}requests/`, 'utf8');
    this.readFailures = new LogGate({ log, clock: systemClock });
  }

  private key(kind: 'requests' | 'claims' | 'responses', id: string): Buffer {
    return Buffer.from(`${this.root}${kind}/${id}`, 'utf8');
  }

  async request(body: unknown, deadlineMs: number): Promise<unknown> {
    const id = randomUUID();
    // The lease outlives the wait a little, so a late server never writes after the client gave up for good.
    const ttl = Math.max(5, Math.ceil(deadlineMs / 1000) + 2);
    // The answer's watch starts before the request is written, from etcd's current revision: a watch
    // from a past revision is one etcd catches up only every 100 ms, which every answer would wait.
    const answer = this.awaitResponse(this.key('responses', id), deadlineMs);
    answer.response.catch(() => undefined); // awaited below; an unreadable answer may come before then
    let lease: string;
    try {
      // etcd gone fails at once here. A watch that is slow to start is waited for a sweep's time at
      // most: past that the request is written anyway, and the answer's sweep reads what the watch would tell.
      [lease] = await Promise.all([
        this.connection.grantRequestLease(ttl, this.timeoutMs),
        settledWithin(answer.watching, SWEEP_MS),
      ]);
      // The wait ended before the request could be written (deadline or close): it is not written.
      if (answer.over()) {
        this.connection.revokeRequestLease(lease, this.timeoutMs).catch(() => undefined);
        return undefined;
      }
      const value = Buffer.from(JSON.stringify(body), 'utf8');
      const put = { op: 'put' as const, key: this.key('requests', id), value, lease };
      answer.resumeFrom(
        (await this.connection.txn({ compares: [], success: [put], failure: [] }, this.timeoutMs)).revision,
      );
    } catch (err) {
      answer.cancel();
      throw etcdError(err);
    }
    try {
      return await answer.response;
    } finally {
      this.connection.revokeRequestLease(lease, this.timeoutMs).catch(() => undefined);
    }
  }

  /**
   * Watches `key` for the answer: `watching` resolves once the watch is in place (or the wait is
   * over), `response` with the answer (undefined at the deadline or on close). A watch that breaks
   * is opened again from the revision `resumeFrom` gave (the request's), else from now.
   */
  private awaitResponse(
    key: Buffer,
    deadlineMs: number,
  ): {
    watching: Promise<void>;
    response: Promise<unknown>;
    resumeFrom(revision: number): void;
    over(): boolean;
    cancel(): void;
  } {
    let fromRevision = 0;
    let over = false;
    let watchingNow: () => void = () => {};
    const watching = new Promise<void>((resolve) => (watchingNow = resolve));
    let cancel: () => void = () => {};
    const response = new Promise<unknown>((resolve, reject) => {
      if (this.closed) {
        over = true;
        watchingNow();
        return resolve(undefined);
      }
      let watch: EtcdWatch | undefined;
      let rewatch: NodeJS.Timeout | undefined;
      const end = (): void => {
        over = true;
        this.waiting.delete(noAnswer);
        clearTimeout(deadline);
        clearTimeout(rewatch);
        clearInterval(sweep);
        watch?.cancel();
        watch = undefined;
        watchingNow();
      };
      const noAnswer = (): void => {
        end();
        resolve(undefined);
      };
      cancel = noAnswer;
      const deadline = setTimeout(noAnswer, deadlineMs);
      this.waiting.add(noAnswer);
      const answered = (value: Buffer, at: string): void => {
        end();
        try {
          resolve(JSON.parse(value.toString('utf8')));
        } catch {
          reject(agentError(this.unreadable, { detail: `the answer at ${at} is not JSON` }));
        }
      };
      const sweep = setInterval(() => {
        if (fromRevision === 0 || over) return;
        this.connection.rangeKeys(key, Buffer.concat([key, Buffer.from([0])]), this.timeoutMs).then(
          (found) => {
            const kv = found.kvs[0];
            if (kv !== undefined && !over) answered(kv.value, kv.key);
          },
          () => undefined, // the watch, the next sweep or the deadline decides
        );
      }, SWEEP_MS);
      const again = (): void => {
        watch = undefined;
        if (this.waiting.has(noAnswer)) rewatch = setTimeout(listen, REWATCH_MS);
      };
      const listen = (): void => {
        rewatch = undefined;
        watch = this.connection.watchRange(key, Buffer.concat([key, Buffer.from([0])]), fromRevision, {
          connected: watchingNow,
          events: (events) => {
            const put = events.find((ev) => ev.type === 'put');
            if (put !== undefined) answered(put.kv.value, put.kv.key);
          },
          // Until the deadline, a broken watch is resumed from the request's revision.
          disconnected: again,
          cancelled: again,
        });
      };
      listen();
    });
    return {
      watching,
      response,
      resumeFrom: (revision) => (fromRevision = revision),
      over: () => over,
      cancel: () => cancel(),
    };
  }

  serve(handler: (body: unknown) => Promise<unknown>): void {
    const start = async (): Promise<void> => {
      if (this.closed) return;
      try {
        // Requests written before this server watched are taken too.
        const pending = await this.connection.rangeKeys(this.requests, prefixEnd(this.requests), this.timeoutMs);
        this.readFailures.clear();
        for (const kv of pending.kvs) void this.handle(kv.key, kv.value, kv.lease, handler);
        this.watchRequests(pending.revision + 1, handler, start);
        this.sweepRequests(handler);
      } catch (err) {
        const cause = etcdError(err);
        const level = loggedAtSource(cause) ? 'debug' : 'warn';
        this.readFailures.fail(cause.code, level, { err }, 'reading mailbox requests failed; retrying');
        this.later(() => void start());
      }
    };
    void start();
  }

  /** Takes requests the watch missed (one server wins each claim, so a request is run once). */
  private sweepRequests(handler: (body: unknown) => Promise<unknown>): void {
    if (this.sweeping !== undefined) return;
    this.sweeping = setInterval(() => {
      this.connection.rangeKeys(this.requests, prefixEnd(this.requests), this.timeoutMs).then(
        (pending) => {
          for (const kv of pending.kvs)
            if (!this.handling.has(kv.key)) void this.handle(kv.key, kv.value, kv.lease, handler);
        },
        () => undefined, // the next sweep tries again
      );
    }, SWEEP_MS);
  }

  private watchRequests(
    from: number,
    handler: (body: unknown) => Promise<unknown>,
    restart: () => Promise<void>,
  ): void {
    if (this.closed) return;
    const again = (): void => {
      this.watch = undefined;
      this.later(() => void restart());
    };
    this.watch = this.connection.watchRange(this.requests, prefixEnd(this.requests), from, {
      connected: () => {},
      events: (events: readonly EtcdWatchEvent[]) => {
        for (const ev of events) if (ev.type === 'put') void this.handle(ev.kv.key, ev.kv.value, ev.kv.lease, handler);
      },
      disconnected: again,
      cancelled: again,
    });
  }

  /** Claims the request (one server wins the create), runs the handler, writes the response. */
  private async handle(
    fullKey: string,
    value: Buffer,
    lease: string,
    handler: (body: unknown) => Promise<unknown>,
  ): Promise<void> {
    const id = fullKey.slice(this.requests.length);
    this.handling.add(fullKey);
    try {
      const claim = this.key('claims', id);
      // A claim of its own: a claim whose first attempt timed out but was applied fails its compare
      // when the client tries it again, and only the claim's value then says the request is ours.
      const claimant = Buffer.from(randomUUID(), 'utf8');
      const claimed = await this.connection.txn(
        {
          compares: [{ key: claim, target: 'create', equals: 0 }],
          success: [{ op: 'put', key: claim, value: claimant, lease }],
          failure: [],
        },
        this.timeoutMs,
      );
      if (!claimed.succeeded && !(await this.claimedBy(claim, claimant))) return;
      const response = await handler(JSON.parse(value.toString('utf8')));
      const body = Buffer.from(JSON.stringify(response), 'utf8');
      await this.connection.txn(
        { compares: [], success: [{ op: 'put', key: this.key('responses', id), value: body, lease }], failure: [] },
        this.timeoutMs,
      );
    } catch (err) {
      // Most often the client gave up and its lease took the request with it.
      this.log.debug({ err, id }, 'mailbox request not answered');
    } finally {
      this.handling.delete(fullKey);
    }
  }

  /** Whether the claim at `claim` is the one `claimant` wrote. */
  private async claimedBy(claim: Buffer, claimant: Buffer): Promise<boolean> {
    const held = await this.connection.getKey(claim, this.timeoutMs);
    return held !== undefined && held.value.equals(claimant);
  }

  /** The server side's one retry timer: a new one replaces a pending one, and close() cancels it. */
  private later(fn: () => void): void {
    clearTimeout(this.timer);
    if (!this.closed) this.timer = setTimeout(fn, REWATCH_MS);
  }

  close(): void {
    this.closed = true;
    for (const noAnswer of [...this.waiting]) noAnswer();
    clearTimeout(this.timer);
    clearInterval(this.sweeping);
    this.watch?.cancel();
    this.connection.close();
  }
}
