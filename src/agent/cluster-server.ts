// A cluster's server agent: it shares etcd, keeps the CA key and the token secrets in etcd's
// private range, answers client agents' signing, secret and write requests with its own ACLs
// (docs/decisions.md D23, D24, D25), and keeps every node's health from the member list.
import { buildVersion } from '../agent-info.js';
import { consulService } from '../catalog/consul-service.js';
import { selfNodeFields } from '../catalog/self.js';
import { LivenessReconciler } from '../catalog/liveness.js';
import { serveSecretRequests, serverSecrets } from '../acl/cluster-secrets.js';
import { moveSecretsOutOfRows } from '../acl/secret-migration.js';
import { openClusterServerCa } from '../cluster/cluster-ca.js';
import { EtcdSessionLeases } from '../cluster/session-leases.js';
import { serveForwardedWrites } from '../cluster/write-forwarding.js';
import { forwardedWriteRunner, writeRoutes } from '../http/forward.js';
import { clusterRoleBase, closeMailboxes, openClusterParts } from './cluster-parts.js';
import type { Role } from './role.js';
import type { RoleContext } from './role-context.js';

export async function openClusterServerRole(ctx: RoleContext): Promise<Role> {
  const { log, clock, config } = ctx;
  const parts = await openClusterParts(ctx);
  const { cluster, secretParts } = parts;
  const store = cluster.store;
  const secrets = secretParts?.range === undefined ? undefined : serverSecrets(secretParts.range);
  let liveness: LivenessReconciler | undefined;
  return {
    name: 'cluster server',
    ...clusterRoleBase(parts, ctx),
    forceLeave: (node, prune) => {
      if (liveness === undefined) return Promise.reject(new Error('the liveness reconciler is not running yet'));
      return liveness.forceLeave(node, prune);
    },
    secrets,
    setUpAcl: async (writeFirstRows, resolve) => {
      if (secretParts !== undefined && secrets !== undefined)
        serveSecretRequests(secretParts.mailbox, { secrets, store, resolve, log });
      await writeFirstRows();
      // Rows written before docs/decisions.md D23 held their secrets (src/acl/secret-migration.ts).
      if (secrets !== undefined) await moveSecretsOutOfRows(store, secrets, { log });
    },
    registerSelf: (register) => register(),
    sessionLeases: () => new EtcdSessionLeases(cluster.connection()),
    // A node turns critical once its member lease lapsed, and passing when it is back; members
    // that failed or left are recorded (docs/decisions.md#departed-members).
    maintainCatalog: (catalog, queries, selfRegistered) => {
      const reconciler = (liveness = new LivenessReconciler({
        catalog,
        queries,
        store,
        // The live members, and those whose entries went saying they leave (not failed).
        liveMembers: () =>
          new Map(
            [...cluster.members.departing(), ...cluster.members.list()].map(
              (m) => [m.name, { member: m, node: selfNodeFields({ nodeId: m.id, advertiseAddr: m.address }) }] as const,
            ),
          ),
        recordedLeft: (name) => cluster.members.forgetDeparting(name),
        consulService: (m) => (m.server ? consulService(m.port, buildVersion(m.version)) : undefined),
        clock,
        log,
        reapAfterMs: config.reconnectTimeoutMs,
      }));
      cluster.members.onChange(() => void reconciler.schedule());
      void selfRegistered.then(() => reconciler.start());
    },
    openCa: async (base, _pool, authorizeLeaf) => {
      const ca = await openClusterServerCa({
        ...parts.caParts(base),
        authorizeLeaf: (token, _namespace, service) => authorizeLeaf(token, service),
      });
      return { ca: ca.ca, keepsLeaves: true, close: () => ca.close() };
    },
    catalogWriter: (catalog) => catalog,
    writesThrough: (group) => group,
    serveWrites: (groups, compile) =>
      serveForwardedWrites(
        parts.writeMailbox,
        forwardedWriteRunner(compile([writeRoutes(groups.flat())]), log),
        () => store.index,
        log,
      ),
    readyToListen: () => Promise.resolve(),
    closeParts: () => {
      liveness?.close();
      closeMailboxes(parts);
    },
  };
}
