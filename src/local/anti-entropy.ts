// Anti-entropy (Consul's agent/local/state.go and agent/ae): the agent owns its node's catalog
// entries. A full sync makes the catalog hold exactly its local services and checks (at start, then
// every minute or two, repairing drift); each local change is written at once by a partial sync of
// what changed. A check's output that changes without its status waits check_update_interval
// (docs/decisions.md D26). Syncs run one at a time; changes that arrive meanwhile fold into one more.
import type { NodeFields, NodeSync, SyncScope } from '../catalog/sync.js';
import type { Clock, TimerHandle } from '../core/clock.js';
import { loggedAtSource } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { checkEntry, serviceEntry } from './catalog-entries.js';
import type { LocalEvent, LocalState } from './local-state.js';

/** Consul's ae interval for a cluster up to 128 nodes: a full sync every 1 to 2 minutes. */
export const FULL_SYNC_INTERVAL_MS = 60_000;
/** Consul's retryFailIntv: a sync that failed is tried again after 15 to 30 seconds. */
export const RETRY_INTERVAL_MS = 15_000;

/**
 * A full sync compares every entry of the node (0.1 to 0.4 s of the main thread for 10,000 checks,
 * measured in-process on a loaded machine); while no one else wrote the node since this agent's
 * last sync it is skipped, and it compares anyway every this many times, in case another write
 * slipped in beside one of ours.
 */
export const FULL_COMPARE_EVERY = 10;

/** Where the node's entries are written: the catalog itself, or a server on a client's behalf. */
export interface NodeWriter {
  syncNode(name: string, desired: NodeSync, scope?: SyncScope): Promise<unknown>;
  /** The index of the last write to the node's entries (the catalog's node index row). */
  nodeVersion(name: string): number;
}

export interface AntiEntropyOptions {
  readonly state: LocalState;
  readonly writer: NodeWriter;
  readonly node: NodeFields;
  readonly clock: Clock;
  readonly random: () => number;
  readonly log: Logger;
  /** Read per change, so a reload applies: 0 writes an output-only change at once. */
  readonly checkUpdateIntervalMs: () => number;
  readonly fullSyncIntervalMs?: number;
  readonly retryIntervalMs?: number;
}

export class AntiEntropy {
  private readonly dirtyServices = new Set<string>();
  private readonly dirtyChecks = new Set<string>();
  /** Checks whose output change waits for check_update_interval, with the timer that ends the wait. */
  private readonly deferred = new Map<string, TimerHandle>();
  private full = true;
  /** The node's version once it held what this agent holds; -1 when unknown. */
  private inSyncAt = -1;
  /** Syncs have failed since the last that worked: the first failure is logged, the retries are not. */
  private failing = false;
  private fullSyncs = 0;
  private started = false;
  private closed = false;
  private kicked = false;
  private again = false;
  private running: Promise<void> | undefined;
  private fullTimer: TimerHandle | undefined;
  private retryTimer: TimerHandle | undefined;
  private readonly unsubscribe: () => void;

  constructor(private readonly o: AntiEntropyOptions) {
    this.unsubscribe = o.state.onChange((event) => this.changed(event));
  }

  /** Runs the first full sync now, and a full sync every interval plus a random stagger after it. */
  start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    this.full = true;
    this.kick();
    this.scheduleFull();
  }

  /** Resolves once no sync is queued or running. */
  async idle(): Promise<void> {
    while (this.kicked || this.running !== undefined) await (this.running ?? Promise.resolve());
  }

  /** Stops the timers and waits for a sync under way. */
  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribe();
    this.fullTimer?.cancel();
    this.retryTimer?.cancel();
    for (const timer of this.deferred.values()) timer.cancel();
    this.deferred.clear();
    await this.running;
  }

  private changed(event: LocalEvent): void {
    switch (event.type) {
      case 'service-registered':
        this.dirtyServices.add(event.service.id);
        break;
      case 'service-deregistered':
        this.dirtyServices.add(event.serviceId);
        break;
      case 'check-registered':
        this.dirtyChecks.add(event.check.checkId);
        break;
      case 'check-deregistered':
        this.undefer(event.checkId);
        this.dirtyChecks.add(event.checkId);
        break;
      case 'check-status':
        this.undefer(event.check.checkId);
        this.dirtyChecks.add(event.check.checkId);
        break;
      case 'check-output':
        this.deferOutput(event.check.checkId);
        return;
    }
    this.kick();
  }

  /** Consul's UpdateCheck: an output-only change is marked out of sync once the interval has passed. */
  private deferOutput(id: string): void {
    const interval = this.o.checkUpdateIntervalMs();
    if (interval <= 0) {
      this.dirtyChecks.add(id);
      this.kick();
      return;
    }
    if (this.deferred.has(id) || this.closed) return;
    const timer = this.o.clock.setTimer(interval, () => {
      this.deferred.delete(id);
      this.dirtyChecks.add(id);
      this.kick();
    });
    this.deferred.set(id, timer);
  }

  private undefer(id: string): void {
    this.deferred.get(id)?.cancel();
    this.deferred.delete(id);
  }

  /** A sync once the current burst of changes is over (one registration emits several events). */
  private kick(): void {
    if (!this.started || this.closed || this.kicked) return;
    this.kicked = true;
    queueMicrotask(() => {
      this.kicked = false;
      this.run();
    });
  }

  private run(): void {
    if (this.running !== undefined) {
      this.again = true;
      return;
    }
    this.running = (async () => {
      do {
        this.again = false;
        await this.syncOnce();
      } while (this.again && !this.closed);
    })().finally(() => {
      this.running = undefined;
    });
  }

  private async syncOnce(): Promise<void> {
    if (this.closed) return;
    const full = this.full;
    const scope: SyncScope | undefined = full
      ? undefined
      : { services: new Set(this.dirtyServices), checks: new Set(this.dirtyChecks) };
    if (scope !== undefined && scope.services.size === 0 && scope.checks.size === 0) return;
    this.full = false;
    const { writer, state } = this.o;
    const name = state.nodeName;
    const before = writer.nodeVersion(name);
    const compare = scope !== undefined || ++this.fullSyncs % FULL_COMPARE_EVERY === 0;
    if (!compare && this.dirtyServices.size === 0 && this.dirtyChecks.size === 0 && before === this.inSyncAt) return;
    this.dirtyServices.clear();
    this.dirtyChecks.clear();
    try {
      await writer.syncNode(name, this.desired(scope), scope);
      if (this.failing) this.o.log.info({}, 'the agent synced its services and checks to the catalog again');
      this.failing = false;
      // A partial sync keeps the node in sync only if it was before.
      this.inSyncAt = scope === undefined || before === this.inSyncAt ? writer.nodeVersion(name) : -1;
    } catch (err) {
      this.inSyncAt = -1;
      // What was not written is written by the retry: the whole node after a full sync failed.
      if (full) this.full = true;
      for (const id of scope?.services ?? []) this.dirtyServices.add(id);
      for (const id of scope?.checks ?? []) this.dirtyChecks.add(id);
      // A cause logged where it arose (etcd down, or out of space) is not logged again here.
      const quiet = this.failing || loggedAtSource(err);
      this.failing = true;
      this.o.log[quiet ? 'debug' : 'warn'](
        { err },
        'the agent could not sync its services and checks to the catalog; retrying',
      );
      this.scheduleRetry();
    }
  }

  private desired(scope: SyncScope | undefined): NodeSync {
    let { services, checks } = this.o.state.snapshot();
    if (scope !== undefined) {
      // A partial sync reads only the scoped entries, their services and a scoped service's checks.
      const serviceIds = new Set(scope.services);
      for (const c of checks) if (scope.checks.has(c.checkId) && c.serviceId !== '') serviceIds.add(c.serviceId);
      services = services.filter((s) => serviceIds.has(s.id));
      checks = checks.filter((c) => scope.checks.has(c.checkId) || serviceIds.has(c.serviceId));
    }
    const keepOutput = new Set([...this.deferred.keys()].filter((id) => scope?.checks.has(id) !== true));
    return {
      node: this.o.node,
      services: services.map(serviceEntry),
      checks: checks.map(checkEntry),
      keepOutput,
    };
  }

  private scheduleFull(): void {
    const interval = this.o.fullSyncIntervalMs ?? FULL_SYNC_INTERVAL_MS;
    this.fullTimer = this.o.clock.setTimer(interval + this.o.random() * interval, () => {
      if (this.closed) return;
      this.full = true;
      this.kick();
      this.scheduleFull();
    });
  }

  private scheduleRetry(): void {
    if (this.retryTimer !== undefined || this.closed) return;
    const interval = this.o.retryIntervalMs ?? RETRY_INTERVAL_MS;
    this.retryTimer = this.o.clock.setTimer(interval + this.o.random() * interval, () => {
      this.retryTimer = undefined;
      this.kick();
    });
  }
}
