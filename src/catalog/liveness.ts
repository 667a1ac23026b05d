// Node liveness, as Consul's leader reconciles Serf members into the catalog: a live member with no
// node yet is registered (a cluster's client agents write nothing themselves: docs/decisions.md D25);
// a node whose agent is a live member has its serfHealth check passing; once its membership lease
// lapsed, critical (so `?passing` stops returning its instances); a node critical for longer than the reap interval is
// removed with everything on it. Only nodes that carry a serfHealth check (agents' own nodes) are
// judged: nodes registered through /v1/catalog/register are external and left alone.
import type { Clock, TimerHandle } from '../core/clock.js';
import { loggedAtSource } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import type { Catalog, NodeFields } from './catalog.js';
import { SERF_ALIVE_OUTPUT, SERF_CHECK_ID, type StoredCheck } from './model.js';
import type { CatalogQueries } from './queries.js';

/** Consul's serfHealth output for a member that failed. */
export const SERF_FAILED_OUTPUT = 'Agent not live or unreachable';
/** Consul's reconcile_reap_interval default: a failed node is removed after 72 hours. */
export const DEFAULT_REAP_AFTER_MS = 72 * 3600_000;
/** Between reconciles when no member changed (Consul's leader reconciles every 60 s): what reaps in time. */
const RECONCILE_INTERVAL_MS = 60_000;

export interface LivenessOptions {
  readonly catalog: Catalog;
  readonly queries: CatalogQueries;
  /** The agents that are live members now, by name, with the node each should have. */
  readonly liveMembers: () => ReadonlyMap<string, NodeFields>;
  readonly clock: Clock;
  readonly log: Logger;
  readonly reapAfterMs?: number;
}

export class LivenessReconciler {
  /** When this reconciler first saw each node critical (a restart starts the reap wait again). */
  private readonly criticalSince = new Map<string, number>();
  private running: Promise<void> | undefined;
  private again = false;
  private timer: TimerHandle | undefined;
  private closed = false;

  constructor(private readonly options: LivenessOptions) {}

  /** Reconciles now and then every RECONCILE_INTERVAL_MS, besides each member change (`schedule`). */
  start(): void {
    const tick = (): void => {
      if (this.closed) return;
      this.timer = this.options.clock.setTimer(RECONCILE_INTERVAL_MS, tick);
      void this.schedule();
    };
    tick();
  }

  close(): void {
    this.closed = true;
    this.timer?.cancel();
    this.timer = undefined;
  }

  /** Runs a reconcile soon; calls that arrive while one runs are folded into one more run. */
  schedule(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.running !== undefined) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        await this.reconcile().catch((err: unknown) =>
          // A cause logged where it arose (etcd down, or out of space) is not warned of twice.
          this.options.log[loggedAtSource(err) ? 'debug' : 'warn'](
            { err },
            'node liveness could not be written to the catalog; retried on the next change',
          ),
        );
      } while (this.again);
    })().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** One pass over the catalog's agent nodes; writes only the checks whose status is wrong. */
  async reconcile(): Promise<void> {
    const { catalog, queries, clock } = this.options;
    const live = this.options.liveMembers();
    const reapAfter = this.options.reapAfterMs ?? DEFAULT_REAP_AFTER_MS;
    const now = clock.now();
    const judged = new Set<string>();
    for (const row of queries.allChecks()) {
      const check: StoredCheck = row.value;
      if (check.CheckID !== SERF_CHECK_ID) continue;
      const name = check.Node;
      judged.add(name);
      if (live.has(name)) {
        this.criticalSince.delete(name);
        if (check.Status !== 'passing') await catalog.setLiveness(name, 'passing', SERF_ALIVE_OUTPUT);
        continue;
      }
      if (check.Status !== 'critical') await catalog.setLiveness(name, 'critical', SERF_FAILED_OUTPUT);
      const since = this.criticalSince.get(name) ?? now;
      this.criticalSince.set(name, since);
      if (now - since >= reapAfter) {
        this.criticalSince.delete(name);
        this.options.log.info({ node: name }, 'reaping a node failed longer than the reap interval');
        await catalog.removeNode(name);
      }
    }
    for (const [name, fields] of live)
      if (!judged.has(name)) await catalog.setLiveness(name, 'passing', SERF_ALIVE_OUTPUT, fields);
    for (const name of this.criticalSince.keys()) if (!judged.has(name)) this.criticalSince.delete(name);
  }
}
