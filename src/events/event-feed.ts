// One agent's user events: the rows of the events table written since the agent started, in the
// order they were written, each taken once and only if it passes the agent's filters (its node
// name, its services and their tags), the most recent EVENTS_KEPT kept (Consul's ring of 256).
import type { StateStore } from '../state/types.js';
import { EVENTS_KEPT, EVENTS_TABLE, passesFilters, type LocalService, type UserEvent } from './user-event.js';

/** What the filters are matched against, read when an event comes (services change). */
export interface EventTarget {
  readonly nodeName: string;
  services(): readonly LocalService[];
}

export class EventFeed {
  /** Oldest first. */
  private readonly events: UserEvent[] = [];
  private readonly taken = new Set<string>();
  /** Rows created at or before it have been looked at (or predate the agent). */
  private lastIndex: number;
  private readonly listeners = new Set<() => void>();
  private cancel: (() => void) | undefined;

  constructor(
    private readonly store: StateStore,
    private readonly target: EventTarget,
  ) {
    // Events fired before the agent started are not its own, as a new Consul agent hears none.
    this.lastIndex = store.tableIndex(EVENTS_TABLE);
    this.arm();
  }

  /** The events kept, oldest first; with `name`, only those of that name. */
  list(name?: string): UserEvent[] {
    return name === undefined || name === '' ? [...this.events] : this.events.filter((e) => e.Name === name);
  }

  /** Calls `fn` once, when the next event is taken; returns the cancel (a blocking query's watch). */
  watchOnce(fn: () => void): () => void {
    const once = (): void => fn();
    this.listeners.add(once);
    return () => void this.listeners.delete(once);
  }

  close(): void {
    this.cancel?.();
    this.cancel = undefined;
    this.listeners.clear();
  }

  private arm(): void {
    this.cancel = this.store.watchOnce({ table: EVENTS_TABLE }, () => {
      this.take();
      this.arm();
    });
  }

  private take(): void {
    const rows = this.store
      .list<UserEvent>(EVENTS_TABLE, '')
      .filter((row) => row.createIndex > this.lastIndex)
      .sort((a, b) => a.createIndex - b.createIndex);
    let added = false;
    for (const row of rows) {
      this.lastIndex = Math.max(this.lastIndex, row.createIndex);
      const event = row.value;
      if (this.taken.has(event.ID)) continue;
      if (!passesFilters(event, this.target.nodeName, this.target.services())) continue;
      // Consul's LTime is its gossip clock; here the event's place in the one index clock.
      this.events.push({ ...event, LTime: row.createIndex });
      this.taken.add(event.ID);
      added = true;
      while (this.events.length > EVENTS_KEPT) this.taken.delete(this.events.shift()!.ID);
    }
    if (!added) return;
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const fn of listeners) fn();
  }
}
