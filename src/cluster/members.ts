// The cluster's live agents: each agent puts its own record under `<prefix>members/<node>` with a
// lease (kept alive by the client, revoked on a graceful stop, expired by etcd after a crash), and
// keeps a local map of every record, fed by a read and a watch of the members range. It holds one
// lease at a time: a lost lease is put again by one loop with backoff and jitter, however many
// events ask for it, and a lease that is replaced is revoked. A leaving agent says so in its record
// first; members that failed or left are the servers' to record (src/catalog/member-status.ts).
import type { Clock, TimerHandle } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import { backoffDelay, type Backoff } from '../core/backoff.js';
import type { Counter } from '../core/metrics.js';
import { BadRows, type EtcdConnection, type EtcdLeasedKey, type EtcdWatch } from '../state/etcd/index.js';
import { readMemberEntry } from './member-entry.js';

/** One agent as the cluster knows it. */
export interface MemberRecord {
  readonly name: string;
  readonly id: string;
  readonly address: string;
  /** The agent's HTTP port: the one port a svc-agent listens on. */
  readonly port: number;
  readonly datacenter: string;
  /** Server agents hold the CA key; /v1/agent/members shows them with role "consul", clients "node". */
  readonly server: boolean;
  readonly version: string;
  readonly aclsEnabled: boolean;
  /**
   * The agent is leaving gracefully: the servers record it left and deregister its node before it
   * goes (docs/decisions.md#departed-members); /v1/agent/members shows it `leaving`.
   */
  readonly leaving?: boolean;
}

export interface MembersOptions {
  readonly connection: EtcdConnection;
  readonly prefix: string;
  readonly ttlMs: number;
  readonly clock: Clock;
  readonly log: Logger;
  readonly random?: (() => number) | undefined;
  /** Counts entries that fail the member schema (the agent's `svc.state.bad_rows`). */
  readonly badRows?: Counter | undefined;
}

/** Deadline of a read of the members range and of a revoke at stop. */
const CALL_DEADLINE_MS = 2_000;
/**
 * How long a graceful stop gives its entry's `leaving` put before it revokes anyway: a few etcd
 * round trips (milliseconds); with etcd away the put fails at once, or the stop goes on after this.
 */
const LEAVING_PUT_MS = 1_000;
/** Entries that went saying `leaving`, kept until the servers record them left (a bound; each is small). */
const DEPARTING_KEPT = 256;
/** Pause before the member list is re-read after etcd failed us. */
const RETRY_MS = 1_000;
/**
 * Between attempts to put a lost record back. Attempts while no etcd member answers fail inside the
 * client at no cost to etcd, so the cap is short: the record is back within about 2 s of etcd.
 */
const REREGISTER_BACKOFF: Backoff = { initialMs: 100, maxMs: 2_000 };

export class ClusterMembers {
  private readonly connection: EtcdConnection;
  private readonly root: Buffer;
  private readonly rootText: string;
  private readonly ttlSeconds: number;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly random: () => number;
  private readonly live = new Map<string, MemberRecord>();
  /**
   * Entries deleted while they said `leaving`: a server's reconciler may see the delete before it
   * saw the leave, and must still record the member left, not failed.
   */
  private readonly gone = new Map<string, MemberRecord>();
  private readonly badEntries: BadRows;
  private self: MemberRecord | undefined;
  /** The lease that holds this agent's record now; undefined while it is being put again. */
  private leased: EtcdLeasedKey | undefined;
  /** Registrations started, and the newest one installed: an older one finishing late is revoked. */
  private started = 0;
  private installed = 0;
  /** Whether the re-registration loop runs (at most one). */
  private looping = false;
  private watch: EtcdWatch | undefined;
  private readonly changeListeners = new Set<() => void>();
  private readonly timers = new Set<TimerHandle>();
  private closed = false;
  private closing: Promise<void> | undefined;

  constructor(options: MembersOptions) {
    this.connection = options.connection;
    this.rootText = `${options.prefix.endsWith('/') ? options.prefix : `${options.prefix}/`}members/`;
    this.root = Buffer.from(this.rootText, 'utf8');
    // etcd leases count whole seconds; 1 s is its floor.
    this.ttlSeconds = Math.max(1, Math.ceil(options.ttlMs / 1000));
    this.clock = options.clock;
    this.log = options.log;
    this.random = options.random ?? Math.random;
    this.badEntries = new BadRows(options.log, options.badRows);
  }

  /** Registers `self` and loads the member list; rejects when etcd refuses either. */
  async start(self: MemberRecord): Promise<void> {
    await this.register(self);
    await this.load();
  }

  /** Registers and reads the members in the background, retrying until etcd answers. */
  startLater(self: MemberRecord): void {
    this.self = self;
    this.reregister();
    this.reload();
  }

  /** Re-puts this agent's record (its HTTP port is known only once it listens); the old lease is revoked. */
  async update(self: MemberRecord): Promise<void> {
    if (this.closed) return;
    await this.register(self);
  }

  /** Says in this agent's entry that it is leaving (a graceful leave); its entry goes at close(). */
  async markLeaving(): Promise<void> {
    const self = this.self;
    if (self === undefined || this.closed || self.leaving === true) return;
    await this.register({ ...self, leaving: true });
  }

  /** Members whose entries went while saying `leaving`, and not back since: departed gracefully. */
  departing(): MemberRecord[] {
    return [...this.gone.values()];
  }

  /** The servers recorded `name` left (src/catalog/member-status.ts): its departing entry is not needed. */
  forgetDeparting(name: string): void {
    this.gone.delete(name);
  }

  /** Calls `fn` after each change of the member list (a read, or a watch event). */
  onChange(fn: () => void): void {
    this.changeListeners.add(fn);
  }

  /** Whether a live member is a server agent (without copying and sorting the list). */
  hasServer(): boolean {
    for (const member of this.live.values()) if (member.server) return true;
    return false;
  }

  /** The live members, sorted by name. */
  list(): MemberRecord[] {
    return [...this.live.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /**
   * Stops watching and removes this agent's record at once. A graceful stop is a leave
   * (docs/decisions.md#departed-members): the record says `leaving` first, so that the servers
   * record this member left and deregister its node, rather than list it failed.
   */
  close(): Promise<void> {
    this.closing ??= this.leaveAndClose();
    return this.closing;
  }

  private async leaveAndClose(): Promise<void> {
    const self = this.self;
    if (self !== undefined && self.leaving !== true && this.leased !== undefined) {
      const put = this.register({ ...self, leaving: true }).catch((err: unknown) => {
        this.log.debug({ reason: reasonOf(err) }, 'cluster member could not say it leaves; its entry goes anyway');
      });
      await new Promise<void>((resolve) => {
        const timer = this.clock.setTimer(LEAVING_PUT_MS, resolve);
        void put.then(() => {
          timer.cancel();
          resolve();
        });
      });
    }
    this.closed = true;
    for (const t of this.timers) t.cancel();
    this.watch?.cancel();
    await this.leased?.revoke(CALL_DEADLINE_MS);
  }

  private key(name: string): Buffer {
    return Buffer.concat([this.root, Buffer.from(name, 'utf8')]);
  }

  /** Puts the record under a fresh lease; once etcd holds it, the lease it replaces is revoked. */
  private async register(self: MemberRecord): Promise<void> {
    this.self = self;
    const generation = ++this.started;
    const value = Buffer.from(JSON.stringify(self));
    const key = this.key(self.name);
    const leased = this.connection.putLeased(key, value, this.ttlSeconds, (err) => this.lost(leased, err));
    await leased.ready;
    if (this.closed || generation < this.installed) {
      // A newer registration already holds the record (or we are stopping): this lease goes.
      void leased.revoke(CALL_DEADLINE_MS);
      return;
    }
    const previous = this.leased;
    this.installed = generation;
    this.leased = leased;
    if (previous !== undefined && previous !== leased) void previous.revoke(CALL_DEADLINE_MS);
  }

  private lost(leased: EtcdLeasedKey, err: unknown): void {
    // Only the lease that holds the record counts: one replaced or never installed says nothing.
    if (leased !== this.leased || this.closed) return;
    this.leased = undefined;
    this.log.warn({ reason: reasonOf(err) }, 'cluster member lease lost; registering again');
    this.reregister();
  }

  /** The one re-registration loop: tries with backoff and jitter until etcd holds the record. */
  private reregister(): void {
    if (this.looping || this.closed) return;
    this.looping = true;
    const attempt = (n: number): void => {
      this.after(backoffDelay(REREGISTER_BACKOFF, n, this.random), () => {
        const self = this.self;
        if (self === undefined || this.closed) return;
        this.register(self).then(
          () => {
            this.looping = false;
            this.log.info({}, 'cluster member registered again');
          },
          (err: unknown) => {
            this.log.debug({ reason: reasonOf(err) }, 'cluster member registration failed; retrying');
            if (this.closed) return;
            // update() may have put the record meanwhile.
            if (this.leased !== undefined) this.looping = false;
            else attempt(n + 1);
          },
        );
      });
    };
    attempt(0);
  }

  private async load(): Promise<void> {
    const read = await this.connection.rangePrefix(this.root, CALL_DEADLINE_MS);
    const before = new Map(this.live);
    this.live.clear();
    for (const kv of read.kvs) this.apply(kv.key, kv.value, kv.modRevision);
    for (const [name, record] of before) if (!this.live.has(name)) this.departed(name, record);
    this.changed();
    this.watch = this.connection.watchPrefix(this.root, read.revision + 1, {
      connected: () => {},
      events: (events) => {
        for (const ev of events) {
          if (ev.type !== 'delete') this.apply(ev.kv.key, ev.kv.value, ev.kv.modRevision);
          else {
            const name = this.nameOf(ev.kv.key);
            const record = this.live.get(name);
            this.live.delete(name);
            if (record !== undefined) this.departed(name, record);
          }
        }
        this.changed();
      },
      // Deletes missed while the watch was down are only found by a fresh read.
      disconnected: () => this.reload(),
      cancelled: () => this.reload(),
    });
  }

  private changed(): void {
    for (const fn of this.changeListeners) fn();
  }

  private reload(): void {
    this.watch = undefined;
    this.later(() => {
      this.load().catch((err: unknown) => {
        this.log.debug({ err }, 'cluster member list read failed; retrying');
        this.reload();
      });
    });
  }

  /** A bad entry is left out (an earlier good one of that member stays), told once per revision. */
  private apply(key: string, value: Buffer, revision: number): void {
    const read = readMemberEntry(value);
    if (!read.ok) {
      this.badEntries.report(key, revision, read.problem);
      return;
    }
    const name = this.nameOf(key);
    this.live.set(name, read.entry);
    this.gone.delete(name);
  }

  /** A member whose entry went: kept if it said it was leaving (departing()). */
  private departed(name: string, record: MemberRecord): void {
    if (record.leaving !== true) return;
    this.gone.delete(name);
    this.gone.set(name, record);
    if (this.gone.size > DEPARTING_KEPT) this.gone.delete(this.gone.keys().next().value as string);
  }

  private nameOf(key: string): string {
    return key.slice(this.rootText.length);
  }

  private later(fn: () => void): void {
    // Jitter: agents that lost etcd together must not all come back in the same instant.
    this.after(RETRY_MS * (0.5 + this.random()), fn);
  }

  private after(ms: number, fn: () => void): void {
    if (this.closed) return;
    const timer = this.clock.setTimer(ms, () => {
      this.timers.delete(timer);
      fn();
    });
    this.timers.add(timer);
  }
}

/** An etcd error as one line: the client hands out no stacks, and the log says the reason only. */
function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
