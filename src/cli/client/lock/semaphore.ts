// The semaphore (Consul's api/semaphore.go, api.Semaphore), what -n above 1 takes: a contender key
// `<prefix>/<session>` per contender and the holders record at `<prefix>/.lock` naming who holds a
// slot, written as api.Semaphore writes it so that it contends with Consul's own semaphores.
import { posix } from 'node:path';
import type { ApiClient } from '../api.js';
import { byBytes } from '../command.js';
import { unless } from './abortable.js';
import { labelled, wrapped } from './errors.js';
import { LOCK_KEY, nextWait, underSession, watch, type Holder, type LockOptions } from './holder.js';
import type { Kv, Pair } from './kv.js';
import { SESSION_TTL, type Session } from './session.js';

/** api.Semaphore's SemaphoreFlagValue, as decimal text: it is past 2^53. */
const SEMAPHORE_FLAG = 0xe0f69a2baa414de0n.toString();

/** The semaphore's holders record, as api.Semaphore writes it at `<prefix>/.lock`. */
interface Holders {
  Limit: number;
  Holders: Record<string, boolean>;
}

/** api.Semaphore at `prefix` with `limit` slots: held while the record names our session. */
export class Semaphore implements Holder {
  private session: Session | undefined;
  private readonly lockKey: string;

  constructor(
    private readonly api: ApiClient,
    private readonly kv: Kv,
    private readonly prefix: string,
    private readonly limit: number,
    private readonly options: LockOptions,
  ) {
    this.lockKey = posix.join(prefix, LOCK_KEY);
  }

  async acquire(stop: AbortSignal): Promise<boolean> {
    // `delete`: a session that ends takes its contender key with it, which frees its slot.
    const body = { Name: this.options.name, TTL: SESSION_TTL, Behavior: 'delete' };
    this.session = await underSession(this.api, body, (session) => this.take(session, stop));
    return this.session !== undefined;
  }

  private async take(session: string, stop: AbortSignal): Promise<boolean> {
    const contender = posix.join(this.prefix, session);
    const made = await labelled(
      'failed to make contender entry',
      this.kv.put(contender, { acquire: session, flags: SEMAPHORE_FLAG }),
    );
    // Go's %v of the nil error it had.
    if (!made) throw new Error('failed to make contender entry: <nil>');
    const started = Date.now();
    let index: string | undefined;
    for (let attempt = 0; ; attempt++) {
      const waitMs = nextWait(this.options, started, attempt);
      if (stop.aborted || waitMs === undefined) return false;
      const read = await unless(labelled('failed to read prefix', this.kv.list(this.prefix, { index, waitMs })), stop);
      if (read === undefined) return false;
      const pair = this.lockPair(read.pairs);
      if (pair !== undefined && pair.Flags !== SEMAPHORE_FLAG)
        throw new Error('Existing key does not match semaphore use');
      const record = this.decode(pair);
      if (record.Limit !== this.limit)
        throw new Error(`semaphore limit conflict (lock: ${record.Limit}, local: ${this.limit})`);
      prune(record, read.pairs);
      if (Object.keys(record.Holders).length >= record.Limit) {
        index = read.index;
        continue;
      }
      record.Holders[session] = true;
      const set = await labelled(
        'failed to update lock',
        this.kv.put(this.lockKey, { cas: pair?.ModifyIndex ?? 0, flags: SEMAPHORE_FLAG }, encode(record)),
      );
      // Not set: another contender's update came first; read again.
      if (set) return true;
    }
  }

  lost(stop: AbortSignal): Promise<void> {
    const session = this.session?.id ?? '';
    return watch(
      async (index) => {
        const read = await this.kv.list(this.prefix, { index, consistent: true });
        let record: Holders;
        try {
          record = this.decode(this.lockPair(read.pairs));
        } catch {
          return { index: read.index, holding: false };
        }
        prune(record, read.pairs);
        return { index: read.index, holding: Object.hasOwn(record.Holders, session) };
      },
      this.options.monitorRetries,
      stop,
    );
  }

  async release(): Promise<void> {
    const session = this.session;
    if (session === undefined) return;
    try {
      for (;;) {
        const { pair } = await this.kv.get(this.lockKey);
        const record = this.decode(pair);
        if (!Object.hasOwn(record.Holders, session.id)) break;
        delete record.Holders[session.id];
        const set = await labelled(
          'failed to update lock',
          this.kv.put(this.lockKey, { cas: pair?.ModifyIndex ?? 0, flags: SEMAPHORE_FLAG }, encode(record)),
        );
        if (set) break;
      }
      await this.kv.delete(posix.join(this.prefix, session.id));
    } finally {
      await session.end();
    }
  }

  async cleanup(): Promise<'removed' | 'in use'> {
    const { pairs } = await labelled('failed to read prefix', this.kv.list(this.prefix));
    const pair = this.lockPair(pairs);
    if (pair === undefined) return 'removed';
    if (pair.Flags !== SEMAPHORE_FLAG) throw new Error('Existing key does not match semaphore use');
    const record = this.decode(pair);
    prune(record, pairs);
    if (Object.keys(record.Holders).length > 0) return 'in use';
    const removed = await labelled(
      'failed to remove semaphore',
      this.kv.delete(this.lockKey, { cas: pair.ModifyIndex }),
    );
    return removed ? 'removed' : 'in use';
  }

  private lockPair(pairs: readonly Pair[]): Pair | undefined {
    return pairs.find((p) => p.Key === this.lockKey);
  }

  /** The record in `pair`; a missing or empty key is a fresh one with our limit. */
  private decode(pair: Pair | undefined): Holders {
    if (pair === undefined || pair.Value === null) return { Limit: this.limit, Holders: {} };
    try {
      const record = JSON.parse(Buffer.from(pair.Value, 'base64').toString()) as Partial<Holders>;
      return { Limit: Number(record.Limit ?? 0), Holders: { ...record.Holders } };
    } catch (err) {
      throw wrapped('lock decoding failed', err);
    }
  }
}

/** Drops the holders whose session no longer holds a key under the prefix (their contender key went with it). */
function prune(record: Holders, pairs: readonly Pair[]): void {
  const alive = new Set(pairs.map((p) => p.Session).filter((s) => s));
  for (const holder of Object.keys(record.Holders)) if (!alive.has(holder)) delete record.Holders[holder];
}

/** Go's json.Marshal of the record: its holders in byte order. */
function encode(record: Holders): string {
  const holders = Object.keys(record.Holders)
    .sort(byBytes)
    .map((id) => `${JSON.stringify(id)}:true`);
  return `{"Limit":${record.Limit},"Holders":{${holders.join(',')}}}`;
}
