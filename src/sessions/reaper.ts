// Ends what must end, from the state alone (Consul's leader does it on check updates and session
// expiry): a session whose node or one of whose checks is gone or critical, and the locks of
// sessions that no longer exist (an etcd lease that lapsed deletes the session's row, and nothing
// else). A lone agent runs it, as does every cluster server: each change is guarded by its row's
// index, so two servers doing the same change apply it once. It runs on every change to the
// tables it reads, and every SWEEP_MS besides (lock-delays that passed, a pass that failed).
import type { Clock, TimerHandle } from '../core/clock.js';
import { CATALOG_CHECKS, CATALOG_NODES } from '../catalog/model.js';
import type { Logger } from '../core/log.js';
import type { StateStore } from '../state/types.js';
import type { KvLocks } from './locks.js';
import { KV_LOCKS_TABLE, SESSIONS_TABLE, type StoredLock } from './model.js';
import type { Sessions } from './sessions.js';

const WATCHED = [SESSIONS_TABLE, KV_LOCKS_TABLE, CATALOG_CHECKS, CATALOG_NODES];
const SWEEP_MS = 15_000;

export class SessionReaper {
  private readonly cancels = new Map<string, () => void>();
  private timer: TimerHandle | undefined;
  private running = false;
  private again = false;
  private closed = false;

  constructor(
    private readonly store: StateStore,
    private readonly sessions: Sessions,
    private readonly locks: KvLocks,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  start(): void {
    for (const table of WATCHED) this.watch(table);
    this.schedule();
  }

  close(): void {
    this.closed = true;
    this.timer?.cancel();
    for (const cancel of this.cancels.values()) cancel();
    this.cancels.clear();
  }

  /** One pass now (tests; a change calls it too). Resolves when the pass, and any asked for during it, is done. */
  async pass(): Promise<void> {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    try {
      do {
        this.again = false;
        await this.reap();
      } while (this.again && !this.closed);
    } catch (err) {
      this.log.warn({ err }, 'ending sessions and their locks failed; tried again on the next change');
    } finally {
      this.running = false;
    }
  }

  private async reap(): Promise<void> {
    for (const row of this.sessions.list()) {
      const why = this.sessions.endReason(row.value);
      if (why !== undefined) await this.sessions.end(row.key, why);
    }
    const orphaned = new Set<string>();
    for (const row of this.store.list<StoredLock>(KV_LOCKS_TABLE, '')) {
      const holder = row.value.Session;
      if (holder !== undefined && this.sessions.get(holder) === undefined) orphaned.add(holder);
    }
    for (const session of orphaned) await this.locks.releaseHeldBy(session);
    await this.locks.sweep();
  }

  private watch(table: string): void {
    this.cancels.set(
      table,
      this.store.watchOnce({ table }, () => {
        if (this.closed) return;
        this.watch(table);
        void this.pass();
      }),
    );
  }

  private schedule(): void {
    this.timer = this.clock.setTimer(SWEEP_MS, () => {
      if (this.closed) return;
      void this.pass().finally(() => {
        if (!this.closed) this.schedule();
      });
    });
  }
}
