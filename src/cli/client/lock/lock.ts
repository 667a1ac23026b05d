// The lock (Consul's api/lock.go, api.Lock): one key, `<prefix>/.lock`, held while its Session is
// ours and marked with api.Lock's flag value, so that it contends with Consul's own locks.
import type { ApiClient } from '../api.js';
import { pause, unless } from './abortable.js';
import { labelled } from './errors.js';
import { nextWait, underSession, watch, type Holder, type LockOptions } from './holder.js';
import type { Kv } from './kv.js';
import { SESSION_TTL, type Session } from './session.js';

/** api.Lock's LockFlagValue, as decimal text: it is past 2^53. */
const LOCK_FLAG = 0x2ddccbc058a50c18n.toString();
/** api.DefaultLockRetryTime: the pause after an acquire refused while the key is free (its lock-delay). */
const RETRY_MS = 5_000;

/** api.Lock at `key`: held while the key's Session is ours. */
export class Lock implements Holder {
  private session: Session | undefined;

  constructor(
    private readonly api: ApiClient,
    private readonly kv: Kv,
    private readonly key: string,
    private readonly options: LockOptions,
  ) {}

  async acquire(stop: AbortSignal): Promise<boolean> {
    const body = { Name: this.options.name, TTL: SESSION_TTL };
    this.session = await underSession(this.api, body, (session) => this.take(session, stop));
    return this.session !== undefined;
  }

  private async take(session: string, stop: AbortSignal): Promise<boolean> {
    const started = Date.now();
    let index: string | undefined;
    for (let attempt = 0; ; attempt++) {
      const waitMs = nextWait(this.options, started, attempt);
      if (stop.aborted || waitMs === undefined) return false;
      const read = await unless(labelled('failed to read lock', this.kv.get(this.key, { index, waitMs })), stop);
      if (read === undefined) return false;
      if (read.pair !== undefined && read.pair.Flags !== LOCK_FLAG)
        throw new Error('Existing key does not match lock use');
      if (read.pair?.Session === session) return true;
      if (read.pair?.Session) {
        index = read.index;
        continue;
      }
      const locked = await labelled(
        'failed to acquire lock',
        this.kv.put(this.key, { acquire: session, flags: LOCK_FLAG }),
      );
      if (locked) return true;
      // Refused: held by another after all (wait on it), or free under a lock-delay (try again later).
      const why = await unless(this.kv.get(this.key), stop);
      if (why === undefined) return false;
      index = undefined;
      if (why.pair?.Session) index = why.index;
      else if (!(await pause(RETRY_MS, stop))) return false;
    }
  }

  lost(stop: AbortSignal): Promise<void> {
    const session = this.session?.id;
    return watch(
      async (index) => {
        const read = await this.kv.get(this.key, { index, consistent: true });
        return { index: read.index, holding: read.pair !== undefined && read.pair.Session === session };
      },
      this.options.monitorRetries,
      stop,
    );
  }

  async release(): Promise<void> {
    const session = this.session;
    if (session === undefined) return;
    try {
      await labelled('failed to release lock', this.kv.put(this.key, { release: session.id, flags: LOCK_FLAG }));
    } finally {
      await session.end();
    }
  }

  async cleanup(): Promise<'removed' | 'in use'> {
    const { pair } = await labelled('failed to read lock', this.kv.get(this.key));
    if (pair === undefined) return 'removed';
    if (pair.Flags !== LOCK_FLAG) throw new Error('Existing key does not match lock use');
    if (pair.Session) return 'in use';
    const removed = await labelled('failed to remove lock', this.kv.delete(this.key, { cas: pair.ModifyIndex }));
    return removed ? 'removed' : 'in use';
  }
}
