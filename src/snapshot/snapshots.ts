// Save and restore of the agent's whole shared state (Consul's /v1/snapshot; docs/decisions.md#snapshots).
// Save: the store's image at one point, as an archive (archive.ts). Restore: the archive read and
// checked whole (checksum, format, datacenter, backend, every row against its table's schema)
// before anything changes; TTL sessions get new leases of their full time (Consul resets their
// timers at a restore); then the store replaces everything in one go (its replaceWith).
import type { Clock } from '../core/clock.js';
import { agentError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import type { SessionLeases } from '../sessions/leases.js';
import { SESSIONS_TABLE, storedSessionSchema, ttlMs } from '../sessions/model.js';
import type { ImageRow, StateStore, StoreSnapshots, TableSchemas } from '../state/types.js';
import { decodeArchive, encodeArchive } from './archive.js';
import { rowProblem } from './row-schema.js';

export interface SnapshotDeps {
  readonly store: StoreSnapshots;
  readonly datacenter: string;
  readonly agentVersion: string;
  readonly schemas: TableSchemas;
  readonly clock: Clock;
  /** Where TTL sessions' leases live on this agent (undefined where no session write runs). */
  readonly leases: () => SessionLeases | undefined;
  readonly log: Logger;
}

export interface SavedSnapshot {
  readonly archive: Buffer;
  /** The index the image was taken at (X-Consul-Index). */
  readonly index: number;
}

export class Snapshots {
  constructor(private readonly d: SnapshotDeps) {}

  async save(): Promise<SavedSnapshot> {
    const image = await this.d.store.exportImage();
    const now = this.d.clock.now();
    const archive = encodeArchive(
      {
        id: `${image.index}-${now}`,
        datacenter: this.d.datacenter,
        backend: this.d.store.backend,
        created: new Date(now),
        agentVersion: this.d.agentVersion,
      },
      image,
    );
    this.d.log.info({ index: image.index, rows: image.rows.length, bytes: archive.length }, 'snapshot saved');
    return { archive, index: image.index };
  }

  /** Replaces the state with the archive's; nothing changes when the archive is refused. Resolves to the restore's index. */
  async restore(bytes: Buffer): Promise<number> {
    const { meta, image } = decodeArchive(bytes);
    if (meta.Datacenter !== this.d.datacenter)
      throw agentError('SNAPSHOT_DATACENTER_MISMATCH', { archive: meta.Datacenter, agent: this.d.datacenter });
    if (meta.Backend !== this.d.store.backend)
      throw agentError('SNAPSHOT_BACKEND_MISMATCH', { archive: meta.Backend, agent: this.d.store.backend });
    for (const row of image.rows) {
      const problem = rowProblem(this.d.schemas.get(row.table), row.key, row.value);
      if (problem !== undefined) {
        throw agentError('SNAPSHOT_UNREADABLE', {
          detail: `row ${JSON.stringify(row.key)} of table ${row.table} does not match its schema: ${problem}`,
        });
      }
    }
    const granted: string[] = [];
    const leases = this.d.leases();
    try {
      const rows = await Promise.all(image.rows.map((row) => this.withNewLease(row, leases, granted)));
      const index = await this.d.store.replaceWith({ rows, privateEntries: image.privateEntries });
      this.d.log.info(
        { archiveIndex: meta.Index, index, rows: rows.length, id: meta.ID },
        "snapshot restored: the state is the archive's",
      );
      return index;
    } catch (err) {
      // The new leases would hold nothing: the sessions they were for were not restored.
      if (leases !== undefined) for (const lease of granted) void leases.revoke(lease).catch(() => undefined);
      throw err;
    }
  }

  /** A TTL session's row under a new lease of twice its TTL; any other row as it is. */
  private async withNewLease(row: ImageRow, leases: SessionLeases | undefined, granted: string[]): Promise<ImageRow> {
    if (row.table !== SESSIONS_TABLE) return row;
    const session = storedSessionSchema.parse(row.value);
    if (session.lease === undefined) return row;
    const { lease: _old, ...rest } = session;
    // Without leases here (none should run a restore) the session is restored without one: it has no TTL end.
    if (leases === undefined) return { ...row, value: rest };
    const lease = await leases.grant(2 * ttlMs(session));
    granted.push(lease);
    return { ...row, value: { ...rest, lease }, lease };
  }
}

/** The store's snapshot side, when it has one (both stores do; a test's wrapper may not). */
export function storeSnapshots(store: StateStore): StoreSnapshots | undefined {
  const s = store as Partial<StoreSnapshots>;
  return typeof s.exportImage === 'function' && typeof s.replaceWith === 'function' && s.backend !== undefined
    ? (store as StateStore & StoreSnapshots)
    : undefined;
}
