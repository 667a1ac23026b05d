// The agent's route table, built once from its components: the groups that change shared state go
// through the role (a client forwards their writes, a server also runs other agents'), the rest
// are served as they are.
import { selfMember, type AgentInfo } from '../agent-info.js';
import type { AgentTokens } from '../acl/agent-tokens.js';
import type { createAclDomain } from '../acl/domain.js';
import type { AclResolver } from '../acl/resolver.js';
import type { Catalog } from '../catalog/catalog.js';
import { departedMembers, memberStatuses } from '../catalog/member-status.js';
import type { CatalogQueries } from '../catalog/queries.js';
import type { AgentConfig } from '../config/types.js';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import type { Metrics } from '../core/metrics.js';
import type { PrometheusMetrics } from '../core/prometheus.js';
import type { IntentionStore } from '../connect/intentions/store.js';
import { ConfigEntries } from '../config-entries/entries.js';
import { aclGate, buildApi } from '../http/api.js';
import type { BlockingQueries } from '../http/blocking.js';
import type { BrandHeaders } from '../http/brand.js';
import { aclRoutes } from '../http/handlers/acl.js';
import { aclAuthMethodRoutes } from '../http/handlers/acl-auth-methods.js';
import { aclLoginRoutes } from '../http/handlers/acl-login.js';
import { createAuthMethodsDomain } from '../acl/auth-methods/domain.js';
import { agentRoutes, type ClusterView } from '../http/handlers/agent.js';
import { agentMembershipRoutes, forceLeaveRoutes } from '../http/handlers/agent-membership.js';
import { agentMonitorRoutes, type LogMonitors } from '../http/handlers/agent-monitor.js';
import { agentCheckRoutes } from '../http/handlers/agent-checks.js';
import { agentServiceRoutes } from '../http/handlers/agent-services.js';
import { agentTokenRoutes } from '../http/handlers/agent-token.js';
import { authorizeRoutes } from '../http/handlers/authorize.js';
import { catalogRoutes } from '../http/handlers/catalog.js';
import { connectCaRoutes, type ConnectCa } from '../http/handlers/connect-ca.js';
import { eventFireRoutes, eventListRoutes } from '../http/handlers/events.js';
import type { EventFeed } from '../events/event-feed.js';
import { healthRoutes } from '../http/handlers/health.js';
import { configEntriesRoutes } from '../http/handlers/config-entries.js';
import { intentionsRoutes } from '../http/handlers/intentions.js';
import { kvRoutes } from '../http/handlers/kv.js';
import { sessionReadRoutes, sessionWriteRoutes } from '../http/handlers/sessions.js';
import { clientSnapshotRoutes, snapshotRoutes } from '../http/handlers/snapshot.js';
import { Snapshots, storeSnapshots } from '../snapshot/snapshots.js';
import { txnRoutes } from '../http/handlers/txn.js';
import { KvTxn } from '../txn/kv-txn.js';
import { DEFAULT_RENDER_CACHE_BYTES, RenderCache } from '../http/render-cache.js';
import { scopeToDatacenter } from '../http/datacenter.js';
import type { CompiledRoute, Route } from '../http/routes.js';
import type { LocalAgent } from '../local/open.js';
import type { Role } from './role.js';
import type { StateStore } from '../state/types.js';
import type { SessionParts } from './sessions.js';
import { TABLE_SCHEMAS } from './tables.js';

export interface ApiDeps {
  readonly role: Role;
  readonly info: AgentInfo;
  /** The config in force (a reload replaces it). */
  readonly running: () => AgentConfig;
  readonly resolver: AclResolver;
  readonly agentTokens: AgentTokens;
  readonly aclDomain: ReturnType<typeof createAclDomain>;
  readonly intentions: IntentionStore;
  readonly catalog: Catalog;
  readonly catalogQueries: CatalogQueries;
  readonly ca: ConnectCa | undefined;
  readonly local: LocalAgent;
  /** This agent's user events (/v1/event/list). */
  readonly events: EventFeed;
  readonly sessions: SessionParts;
  /** The open GET /v1/agent/monitor streams. */
  readonly monitors: LogMonitors;
  /** PUT /v1/agent/leave: leaves the cluster; `leaveAnswered` once answered (the agent then stops). */
  readonly leave: () => Promise<void>;
  readonly leaveAnswered: () => void;
  readonly blocking: BlockingQueries;
  readonly brand: BrandHeaders;
  readonly clock: Clock;
  readonly log: Logger;
  readonly random: () => number;
  readonly metrics: Metrics;
  readonly prometheus: PrometheusMetrics | undefined;
  readonly reload: () => Promise<void>;
  /** The transport section of /v1/agent/self's Stats, once the agent listens. */
  readonly transportStats: () => Record<string, string> | undefined;
}

export function agentApi(d: ApiDeps): CompiledRoute[] {
  const { role, blocking, brand, random, clock, metrics } = d;
  const config = d.running();
  const store = role.store;
  const limits = {
    get defaultQueryTimeMs() {
      return d.running().defaultQueryTimeMs;
    },
    get maxQueryTimeMs() {
      return d.running().maxQueryTimeMs;
    },
  };
  const defaultToken = (): string | undefined => d.agentTokens.defaultToken();
  const maxBodyBytes = (): number => d.running().limits.httpMaxBodyBytes;
  const gate = aclGate(d.resolver, defaultToken);
  const renders = new RenderCache({ maxBytes: DEFAULT_RENDER_CACHE_BYTES });
  // The routes that change shared state (docs/decisions.md D25).
  const shared = {
    kv: kvRoutes({
      store,
      blocking,
      brand,
      limits,
      kvMaxValueSize: () => d.running().kvMaxValueSize,
      random,
      locks: d.sessions.locks,
    }),
    ca: connectCaRoutes({ ca: d.ca, blocking, brand, limits, clock, random, metrics }),
    intentions: intentionsRoutes({
      intentions: d.intentions,
      blocking,
      brand,
      limits,
      random,
      connectEnabled: config.connect.enabled,
    }),
    catalog: catalogRoutes({
      catalog: d.catalog,
      queries: d.catalogQueries,
      store,
      blocking,
      brand,
      limits,
      random,
      renders,
      datacenter: config.datacenter,
    }),
    acl: aclRoutes({ ...d.aclDomain, store, blocking, brand, limits, random }),
    aclAuth: aclAuthGroup(d, store),
    events: eventFireRoutes({ store }),
    txn: txnRoutes({
      txn: new KvTxn(store, clock, { datacenter: config.datacenter }),
      brand,
      kvMaxValueSize: () => d.running().kvMaxValueSize,
    }),
    sessions: sessionWriteRoutes({
      sessions: () => {
        // A client forwards these writes: only a role that keeps sessions runs them.
        if (d.sessions.sessions === undefined) throw new Error('session writes run on a server agent');
        return d.sessions.sessions;
      },
    }),
    forceLeave: forceLeaveRoutes({
      forceLeave: (node, prune) => {
        // A client forwards it: only a role that keeps membership runs it.
        if (role.forceLeave === undefined) throw new Error('force-leave runs on a server agent');
        return role.forceLeave(node, prune);
      },
    }),
    snapshot: snapshotGroup(d, store),
    configEntries: configEntriesRoutes({
      entries: new ConfigEntries(store, d.intentions),
      blocking,
      brand,
      limits,
      random,
    }),
  };
  role.serveWrites(
    [
      shared.kv,
      shared.txn,
      shared.ca,
      shared.intentions,
      shared.catalog,
      shared.acl,
      shared.aclAuth,
      shared.events,
      shared.sessions,
      shared.forceLeave,
      shared.snapshot,
      shared.configEntries,
    ],
    (groups) => buildApi(maxBodyBytes, gate, groups),
  );
  // Live members from etcd, departed ones from the servers' rows (docs/decisions.md#departed-members).
  const cluster = role.cluster?.routes;
  const clusterView: ClusterView | undefined =
    cluster === undefined
      ? undefined
      : { ...cluster, members: () => memberStatuses(cluster.members(), departedMembers(store)) };
  const through = (group: (typeof shared)[keyof typeof shared]) => role.writesThrough(group, defaultToken);
  const groups: (readonly Route[])[] = [
    through(shared.kv),
    through(shared.txn),
    through(shared.ca),
    authorizeRoutes({
      intentions: d.intentions,
      connectEnabled: config.connect.enabled,
      cacheMaxEntries: config.cache.maxEntries,
      metrics,
    }),
    through(shared.intentions),
    through(shared.configEntries),
    through(shared.catalog),
    healthRoutes({ queries: d.catalogQueries, store, blocking, brand, limits, random, renders }),
    through(shared.acl),
    through(shared.aclAuth),
    through(shared.events),
    eventListRoutes({ store, feed: d.events, blocking, brand, limits, random }),
    through(shared.sessions),
    sessionReadRoutes({ store, blocking, brand, limits, random }),
    agentTokenRoutes({ tokens: d.agentTokens, nodeName: d.info.nodeName, log: d.log }),
    agentServiceRoutes({ local: d.local, brand, datacenter: config.datacenter, blocking, limits, random }),
    agentCheckRoutes({ local: d.local, brand }),
    agentMembershipRoutes({
      info: d.info,
      leave: d.leave,
      leaveAnswered: d.leaveAnswered,
      members: () => clusterView?.members() ?? [selfMember(d.info)],
      clustered: clusterView !== undefined,
      log: d.log,
    }),
    through(shared.forceLeave),
    // A client agent forwards a restore to a server and takes no save (handlers/snapshot.ts).
    ((routes) => (routes === shared.snapshot ? routes : clientSnapshotRoutes(routes)))(through(shared.snapshot)),
    agentMonitorRoutes({ info: d.info, monitors: d.monitors }),
    agentRoutes({
      metrics,
      prometheus: d.prometheus,
      info: d.info,
      brand,
      config: d.running,
      reload: d.reload,
      cluster: clusterView,
      stateIndex: () => store.index,
      stats: () => {
        const transport = d.transportStats();
        return {
          agent: { parked_queries: String(blocking.parked), watches: String(store.watchCount) },
          raft: { applied_index: String(store.index), commits: String(store.stats.commits) },
          runtime: { arch: process.arch, os: process.platform, version: process.version },
          ...(transport === undefined ? {} : { transport }),
        };
      },
    }),
  ];
  // ?dc= and ?peer= where Consul reads them (docs/decisions.md#datacenters).
  return buildApi(
    maxBodyBytes,
    gate,
    groups.map((group) => scopeToDatacenter(group, config.datacenter)),
  );
}

/** GET and PUT /v1/snapshot over the role's store; none for a store without snapshots (one a test opened). */
function snapshotGroup(d: ApiDeps, store: StateStore): Route[] {
  const snapshots = storeSnapshots(store);
  if (snapshots === undefined) return [];
  const service = new Snapshots({
    store: snapshots,
    datacenter: d.running().datacenter,
    agentVersion: d.info.version,
    schemas: TABLE_SCHEMAS,
    clock: d.clock,
    leases: () => d.sessions.leases,
    log: d.log,
  });
  return snapshotRoutes({ snapshots: service, brand: d.brand });
}

/** Auth methods, binding rules, login and logout (docs/decisions.md#auth-methods): writes go through the role as token writes do. */
function aclAuthGroup(d: ApiDeps, store: StateStore): Route[] {
  const config = d.running();
  const auth = createAuthMethodsDomain(store, d.aclDomain.tokens, {
    minExpirationTtlMs: config.acl.tokenMinExpirationTtlMs,
    maxExpirationTtlMs: config.acl.tokenMaxExpirationTtlMs,
    datacenter: config.datacenter,
    clock: d.clock,
  });
  const { blocking, brand, random } = d;
  const limits = {
    get defaultQueryTimeMs() {
      return d.running().defaultQueryTimeMs;
    },
    get maxQueryTimeMs() {
      return d.running().maxQueryTimeMs;
    },
  };
  return [
    ...aclAuthMethodRoutes({ methods: auth.methods, rules: auth.rules, store, blocking, brand, limits, random }),
    ...aclLoginRoutes({ login: auth.login, tokens: d.aclDomain.tokens }),
  ];
}
