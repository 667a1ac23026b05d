// A cluster's client agent: it shares etcd's view but writes nothing itself
// (docs/decisions.md D25). Its writes, its leaves' signatures and token secrets go through a server agent over the
// cluster's mailboxes; the servers register its node.
import { clientSecrets } from '../acl/cluster-secrets.js';
import { ForwardedNodeSync } from '../catalog/forwarded-sync.js';
import { openClusterClientCa } from '../cluster/cluster-ca.js';
import { writeForwarder } from '../cluster/write-forwarding.js';
import { forwardingRoutes } from '../http/forward.js';
import { forwardedCatalogRequests } from '../http/forwarded-catalog.js';
import { clusterRoleBase, closeMailboxes, openClusterParts } from './cluster-parts.js';
import type { Role } from './role.js';
import type { RoleContext } from './role-context.js';

export async function openClusterClientRole(ctx: RoleContext): Promise<Role> {
  const { config, log } = ctx;
  const parts = await openClusterParts(ctx);
  const { cluster } = parts;
  const serverKnown = (): boolean => cluster.members.hasServer();
  const forward = writeForwarder({
    mailbox: parts.writeMailbox,
    reached: (index) => cluster.store.reached(index),
    log,
    serverKnown,
  });
  return {
    name: 'cluster client',
    ...clusterRoleBase(parts, ctx),
    forceLeave: undefined,
    secrets: parts.secretParts === undefined ? undefined : clientSecrets(parts.secretParts.mailbox),
    // The servers make the ACL system's first rows; `initial_management` is a server's key, as in Consul.
    setUpAcl: () => {
      if (config.acl.tokens.initialManagement !== undefined)
        log.warn({}, 'acl.tokens.initial_management is used by server agents only: this client agent ignores it');
      return Promise.resolve();
    },
    registerSelf: () => Promise.resolve(),
    maintainCatalog: () => undefined,
    sessionLeases: () => undefined,
    openCa: (base, pool) => {
      const ca = openClusterClientCa({ ...parts.caParts(base), keys: pool, serverKnown });
      return Promise.resolve({ ca: ca.ca, keepsLeaves: true, close: () => ca.close() });
    },
    catalogWriter: (catalog, syncToken) =>
      new ForwardedNodeSync(cluster.store, config.datacenter, forwardedCatalogRequests(forward, syncToken)),
    writesThrough: (group, defaultToken) => forwardingRoutes(group, forward, defaultToken, ctx.info.nodeName),
    serveWrites: () => undefined,
    readyToListen: () => Promise.resolve(),
    closeParts: () => closeMailboxes(parts),
  };
}
