// Intentions over the state store: the live index and the writes of both APIs.
//
// The index is rebuilt whenever the intentions table changes and swapped in with one assignment.
// Two triggers: a table watch (re-armed after each firing) rebuilds right after a commit is
// applied, off any request's path; and every read compares the table's index with the snapshot's,
// so a write is visible to the very next decision even before the deferred watch has run.
// Entries of rows that did not change are carried over, so a rebuild after one write re-encodes
// one decision, not all of them. Writes are guarded (ifIndex) and retried, never lost.
import { createHash } from 'node:crypto';
import type { Clock } from '../../core/clock.js';
import { agentError, type AgentError } from '../../core/errors.js';
import { generateId } from '../../core/ids.js';
import type { Row, StateStore, WriteOp } from '../../state/types.js';
import { buildIntentionIndex, indexedIntention, type IndexedIntention, type IntentionIndex } from './index.js';
import { destinationPrefix, INTENTIONS_TABLE, intentionKey, intentionString, type StoredIntention } from './model.js';
import { storedIntention, type IntentionCandidate } from './validate.js';

/** A guarded write lost a race this many times in a row: give up rather than spin. */
const MAX_WRITE_ATTEMPTS = 5;

export class IntentionStore {
  private snapshot: IntentionIndex;
  private cancelWatch: (() => void) | undefined;
  private closed = false;
  /** Rebuilds done (for tests and metrics). */
  rebuilds = 0;

  constructor(
    private readonly store: StateStore,
    private readonly clock: Clock,
  ) {
    this.snapshot = this.build(undefined);
    this.arm();
  }

  /** The index as of the latest applied write. */
  current(): IntentionIndex {
    const snapshot = this.snapshot;
    if (this.store.tableIndex(INTENTIONS_TABLE) === snapshot.tableIndex) return snapshot;
    return (this.snapshot = this.build(snapshot));
  }

  get(key: string): Row<StoredIntention> | undefined {
    return this.store.get<StoredIntention>(INTENTIONS_TABLE, key);
  }

  /** Stops the rebuild watch (agent shutdown). */
  close(): void {
    this.closed = true;
    this.cancelWatch?.();
    this.cancelWatch = undefined;
  }

  private arm(): void {
    if (this.closed) return;
    this.cancelWatch = this.store.watchOnce({ table: INTENTIONS_TABLE }, () => {
      this.cancelWatch = undefined;
      this.current();
      this.arm();
    });
  }

  private build(previous: IntentionIndex | undefined): IntentionIndex {
    // Read the index first: a row list is never older than the index it is labelled with.
    const tableIndex = this.store.tableIndex(INTENTIONS_TABLE);
    const rows = this.store.list<StoredIntention>(INTENTIONS_TABLE, '');
    const reuse = new Map<string, IndexedIntention>();
    if (previous !== undefined) for (const entry of previous.all) reuse.set(entry.key, entry);
    this.rebuilds++;
    return buildIntentionIndex(rows, tableIndex, (row) => {
      const old = reuse.get(row.key);
      return old !== undefined && old.row.modifyIndex === row.modifyIndex ? old : indexedIntention(row);
    });
  }

  // ---- legacy ID API ----

  /** POST /v1/connect/intentions: a new intention with a fresh ID; the pair must be new. */
  async createLegacy(candidate: IntentionCandidate): Promise<string> {
    const key = keyOf(candidate);
    const existing = this.get(key);
    if (existing !== undefined) throw duplicate(existing.value);
    const byId = this.current().byId;
    let id = generateId();
    while (byId.has(id)) id = generateId();
    const now = this.now();
    const value = storedIntention(
      candidate,
      { ID: id, CreatedAt: now, UpdatedAt: now, Hash: legacyHash(candidate, id) },
      this.nextOrder(candidate.DestinationNS, candidate.DestinationName),
    );
    const result = await this.store.commit([{ op: 'set', table: INTENTIONS_TABLE, key, value, ifIndex: 0 }]);
    if (!result.ok) throw duplicate(this.get(key)?.value ?? value);
    return id;
  }

  /** PUT /v1/connect/intentions/:id: the destination stays; the source may move to a free pair. */
  async updateLegacy(id: string, candidate: IntentionCandidate): Promise<void> {
    for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS; attempt++) {
      const entry = this.current().byId.get(id);
      if (entry === undefined) throw agentError('INTENTION_NOT_FOUND', { action: 'modify', id });
      const old = entry.row.value;
      if (old.DestinationNS !== candidate.DestinationNS || old.DestinationName !== candidate.DestinationName) {
        throw agentError('INTENTION_DESTINATION_FIXED');
      }
      const key = keyOf(candidate);
      const order = key === entry.key ? old.Order : this.nextOrder(candidate.DestinationNS, candidate.DestinationName);
      const value = storedIntention(
        candidate,
        { ID: id, CreatedAt: old.CreatedAt ?? this.now(), UpdatedAt: this.now(), Hash: legacyHash(candidate, id) },
        order,
      );
      const ops: WriteOp[] = [];
      if (key === entry.key) {
        ops.push({ op: 'set', table: INTENTIONS_TABLE, key, value, ifIndex: entry.row.modifyIndex });
      } else {
        const taken = this.get(key);
        if (taken !== undefined) throw duplicate(taken.value);
        ops.push({ op: 'delete', table: INTENTIONS_TABLE, key: entry.key, ifIndex: entry.row.modifyIndex });
        ops.push({ op: 'set', table: INTENTIONS_TABLE, key, value, ifIndex: 0 });
      }
      if ((await this.store.commit(ops)).ok) return;
    }
    throw raced();
  }

  /** DELETE /v1/connect/intentions/:id. */
  async deleteLegacy(id: string): Promise<void> {
    for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS; attempt++) {
      const entry = this.current().byId.get(id);
      if (entry === undefined) throw agentError('INTENTION_NOT_FOUND', { action: 'delete', id });
      const op: WriteOp = { op: 'delete', table: INTENTIONS_TABLE, key: entry.key, ifIndex: entry.row.modifyIndex };
      if ((await this.store.commit([op])).ok) return;
    }
    throw raced();
  }

  // ---- by name (config-entry style) ----

  /**
   * PUT /v1/connect/intentions/exact: create or replace the pair; the result has no legacy ID. A
   * replaced source keeps its place in its destination's entry, a new one goes last.
   */
  async upsertExact(candidate: IntentionCandidate): Promise<void> {
    // Unguarded, as Consul's: the pair's last write wins. A guard on the view's index failed every
    // retry on an agent whose view lagged a partition's heal (test/cluster/cluster-partition.test.ts).
    const key = keyOf(candidate);
    const order = this.get(key)?.value.Order ?? this.nextOrder(candidate.DestinationNS, candidate.DestinationName);
    const value = storedIntention(candidate, undefined, order);
    await this.store.commit([{ op: 'set', table: INTENTIONS_TABLE, key, value }]);
  }

  // ---- a destination's intentions as one service-intentions config entry ----

  /** The destination's rows (one per source), by key. */
  destinationRows(destinationNS: string, destinationName: string): Row<StoredIntention>[] {
    return this.store.list<StoredIntention>(INTENTIONS_TABLE, destinationPrefix(destinationNS, destinationName));
  }

  /** The index of the last change to the destination's rows (0: never written). */
  destinationIndex(destinationNS: string, destinationName: string): number {
    return this.store.prefixIndex(INTENTIONS_TABLE, destinationPrefix(destinationNS, destinationName));
  }

  /**
   * Makes the destination's intentions exactly `candidates` (its entry's sources, in order) in one
   * commit, guarded by every row of `seen` (the rows the caller read) and by the absence of every
   * new one: false, and nothing written, when any of them changed meanwhile. An empty list deletes
   * the destination's intentions.
   */
  async replaceDestination(
    destinationNS: string,
    destinationName: string,
    candidates: readonly IntentionCandidate[],
    seen: readonly Row<StoredIntention>[],
  ): Promise<boolean> {
    const before = new Map(seen.map((row) => [row.key, row]));
    const ops: WriteOp[] = [];
    const kept = new Set<string>();
    candidates.forEach((candidate, order) => {
      const key = keyOf(candidate);
      kept.add(key);
      const value = storedIntention(candidate, undefined, order);
      ops.push({ op: 'set', table: INTENTIONS_TABLE, key, value, ifIndex: before.get(key)?.modifyIndex ?? 0 });
    });
    for (const row of seen)
      if (!kept.has(row.key))
        ops.push({ op: 'delete', table: INTENTIONS_TABLE, key: row.key, ifIndex: row.modifyIndex });
    if (ops.length === 0) return true;
    return (await this.store.commit(ops)).ok;
  }

  /** The place after the destination's last source. */
  private nextOrder(destinationNS: string, destinationName: string): number {
    let next = 0;
    for (const row of this.destinationRows(destinationNS, destinationName))
      if (row.value.Order !== undefined && row.value.Order >= next) next = row.value.Order + 1;
    return next;
  }

  /** DELETE /v1/connect/intentions/exact: idempotent. */
  async deleteExact(
    destinationNS: string,
    destinationName: string,
    sourceNS: string,
    sourceName: string,
  ): Promise<void> {
    await this.store.commit([
      {
        op: 'delete',
        table: INTENTIONS_TABLE,
        key: intentionKey(destinationNS, destinationName, sourceNS, sourceName),
      },
    ]);
  }

  private now(): string {
    return goTime(this.clock.now());
  }
}

function keyOf(x: IntentionCandidate): string {
  return intentionKey(x.DestinationNS, x.DestinationName, x.SourceNS, x.SourceName);
}

function duplicate(existing: StoredIntention): AgentError {
  return agentError('INTENTION_DUPLICATE', { intention: intentionString(existing) });
}

function raced(): AgentError {
  return agentError('INTENTION_RACE');
}

/**
 * The legacy replication hash (a legacy intention carries one; nothing here checks it): SHA-256
 * over the fields that define the intention, base64 as Go writes a []byte.
 */
function legacyHash(x: IntentionCandidate, id: string): string {
  const fields = [
    id,
    x.SourceNS,
    x.SourceName,
    x.DestinationNS,
    x.DestinationName,
    x.SourceType,
    x.Action,
    x.Description,
  ];
  const meta = Object.keys(x.Meta)
    .sort()
    .map((k) => [k, x.Meta[k]]);
  return createHash('sha256')
    .update(JSON.stringify([fields, meta]))
    .digest('base64');
}

/** A time as Go's encoding/json writes time.Time: RFC 3339, fractional zeros trimmed. */
export function goTime(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/\.(\d*?)0*Z$/, (_m, digits: string) => (digits === '' ? 'Z' : `.${digits}Z`));
}
