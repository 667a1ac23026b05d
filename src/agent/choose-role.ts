// The agent's role, chosen here once (as Consul's agent picks its server or client delegate):
// etcd endpoints make a cluster agent, a server or a client by `server`; otherwise a lone agent.
import type { Role } from './role.js';
import type { RoleContext } from './role-context.js';
import { openClusterClientRole } from './cluster-client.js';
import { openClusterServerRole } from './cluster-server.js';
import { openLoneRole } from './lone.js';

export function openRole(ctx: RoleContext): Promise<Role> {
  // A store the caller opened (an etcd store in the fail-open tests) is the agent's own, as a lone agent's.
  if (ctx.store !== undefined || ctx.config.cluster.etcd.endpoints.length === 0) return openLoneRole(ctx);
  return ctx.config.server ? openClusterServerRole(ctx) : openClusterClientRole(ctx);
}
