// A cluster's session leases are etcd's (docs/decisions.md#sessions): the session's row is put
// under its lease, so when the lease lapses etcd deletes the row and every agent's view sees the
// session end at one revision, whichever agent made it and whether or not that agent still runs.
import type { SessionLeases } from '../sessions/leases.js';
import type { EtcdConnection } from '../state/etcd/index.js';

/** The deadline of one lease call: a renew that cannot reach etcd fails within it. */
const LEASE_CALL_MS = 5_000;

export class EtcdSessionLeases implements SessionLeases {
  /** `connection`: a handle of its own on the agent's etcd client, closed with it. */
  constructor(private readonly connection: EtcdConnection) {}

  grant(ms: number): Promise<string> {
    return this.connection.grantRequestLease(Math.ceil(ms / 1000), LEASE_CALL_MS);
  }

  async renew(id: string): Promise<boolean> {
    return (await this.connection.renewLease(id, LEASE_CALL_MS)) > 0;
  }

  async revoke(id: string): Promise<void> {
    try {
      await this.connection.revokeRequestLease(id, LEASE_CALL_MS);
    } catch (err) {
      // Already ended (lapsed, or revoked by another agent): what revoke asks for.
      if (!(err instanceof Error && /lease not found/.test(err.message))) throw err;
    }
  }

  /** etcd keeps the lease's time: nothing to take on. */
  adopt(): void {}

  close(): void {
    this.connection.close();
  }
}
