// What this agent knows of the etcd cluster's leadership: a probe asks etcd's maintenance status
// twice a second, so a hung or leaderless etcd is noticed within about 2 s even when nothing is
// written; /v1/status/{leader,peers} and the X-*-KnownLeader / LastContact headers read it. The
// same answer lists etcd's alarms: a raised one (NOSPACE: no writes) is logged as it comes and goes.
import type { Clock, TimerHandle } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import { spanText } from '../core/log-gate.js';
import type { EtcdConnection, EtcdMember } from '../state/etcd/index.js';

/** One voter of the replicated log (an etcd member), as /v1/operator/raft/configuration lists it. */
export interface RaftServer {
  readonly id: string;
  readonly node: string;
  readonly address: string;
  readonly leader: boolean;
}

export interface LeadershipOptions {
  readonly connection: EtcdConnection;
  readonly clock: Clock;
  readonly log: Logger;
  /** In [0, 1): each pause's jitter (PROBE_JITTER). */
  readonly random: () => number;
  /** Pause between probes (default 500 ms), each within ±PROBE_JITTER of it. */
  readonly intervalMs?: number | undefined;
  /** Deadline of one probe (default 600 ms). */
  readonly deadlineMs?: number | undefined;
  /**
   * When etcd last answered, if that was before this process (an agent started from its view on
   * disk, etcd down): the leader counts as unknown, and contact as that old, until etcd answers.
   */
  readonly lastContact?: number | undefined;
}

/**
 * The leader counts as lost once probes have failed for longer than one probe cycle (its longest,
 * jitter included) plus two deadlines (1.75 s by default) since the last good answer, and at least twice. A probe that
 * reaches a dead or hung member is tried on another by the client within its deadline; a failed
 * probe (every member down, or none knows a leader) is asked again after RETRY_PAUSE_MS.
 */
const MIN_FAILURES_BEFORE_LOST = 2;
const RETRY_PAUSE_MS = 50;
const DEFAULT_INTERVAL_MS = 500;
const DEFAULT_DEADLINE_MS = 600;
/**
 * Each pause between probes is the interval ±10 %, drawn afresh: agents started together (a host
 * restarted, a join wave: docs/scale.md) would otherwise probe etcd in lockstep, every one in the
 * same few milliseconds of each interval, for as long as they run. The mean rate stays 1/interval.
 */
const PROBE_JITTER = 0.1;
const NOSPACE_REMEDY =
  ': its space quota is spent and it takes no writes until it is compacted, defragmented and the alarm ' +
  'disarmed (etcdctl compact, etcdctl defrag, etcdctl alarm disarm; README, "etcd\'s space quota")';

export class EtcdLeadership {
  private readonly connection: EtcdConnection;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly random: () => number;
  private readonly intervalMs: number;
  private readonly deadlineMs: number;
  private timer: TimerHandle | undefined;
  private failures = 0;
  private closed = false;
  private leaderId = '0';
  private lastOk: number;
  private known: boolean;
  /** etcd's raised alarms as last reported: logged when they change. */
  private alarms: readonly string[] = [];
  /** The last member list etcd gave: peers stay answerable while etcd is away. */
  private lastMembers: readonly EtcdMember[] = [];

  constructor(options: LeadershipOptions) {
    this.connection = options.connection;
    this.clock = options.clock;
    this.log = options.log;
    this.random = options.random;
    this.intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
    this.deadlineMs = options.deadlineMs ?? DEFAULT_DEADLINE_MS;
    this.lastOk = options.lastContact ?? this.clock.now();
    this.known = options.lastContact === undefined;
  }

  /** Probes once and reads the member list (peers answer during a later outage), then keeps probing. */
  async start(): Promise<void> {
    await this.probe();
    await this.members();
  }

  /** Whether etcd answered lately and named a leader. */
  get knownLeader(): boolean {
    return this.known;
  }

  /** Milliseconds since etcd last answered with a leader; 0 while it does. */
  get lastContactMs(): number {
    return this.known ? 0 : Math.max(0, this.clock.now() - this.lastOk);
  }

  /** etcd's raised alarms (NOSPACE: it takes no writes) as of the last answer; the `svc.etcd.alarms` gauge. */
  get alarmCount(): number {
    return this.alarms.length;
  }

  /** The leader's client address as `host:port`; "" when none is known (Consul's answer then). */
  async leader(): Promise<string> {
    if (!this.known || this.leaderId === '0') return '';
    const members = await this.members();
    const leader = members.find((m) => m.id === this.leaderId);
    return leader === undefined ? '' : hostPort(leader);
  }

  /** etcd's members as Consul's raft servers: each one's name, ID and client address, the leader marked. */
  async raftServers(): Promise<RaftServer[]> {
    const members = await this.members();
    return members.map((m) => ({
      id: m.id,
      node: m.name,
      address: hostPort(m),
      leader: this.known && m.id === this.leaderId,
    }));
  }

  /** Every member's client address as `host:port`. */
  async peers(): Promise<string[]> {
    return (await this.members()).map(hostPort).filter((p) => p !== '');
  }

  close(): void {
    this.closed = true;
    this.timer?.cancel();
  }

  private async members(): Promise<readonly EtcdMember[]> {
    if (!this.known) return this.lastMembers;
    try {
      this.lastMembers = await this.connection.members(this.deadlineMs);
    } catch (err) {
      this.log.debug({ err }, 'etcd member list failed; answering the last one');
    }
    return this.lastMembers;
  }

  private async probe(): Promise<void> {
    try {
      const status = await this.connection.status(this.deadlineMs);
      this.leaderId = status.leaderId;
      this.noteAlarms(status.alarms);
      if (status.leaderId === '0') this.failed(undefined);
      else this.succeeded();
    } catch (err) {
      this.failed(err);
    }
    if (this.closed) return;
    // After a failure, ask again soon: the next call may reach another member.
    const wait = this.failures > 0 && this.known ? RETRY_PAUSE_MS : this.pause();
    this.timer = this.clock.setTimer(wait, () => void this.probe());
  }

  /** The pause before the next probe: the interval ±PROBE_JITTER. */
  private pause(): number {
    return this.intervalMs * (1 + PROBE_JITTER * (2 * this.random() - 1));
  }

  private noteAlarms(alarms: readonly string[]): void {
    const now = alarms.join(', ');
    if (now === this.alarms.join(', ')) return;
    this.alarms = alarms;
    if (now === '') {
      this.log.info({}, 'etcd alarms cleared');
      return;
    }
    const remedy = alarms.some((a) => a.includes('NOSPACE')) ? NOSPACE_REMEDY : '';
    this.log.warn({ alarms }, `etcd raised an alarm (${now})${remedy}`);
  }

  private succeeded(): void {
    this.failures = 0;
    const now = this.clock.now();
    // How long etcd was away: what the outage's other lines count (src/core/log-gate.ts) happened within it.
    if (!this.known) this.log.info({ unknownFor: spanText(now - this.lastOk) }, 'etcd leader known again');
    this.lastOk = now;
    this.known = true;
  }

  private failed(err: unknown): void {
    this.failures++;
    const silentMs = this.clock.now() - this.lastOk;
    // The longest cycle: a jittered pause at its longest.
    const cycleMs = this.intervalMs * (1 + PROBE_JITTER);
    if (this.failures < MIN_FAILURES_BEFORE_LOST || silentMs < cycleMs + 2 * this.deadlineMs || !this.known) return;
    this.known = false;
    this.log.warn({ err: err ?? null }, 'etcd has no reachable leader; serving from the local view');
  }
}

function hostPort(member: EtcdMember): string {
  const url = member.clientUrls[0];
  if (url === undefined) return '';
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
}
