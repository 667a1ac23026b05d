// The agent's Connect parts: the signing pool, the CA as the role holds it, the roots cache and the
// leaf manager (with its file beside a cluster agent's view). Built only with connect enabled.
import { ANONYMOUS_SECRET } from '../acl/builtin.js';
import { requirePermission } from '../acl/identity.js';
import type { AclResolver } from '../acl/resolver.js';
import type { AgentConfig } from '../config/types.js';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import type { Metrics } from '../core/metrics.js';
import { LeafCacheFile } from '../connect/ca/leaf-cache-file.js';
import { LeafManager } from '../connect/ca/leaf-manager.js';
import { ROOTS_TABLE } from '../connect/ca/model.js';
import { PoolSigner } from '../connect/ca/pool-signer.js';
import { RootsCache } from '../connect/ca/roots-cache.js';
import type { ConnectCa } from '../http/handlers/connect-ca.js';
import type { StateStore } from '../state/types.js';
import type { Role, RoleCa } from './role.js';

export interface ConnectParts {
  readonly ca: ConnectCa;
  close(): Promise<void>;
  /** Closes the signing threads, last: answers released at close may still be signing. */
  closeSigner(): Promise<void>;
}

export interface ConnectDeps {
  readonly config: AgentConfig;
  readonly role: Role;
  /** The store the CA and its caches read (a test's fault-injecting wrapper, else the agent's). */
  readonly store: StateStore;
  readonly resolver: AclResolver;
  readonly clock: Clock;
  readonly random: () => number;
  readonly log: Logger;
  readonly metrics: Metrics;
  /** The leaf root-change spread in force (a reload changes it). */
  readonly rootChangeSpreadMs: () => number;
}

export async function openConnect(d: ConnectDeps): Promise<ConnectParts> {
  const { config, clock, random, log } = d;
  const pool = new PoolSigner({ priority: config.connect.signingPriority, log });
  reportSigningPolicy(pool, config.connect.signingPriority, log);
  const base = {
    store: d.store,
    signer: pool,
    clock,
    random,
    log,
    datacenter: config.datacenter,
    bootstrap: config.connect.caConfig,
    trustDomain: config.connect.trustDomain,
    metrics: d.metrics,
  };
  // A server signs another agent's leaf only for a caller whose token may write the service (docs/decisions.md D24).
  const mayHaveLeaf = (token: string | undefined, service: string): void =>
    requirePermission(d.resolver.resolve(token ?? ANONYMOUS_SECRET), 'service', 'write', service);
  const roleCa: RoleCa = await d.role.openCa(base, pool, mayHaveLeaf).catch(async (err: unknown) => {
    await pool.close(); // a CA that cannot start (a supplied root without its key, say) leaves no threads behind
    throw err;
  });
  const manager = roleCa.ca;
  const roots = new RootsCache(
    { roots: () => manager.roots(), watch: (fn) => d.store.watchOnce({ table: ROOTS_TABLE }, fn) },
    clock,
    random,
    log,
  );
  // Restarted while etcd is down, a cluster agent still answers the leaves it held.
  const leafFile =
    roleCa.keepsLeaves && config.dataDir !== undefined ? new LeafCacheFile(config.dataDir, clock, log) : undefined;
  const leaves: LeafManager = new LeafManager({
    source: manager,
    leafIssued: leafFile === undefined ? undefined : () => leafFile.saveSoon(() => leaves.held()),
    roots,
    clock,
    random,
    log,
    maxEntries: config.connect.leafCacheMaxEntries,
    idleTtlMs: config.cache.ttlMs,
    get rootChangeSpreadMs() {
      return d.rootChangeSpreadMs();
    },
  });
  if (leafFile !== undefined) leaves.restore(await leafFile.load());
  d.metrics.gauge('svc.connect.leaf.cache_entries', () => leaves.size);
  d.metrics.gauge('svc.connect.ca.leaf.signing_queue', () => pool.waiting);
  return {
    ca: { manager, roots, leaves },
    close: async () => {
      leaves.close();
      await leafFile?.close(leaves.held());
      roots.close();
      roleCa.close();
    },
    closeSigner: () => pool.close(),
  };
}

/**
 * Says how the signing threads run: a debug line when as configured, and a warning when a Linux
 * thread could not lower its priority (elsewhere a nice value is the whole process's, so the
 * threads keep it by design).
 */
function reportSigningPolicy(pool: PoolSigner, wanted: AgentConfig['connect']['signingPriority'], log: Logger): void {
  pool.schedulingPolicy().then(
    ({ priority, nice, tid, reason }) => {
      if (priority === wanted) log.debug({ signingPriority: priority, nice, tid }, 'leaf-signing threads scheduled');
      else
        log[process.platform === 'linux' ? 'warn' : 'debug'](
          { signingPriority: wanted, nice, reason },
          'leaf-signing threads keep the process priority',
        );
    },
    (err: unknown) => log.debug({ err }, 'leaf-signing threads did not report their scheduling'),
  );
}
