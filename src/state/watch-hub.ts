// One-shot watches on a key, a prefix or a whole table, and their fan-out: each applied batch of
// changes wakes every matching watcher exactly once, all of them in one setImmediate.
import type { Logger } from '../core/log.js';
import type { ChangeSink } from './memory-tables.js';

/**
 * A watch is its own cancel handle (one allocation per watch besides the caller's callback).
 * `set` is the Set it is parked in; undefined once delivered or cancelled.
 */
interface Watch {
  (): void;
  fn: () => void;
  set: Set<Watch> | undefined;
  /** The map holding `set` under `target`, so cancel can drop an emptied Set in O(1). */
  bucket: Map<string, Set<Watch>>;
  target: string;
}

const NOOP = (): void => {};

export class WatchHub implements ChangeSink {
  // Inner maps are kept per table once created: tables are a handful of fixed names.
  private readonly byKey = new Map<string, Map<string, Set<Watch>>>();
  private readonly byPrefix = new Map<string, Map<string, Set<Watch>>>();
  private readonly byTable = new Map<string, Set<Watch>>();
  private count = 0;
  /** Sets taken out by changed() since the last flush(); delivered together. */
  private due: Set<Watch>[] = [];

  constructor(private readonly log: Logger) {}

  /** Watches registered and not yet fired or cancelled (fired ones leave at collection time). */
  get watchCount(): number {
    return this.count;
  }

  watchKey(table: string, key: string, fn: () => void): () => void {
    return this.add(innerMap(this.byKey, table), key, fn);
  }

  watchPrefix(table: string, prefix: string, fn: () => void): () => void {
    return this.add(innerMap(this.byPrefix, table), prefix, fn);
  }

  watchTable(table: string, fn: () => void): () => void {
    return this.add(this.byTable, table, fn);
  }

  /** Collects every watcher the change of (table, key) wakes: whole Sets come out of their maps. */
  changed(table: string, key: string): void {
    const tableSet = this.byTable.get(table);
    if (tableSet !== undefined) this.take(this.byTable, table, tableSet);

    const keys = this.byKey.get(table);
    const keySet = keys?.get(key);
    if (keySet !== undefined) this.take(keys as Map<string, Set<Watch>>, key, keySet);

    const prefixes = this.byPrefix.get(table);
    if (prefixes === undefined || prefixes.size === 0) return;
    // Probe whichever is smaller: the registered prefixes, or the key's own prefixes.
    if (prefixes.size <= key.length + 1) {
      for (const [prefix, set] of prefixes) if (key.startsWith(prefix)) this.take(prefixes, prefix, set);
    } else {
      for (let i = 0; i <= key.length; i++) {
        const prefix = key.slice(0, i);
        const set = prefixes.get(prefix);
        if (set !== undefined) this.take(prefixes, prefix, set);
      }
    }
  }

  /** Schedules delivery of everything collected since the last flush, in one setImmediate. */
  flush(): void {
    if (this.due.length === 0) return;
    const sets = this.due;
    this.due = [];
    // Deferred, never inline: waking parked HTTP requests from inside another request's handler
    // is 12-14x slower under uWS than answering them from a fresh macrotask.
    setImmediate(deliver, sets, this.log);
  }

  private add(bucket: Map<string, Set<Watch>>, name: string, fn: () => void): () => void {
    let set = bucket.get(name);
    if (set === undefined) {
      set = new Set();
      bucket.set(name, set);
    }
    const w = (() => this.cancel(w)) as Watch;
    w.fn = fn;
    w.set = set;
    w.bucket = bucket;
    w.target = name;
    set.add(w);
    this.count++;
    return w;
  }

  private take(bucket: Map<string, Set<Watch>>, name: string, set: Set<Watch>): void {
    bucket.delete(name);
    this.count -= set.size;
    this.due.push(set);
  }

  private cancel(w: Watch): void {
    const set = w.set;
    if (set === undefined) return;
    w.set = undefined;
    w.fn = NOOP;
    set.delete(w);
    // A Set no longer in its bucket was taken for delivery: the watch was already uncounted,
    // and deleting it from the Set is what stops the pending callback.
    if (w.bucket.get(w.target) !== set) return;
    this.count--;
    if (set.size === 0) w.bucket.delete(w.target);
  }
}

function innerMap(outer: Map<string, Map<string, Set<Watch>>>, table: string): Map<string, Set<Watch>> {
  let inner = outer.get(table);
  if (inner === undefined) {
    inner = new Map();
    outer.set(table, inner);
  }
  return inner;
}

function deliver(sets: readonly Set<Watch>[], log: Logger): void {
  for (const set of sets) {
    for (const w of set) {
      const fn = w.fn;
      w.set = undefined;
      w.fn = NOOP;
      try {
        fn();
      } catch (err) {
        // One faulty watcher must not starve the others of their wake-up.
        log.error({ err }, 'state watch callback threw');
      }
    }
  }
}
