// What a cluster agent of either role opens: its member record and view of etcd, the mailbox of
// forwarded writes, and (with ACLs) the token-secret mailbox; and what both roles answer alike.
import { selfMember } from '../agent-info.js';
import { openClusterSecretParts, type ClusterSecretParts } from '../cluster/cluster-acl.js';
import { openWriteMailbox } from '../cluster/cluster-writes.js';
import { openClusterState, type ClusterState } from '../cluster/open.js';
import type { Mailbox } from '../core/mailbox.js';
import { BAD_ROWS_COUNTER } from '../core/metrics.js';
import type { CaBase, Role } from './role.js';
import type { RoleContext } from './role-context.js';
import { READ_THROUGH_TABLES, TABLE_SCHEMAS } from './tables.js';

export interface ClusterParts {
  readonly cluster: ClusterState;
  readonly writeMailbox: Mailbox & { close(): void };
  /** Present with ACLs enabled: token secrets stay with the servers (docs/decisions.md D23). */
  readonly secretParts: ClusterSecretParts | undefined;
  /** The etcd handles the CA's parts are wired with. */
  caParts(base: CaBase): CaBase & { etcd: ClusterState['connection']; prefix: string; node: string };
}

export async function openClusterParts(ctx: RoleContext): Promise<ClusterParts> {
  const { config, log, clock, random, metrics } = ctx;
  const cluster = await openClusterState(
    config,
    { ...selfMember(ctx.info), server: config.server, port: config.ports.http },
    {
      log,
      clock,
      random,
      readThroughTables: READ_THROUGH_TABLES,
      tableSchemas: TABLE_SCHEMAS,
      badRows: metrics.counter(BAD_ROWS_COUNTER),
    },
  );
  metrics.gauge('svc.etcd.alarms', () => cluster.leadership.alarmCount);
  const prefix = config.cluster.etcd.prefix;
  return {
    cluster,
    writeMailbox: openWriteMailbox({ etcd: cluster.connection, prefix, log }),
    secretParts: config.acl.enabled
      ? openClusterSecretParts({ etcd: cluster.connection, prefix, log, server: config.server })
      : undefined,
    caParts: (base) => ({ ...base, etcd: cluster.connection, prefix, node: ctx.info.nodeName }),
  };
}

/** The fields both cluster roles share. */
export function clusterRoleBase(
  parts: ClusterParts,
): Pick<Role, 'store' | 'cluster' | 'contact' | 'listening' | 'closeState'> {
  const { cluster } = parts;
  return {
    store: cluster.store,
    cluster,
    contact: cluster.leadership,
    listening: (port) => cluster.listening(port),
    // The member record goes first: other agents stop listing this one at once.
    closeState: async () => {
      await cluster.close();
      await cluster.store.close();
    },
  };
}

/** Closes the mailboxes both cluster roles open. */
export function closeMailboxes(parts: ClusterParts): void {
  parts.secretParts?.close();
  parts.writeMailbox.close();
}
