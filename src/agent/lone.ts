// The lone agent: its state in the embedded store (or a store the caller opened), its own CA, and
// every write its own. It takes requests once its node is in the catalog.
import { ServerCa } from '../connect/ca/server-ca.js';
import { agentError } from '../core/errors.js';
import { LocalLeases } from '../sessions/leases.js';
import { backendContact } from '../state/backend-health.js';
import { openEmbeddedStore } from '../state/embedded/index.js';
import type { StateStore } from '../state/types.js';
import type { Role } from './role.js';
import type { RoleContext } from './role-context.js';

export async function openLoneRole(ctx: RoleContext): Promise<Role> {
  const store: StateStore =
    ctx.store ??
    (await openEmbeddedStore({
      dataDir: ctx.config.dataDir,
      log: ctx.log,
      clock: ctx.clock,
      acceptLoss: ctx.acceptStateLoss,
      onWalSync: ctx.prometheus?.recordWalSync,
    }));
  return {
    name: 'lone',
    store,
    cluster: undefined,
    contact: backendContact(store.health, ctx.clock),
    secrets: undefined,
    setUpAcl: (writeFirstRows) => writeFirstRows(),
    registerSelf: (register) => register(),
    maintainCatalog: () => undefined,
    sessionLeases: (expired) => new LocalLeases(ctx.clock, expired),
    openCa: async (base) => {
      const ca = await ServerCa.open(base);
      return { ca, keepsLeaves: false, close: () => ca.close() };
    },
    catalogWriter: (catalog) => catalog,
    writesThrough: (group) => group,
    serveWrites: () => undefined,
    leave: () => Promise.resolve(),
    // Its only member is itself, alive: a live Consul agent refutes a force-leave of itself.
    forceLeave: (node) => {
      if (node === ctx.info.nodeName) return Promise.resolve();
      return Promise.reject(agentError('AGENT_FORCE_LEAVE_UNKNOWN', { node }));
    },
    readyToListen: (selfRegistered) => selfRegistered,
    listening: () => Promise.resolve(),
    closeParts: () => undefined,
    closeState: () => store.close(),
  };
}
