// What a cluster agent of either role opens: its member record and view of etcd, the mailbox of
// forwarded writes, and (with ACLs) the token-secret mailbox; and what both roles answer alike.
import { selfRecord } from '../agent-info.js';
import { nodeGone } from '../catalog/member-status.js';
import { agentError } from '../core/errors.js';
import { etcdFailure } from '../state/etcd/index.js';
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
    { ...selfRecord(ctx.info), server: config.server, port: config.ports.http },
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

/**
 * How long a leaving agent waits for the servers to deregister its node: they do on the watch event
 * of its entry (milliseconds); past this it goes anyway, and they record it failed instead.
 */
const LEAVE_WAIT_MS = 5_000;

/** The fields both cluster roles share. */
export function clusterRoleBase(
  parts: ClusterParts,
  ctx: RoleContext,
): Pick<Role, 'store' | 'cluster' | 'contact' | 'listening' | 'closeState' | 'leave'> {
  const { cluster } = parts;
  return {
    store: cluster.store,
    cluster,
    contact: cluster.leadership,
    listening: (port) => cluster.listening(port),
    leave: async () => {
      await cluster.members.markLeaving().catch((err: unknown) => {
        if (etcdFailure(err) === 'other') throw err;
        // etcd unreachable (or full): Consul's answer to a write then, said once here.
        ctx.log.warn({ err }, 'could not leave: etcd does not take this member entry now');
        throw agentError('STATE_NO_LEADER');
      });
      if (await nodeGone(cluster.store, ctx.clock, ctx.info.nodeName, LEAVE_WAIT_MS)) return;
      ctx.log.warn(
        { waitedMs: LEAVE_WAIT_MS },
        'no server agent deregistered this node in time: leaving anyway; the servers will list it failed',
      );
    },
    // The member record goes first, saying it leaves: the others list this agent left at once.
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
