// The cluster's live agents: each agent puts its own record under `<prefix>members/<node>` with a
// lease (kept alive by the client, revoked on a graceful stop, expired by etcd after a crash), and
// keeps a local map of every record, fed by a read and a watch of the members range.
import type { Clock, TimerHandle } from '../core/clock.js';
import type { Logger } from '../core/log.js';
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
/** Pause before the member list is re-read or the record re-put after etcd failed us. */
const RETRY_MS = 1_000;

export class ClusterMembers {
  private readonly connection: EtcdConnection;
  private readonly root: Buffer;
  private readonly rootText: string;
  private readonly ttlSeconds: number;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly random: () => number;
  private readonly live = new Map<string, MemberRecord>();
  private readonly badEntries: BadRows;
  private self: MemberRecord | undefined;
  private leased: EtcdLeasedKey | undefined;
  private watch: EtcdWatch | undefined;
  private readonly timers = new Set<TimerHandle>();
  private closed = false;

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

  /** Re-puts this agent's record (its HTTP port is known only once it listens). */
  async update(self: MemberRecord): Promise<void> {
    if (this.closed) return;
    const previous = this.leased;
    await this.register(self);
    await previous?.revoke(CALL_DEADLINE_MS);
  }

  /** The live members, sorted by name. */
  list(): MemberRecord[] {
    return [...this.live.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Stops watching and removes this agent's record at once. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) t.cancel();
    this.watch?.cancel();
    await this.leased?.revoke(CALL_DEADLINE_MS);
  }

  private key(name: string): Buffer {
    return Buffer.concat([this.root, Buffer.from(name, 'utf8')]);
  }

  private async register(self: MemberRecord): Promise<void> {
    this.self = self;
    const leased = this.connection.putLeased(this.key(self.name), Buffer.from(JSON.stringify(self)), this.ttlSeconds, (err) => {
      if (this.leased !== leased || this.closed) return;
      this.log.warn({ err }, 'cluster member lease lost; registering again');
      this.later(() => this.reregister());
    });
    this.leased = leased;
    await leased.ready;
  }

  private reregister(): void {
    const self = this.self;
    if (self === undefined || this.closed) return;
    this.register(self).then(
      () => this.log.info({}, 'cluster member registered again'),
      (err: unknown) => {
        this.log.debug({ err }, 'cluster member registration failed; retrying');
        this.later(() => this.reregister());
      },
    );
  }

  private async load(): Promise<void> {
    const read = await this.connection.rangePrefix(this.root, CALL_DEADLINE_MS);
    this.live.clear();
    for (const kv of read.kvs) this.apply(kv.key, kv.value, kv.modRevision);
    this.watch = this.connection.watchPrefix(this.root, read.revision + 1, {
      connected: () => {},
      events: (events) => {
        for (const ev of events) {
          if (ev.type === 'delete') this.live.delete(this.nameOf(ev.kv.key));
          else this.apply(ev.kv.key, ev.kv.value, ev.kv.modRevision);
        }
      },
      // Deletes missed while the watch was down are only found by a fresh read.
      disconnected: () => this.reload(),
      cancelled: () => this.reload(),
    });
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
    if (read.ok) this.live.set(this.nameOf(key), read.entry);
    else this.badEntries.report(key, revision, read.problem);
  }

  private nameOf(key: string): string {
    return key.slice(this.rootText.length);
  }

  private later(fn: () => void): void {
    if (this.closed) return;
    // Jitter: agents that lost etcd together must not all come back in the same instant.
    const timer = this.clock.setTimer(RETRY_MS * (0.5 + this.random()), () => {
      this.timers.delete(timer);
      fn();
    });
    this.timers.add(timer);
  }
}
