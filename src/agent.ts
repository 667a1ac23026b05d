// The composition root: builds the agent's components from its config and wires them together.
// No logic lives here. The same object serves the CLI (with HTTP) and library use (without).
import { agentInfo, selfMember, type AgentInfo } from './agent-info.js';
import { isConfigError } from './config/errors.js';
import { planReload, type ReloadPlan } from './config/reload.js';
import type { AgentConfig } from './config/types.js';
import { systemClock, type Clock } from './core/clock.js';
import { agentError, isAgentError, loggedAtSource } from './core/errors.js';
import { silentLogger, type Logger, type RootLogger } from './core/log.js';
import { BAD_ROWS_COUNTER, Metrics } from './core/metrics.js';
import { PrometheusMetrics } from './core/prometheus.js';
import { AgentTokens } from './acl/agent-tokens.js';
import { createAclDomain } from './acl/domain.js';
import { clientSecrets, serveSecretRequests, serverSecrets } from './acl/cluster-secrets.js';
import { initAclState } from './acl/init.js';
import { moveSecretsOutOfRows } from './acl/secret-migration.js';
import { ANONYMOUS_SECRET } from './acl/builtin.js';
import { requirePermission } from './acl/identity.js';
import { AclResolver } from './acl/resolver.js';
import type { AuthorizeRequest, AuthorizeResult } from './connect/authorize.js';
import { connectAuthorizer } from './connect/authorizer.js';
import { IntentionStore } from './connect/intentions/store.js';
import { aclGate, buildApi, brandHeaders, commonHeaders } from './http/api.js';
import { BlockingQueries } from './http/blocking.js';
import { errorReply } from './http/dispatch.js';
import { aclRoutes } from './http/handlers/acl.js';
import { agentRoutes } from './http/handlers/agent.js';
import { agentTokenRoutes } from './http/handlers/agent-token.js';
import { authorizeRoutes } from './http/handlers/authorize.js';
import { intentionsRoutes } from './http/handlers/intentions.js';
import { kvRoutes } from './http/handlers/kv.js';
import { catalogRoutes } from './http/handlers/catalog.js';
import { healthRoutes } from './http/handlers/health.js';
import { DEFAULT_RENDER_CACHE_BYTES, RenderCache } from './http/render-cache.js';
import { Catalog } from './catalog/catalog.js';
import { CATALOG_SCHEMAS } from './catalog/model.js';
import { CatalogQueries } from './catalog/queries.js';
import { selfNodeFields } from './catalog/self.js';
import { LivenessReconciler } from './catalog/liveness.js';
import { KV_TABLE, storedKvSchema } from './kv/entries.js';
import {
  ACL_META,
  ACL_POLICIES,
  ACL_TOKENS,
  aclMetaSchema,
  storedPolicySchema,
  storedTokenSchema,
} from './acl/model.js';
import { INTENTIONS_TABLE, storedIntentionSchema } from './connect/intentions/model.js';
import { connectCaRoutes, type ConnectCa } from './http/handlers/connect-ca.js';
import { LeafManager } from './connect/ca/leaf-manager.js';
import { LeafCacheFile } from './connect/ca/leaf-cache-file.js';
import { CA_TABLE, caTableSchema, ROOTS_TABLE, storedRootSchema } from './connect/ca/model.js';
import { ServerCa } from './connect/ca/server-ca.js';
import { PoolSigner } from './connect/ca/pool-signer.js';
import { RootsCache } from './connect/ca/roots-cache.js';
import type { StateStore, TableSchema, TableSchemas } from './state/types.js';
import { backendContact } from './state/backend-health.js';
import type { HttpServer, TransportName } from './http/server-types.js';
import { chooseTransport, startHttpServer, startHttpsServer, type TransportChoice } from './http/transport.js';
import { readTlsCredentials } from './http/tls-credentials.js';
import { DescriptorWatch } from './core/descriptor-watch.js';
import { processDescriptors } from './core/open-files.js';
import { resolveNodeId } from './node-id.js';
import { tightenDataDir } from './core/private-files.js';
import { openEmbeddedStore } from './state/embedded/index.js';
import { openClusterState, type ClusterState } from './cluster/open.js';
import { openClusterClientCa, openClusterServerCa, type ClusterCa } from './cluster/cluster-ca.js';
import { openClusterSecretParts } from './cluster/cluster-acl.js';
import { openWriteMailbox } from './cluster/cluster-writes.js';
import { serveForwardedWrites, writeForwarder } from './cluster/write-forwarding.js';
import { forwardedWriteRunner, forwardingRoutes, writeRoutes } from './http/forward.js';
import type { Route } from './http/route-types.js';
import type { CertificateAuthority } from './connect/ca/authority.js';
import { openLocalAgent, readCheckCa, type LocalAgent, type PreparedConfig } from './local/open.js';
import { AntiEntropy } from './local/anti-entropy.js';
import { ForwardedNodeSync } from './catalog/forwarded-sync.js';
import { forwardedCatalogRequests } from './http/forwarded-catalog.js';
import { agentServiceRoutes } from './http/handlers/agent-services.js';
import { agentCheckRoutes } from './http/handlers/agent-checks.js';

/** KV can be large: in a cluster it stays in etcd and each read goes there (docs/decisions.md D15). */
const READ_THROUGH_TABLES = [KV_TABLE];
/** Every table's row schema, declared beside its row type: a shared store checks what it reads and writes. */
const TABLE_SCHEMAS: TableSchemas = new Map<string, TableSchema>([
  [KV_TABLE, storedKvSchema],
  [INTENTIONS_TABLE, storedIntentionSchema],
  [ACL_TOKENS, storedTokenSchema],
  [ACL_POLICIES, storedPolicySchema],
  [ACL_META, aclMetaSchema],
  [CA_TABLE, caTableSchema],
  [ROOTS_TABLE, storedRootSchema],
  ...CATALOG_SCHEMAS,
]);

export interface AgentOptions {
  readonly log?: Logger;
  readonly clock?: Clock;
  readonly random?: () => number;
  /** Fault injection for tests: the CA and its caches read the store through this wrapper. */
  readonly wrapCaStore?: (store: StateStore) => StateStore;
  /** A store opened by the caller (an etcd store in the fail-open tests) in place of the embedded one; the agent closes it. */
  readonly store?: StateStore;
  /** Start even when recovery finds acknowledged writes gone (the -accept-state-loss flag; docs/decisions.md D17). */
  readonly acceptStateLoss?: boolean;
  /** Re-reads the config (the CLI: the same files and flags) for a reload without a config given; throws ConfigError. */
  readonly reloadConfig?: () => AgentConfig | Promise<AgentConfig>;
}

export interface Agent {
  /** The config in force: the one it started with, or the last one a reload applied. */
  readonly config: AgentConfig;
  readonly info: AgentInfo;
  /** The embedded store, or the etcd-backed one when `cluster.etcd.endpoints` is set. */
  readonly store: StateStore;
  /** Membership and etcd leadership; undefined without etcd endpoints. */
  readonly cluster: ClusterState | undefined;
  readonly acl: AclResolver;
  readonly intentions: IntentionStore;
  /** The built-in CA, its roots cache and the leaf manager; undefined with connect disabled. */
  readonly ca: ConnectCa | undefined;
  /** This agent's own services and checks (src/local/); `local.state` is what anti-entropy follows. */
  readonly local: LocalAgent;
  /** The catalog as this agent's view holds it: nodes, services and their checks (for the SDK's dialler). */
  readonly catalog: CatalogQueries;
  /**
   * The connection decision of POST /v1/agent/connect/authorize, in-process: the same checks,
   * ACL rule (service:write on Target, with `token` or the agent's default token) and reasons.
   * Throws the AgentError the endpoint would answer with (400, 403).
   */
  authorize(request: AuthorizeRequest, token?: string): AuthorizeResult;
  /**
   * Starts the HTTP API on `client_addr:ports.http` and the HTTPS API on `ports.https` (each
   * unless -1); resolves to the plain HTTP port, or the HTTPS one when plain HTTP is off.
   */
  listen(): Promise<number>;
  /** What listen() bound: the ports (undefined when off) and the plain-HTTP transport. */
  readonly listening: Listening | undefined;
  /**
   * Applies a new config (or, without one, re-reads it through `reloadConfig`): the log level, the
   * ACL default and agent tokens, the body and blocking-query limits, the leaf root-change spread
   * and the HTTPS certificate files (re-read even when their paths stay) change at once; every
   * other changed key is reported as needing a restart. A config that does not load changes
   * nothing and throws CONFIG_RELOAD_FAILED. SIGHUP and PUT /v1/agent/reload call this.
   */
  reload(next?: AgentConfig): Promise<ReloadPlan>;
  /** Graceful stop: no new connections, parked queries answered, the store flushed and closed. */
  close(): Promise<void>;
}

export interface Listening {
  readonly http: number | undefined;
  readonly https: number | undefined;
  readonly transport: TransportName;
  readonly transportReason: string;
  /** The uWS build serving plain HTTP: package, version and upstream release; absent on node:http. */
  readonly uws?: string;
}

export async function createAgent(config: AgentConfig, options: AgentOptions = {}): Promise<Agent> {
  const log = options.log ?? silentLogger;
  const clock = options.clock ?? systemClock;
  const random = options.random ?? Math.random;

  await tightenDataDir(config.dataDir, log);
  const info = agentInfo(config, await resolveNodeId(config.nodeId, config.dataDir), new Date(clock.now()));
  const clustered = options.store === undefined && config.cluster.etcd.endpoints.length > 0;
  const metrics = new Metrics(clock);
  const tables = {
    readThroughTables: READ_THROUGH_TABLES,
    tableSchemas: TABLE_SCHEMAS,
    badRows: metrics.counter(BAD_ROWS_COUNTER),
  };
  const cluster = clustered
    ? await openClusterState(
        config,
        { ...selfMember(info), server: config.server, port: config.ports.http },
        { log, clock, random, ...tables },
      )
    : undefined;
  const prometheus = config.telemetry.prometheusRetentionTimeMs > 0 ? new PrometheusMetrics(metrics) : undefined;
  const embedded =
    options.store === undefined && cluster === undefined
      ? await openEmbeddedStore({
          dataDir: config.dataDir,
          log,
          clock,
          acceptLoss: options.acceptStateLoss,
          onWalSync: prometheus?.recordWalSync,
        })
      : undefined;
  const store: StateStore = options.store ?? cluster?.store ?? (embedded as StateStore);
  const brand = brandHeaders(config.httpConfig.headerBrand, cluster?.leadership ?? backendContact(store.health, clock));
  const blocking = new BlockingQueries(store, clock, (err, path) => errorReply(err, log, path));
  metrics.gauge('svc.blocking.parked', () => blocking.parked);
  metrics.gauge('svc.state.watches', () => store.watchCount);
  metrics.gauge('svc.state.index', () => store.index);
  if (cluster !== undefined) metrics.gauge('svc.etcd.alarms', () => cluster.leadership.alarmCount);
  /** The config in force: a reload replaces it, and what reads it per use follows (src/config/reload.ts). */
  let running = config;
  const limits = {
    get defaultQueryTimeMs() {
      return running.defaultQueryTimeMs;
    },
    get maxQueryTimeMs() {
      return running.maxQueryTimeMs;
    },
  };
  const agentTokens = new AgentTokens(config.acl.tokens);
  const defaultToken = (): string | undefined => agentTokens.defaultToken();

  const resolver: AclResolver = new AclResolver(
    store,
    {
      enabled: config.acl.enabled,
      defaultPolicy: config.acl.defaultPolicy,
      downPolicy: config.acl.downPolicy,
      health: store.health,
      datacenter: config.datacenter,
    },
    clock,
  );
  metrics.gauge('svc.acl.token_cache_entries', () => resolver.cachedTokens);
  // In a cluster the view holds only hashes of token secrets; servers keep the secrets (docs/decisions.md D23).
  const secretParts =
    cluster !== undefined && config.acl.enabled
      ? openClusterSecretParts({
          etcd: cluster.connection,
          prefix: config.cluster.etcd.prefix,
          log,
          server: config.server,
        })
      : undefined;
  const secrets =
    secretParts === undefined
      ? undefined
      : secretParts.range === undefined
        ? clientSecrets(secretParts.mailbox)
        : serverSecrets(secretParts.range);
  if (secretParts?.range !== undefined && secrets !== undefined)
    serveSecretRequests(secretParts.mailbox, { secrets, store, resolve: (s) => resolver.resolve(s), log });
  const onKeepFailed = (err: unknown): void =>
    log.warn({ err }, 'the initial management token secret is not recorded with a server yet');
  // A cluster's client agent writes nothing itself (docs/decisions.md D25): the servers make the ACL
  // system's first rows, and `initial_management` is a server's key, as in Consul.
  const writesItself = cluster === undefined || config.server;
  if (config.acl.enabled && writesItself)
    await initAclState(store, { initialManagement: config.acl.tokens.initialManagement, secrets, onKeepFailed }, clock);
  else if (config.acl.enabled && config.acl.tokens.initialManagement !== undefined)
    log.warn({}, 'acl.tokens.initial_management is used by server agents only: this client agent ignores it');
  // Rows written before docs/decisions.md D23 held their secrets: a server moves them (src/acl/secret-migration.ts).
  if (secretParts?.range !== undefined && secrets !== undefined) await moveSecretsOutOfRows(store, secrets, { log });

  const intentions = new IntentionStore(store, clock);
  const catalog = new Catalog(store, config.datacenter);
  const catalogQueries = new CatalogQueries(store);
  // The agent's own node, alive, in the catalog (a lone agent waits for it before it listens). A
  // cluster's client agent writes nothing itself (docs/decisions.md D25): the servers register it.
  const selfRegistered = !writesItself
    ? Promise.resolve()
    : catalog.registerSelf(info.nodeName, selfNodeFields(info)).then(
        () => undefined,
        // A cause logged where it arose (etcd down, or out of space) is not warned of twice.
        (err: unknown) =>
          log[loggedAtSource(err) ? 'info' : 'warn']({ err }, 'the agent could not register its node in the catalog'),
      );
  // Servers turn a node's serfHealth critical once its member lease lapsed, and passing when it is back.
  const liveness =
    cluster !== undefined && config.server
      ? new LivenessReconciler({
          catalog,
          queries: catalogQueries,
          liveMembers: () =>
            new Map(
              cluster.members
                .list()
                .map((m) => [m.name, selfNodeFields({ nodeId: m.id, advertiseAddr: m.address })] as const),
            ),
          clock,
          log,
        })
      : undefined;
  if (liveness !== undefined) {
    cluster?.members.onChange(() => void liveness.schedule());
    void selfRegistered.then(() => liveness.start());
  }
  const authorize = connectAuthorizer({
    intentions,
    resolve: (secret) => resolver.resolve(secret),
    get defaultToken() {
      return defaultToken();
    },
    connectEnabled: config.connect.enabled,
  });
  const aclDomain = createAclDomain(store, clock, {
    minExpirationTtlMs: config.acl.tokenMinExpirationTtlMs,
    maxExpirationTtlMs: config.acl.tokenMaxExpirationTtlMs,
    secrets,
  });

  let ca: ConnectCa | undefined;
  let signer: PoolSigner | undefined;
  let clusterCaParts: ClusterCa | undefined;
  let leafCacheFile: LeafCacheFile | undefined;
  if (config.connect.enabled) {
    const caStore = options.wrapCaStore?.(store) ?? store;
    const pool = (signer = new PoolSigner({ priority: config.connect.signingPriority, log }));
    reportSigningPolicy(pool, config.connect.signingPriority, log);
    const caOptions = {
      store: caStore,
      signer: pool,
      clock,
      random,
      log,
      datacenter: config.datacenter,
      bootstrap: config.connect.caConfig,
      trustDomain: config.connect.trustDomain,
      metrics,
    };
    // The CA's role is chosen here, once: a lone agent's own server CA, or a cluster server's or client's.
    const openCa = async (): Promise<CertificateAuthority> => {
      if (cluster === undefined) return ServerCa.open(caOptions);
      const parts = { ...caOptions, etcd: cluster.connection, prefix: config.cluster.etcd.prefix, node: info.nodeName };
      // A server signs a client's leaf only for a caller whose token may write the service (docs/decisions.md D24).
      const authorizeLeaf = (token: string | undefined, _namespace: string, service: string): void =>
        requirePermission(resolver.resolve(token ?? ANONYMOUS_SECRET), 'service', 'write', service);
      clusterCaParts = config.server
        ? await openClusterServerCa({ ...parts, authorizeLeaf })
        : openClusterClientCa({
            ...parts,
            keys: pool,
            serverKnown: () => cluster.members.hasServer(),
          });
      return clusterCaParts.ca;
    };
    const manager = await openCa().catch(async (err: unknown) => {
      await pool.close(); // a CA that cannot start (a supplied root without its key, say) leaves no threads behind
      throw err;
    });
    const roots = new RootsCache(
      { roots: () => manager.roots(), watch: (fn) => caStore.watchOnce({ table: ROOTS_TABLE }, fn) },
      clock,
      random,
      log,
    );
    // A cluster agent keeps its leaves beside its etcd view: restarted while etcd is down, it still answers them.
    const leafFile = (leafCacheFile =
      cluster !== undefined && config.dataDir !== undefined
        ? new LeafCacheFile(config.dataDir, clock, log)
        : undefined);
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
        return running.connect.leafRootChangeSpreadMs;
      },
    });
    if (leafFile !== undefined) leaves.restore(await leafFile.load());
    ca = { manager, roots, leaves };
    metrics.gauge('svc.connect.leaf.cache_entries', () => leaves.size);
    metrics.gauge('svc.connect.ca.leaf.signing_queue', () => pool.waiting);
  }

  const local = await openLocalAgent(config, { nodeName: info.nodeName, clock, log });

  const maxBodyBytes = (): number => running.limits.httpMaxBodyBytes;
  const gate = aclGate(resolver, defaultToken);
  // The routes that change shared state: in a cluster a client agent's writes to them go through a
  // server, which runs them with its own ACLs (docs/decisions.md D25).
  const kvApi = kvRoutes({ store, blocking, brand, limits, kvMaxValueSize: () => running.kvMaxValueSize, random });
  const caApi = connectCaRoutes({ ca, blocking, brand, limits, clock, random, metrics });
  const intentionsApi = intentionsRoutes({
    intentions,
    blocking,
    brand,
    limits,
    random,
    connectEnabled: config.connect.enabled,
  });
  const aclApi = aclRoutes({ ...aclDomain, store, blocking, brand, limits, random });
  const renders = new RenderCache({ maxBytes: DEFAULT_RENDER_CACHE_BYTES });
  const catalogApi = catalogRoutes({
    catalog,
    queries: catalogQueries,
    store,
    blocking,
    brand,
    limits,
    random,
    renders,
    datacenter: config.datacenter,
  });
  const writeMailbox =
    cluster === undefined
      ? undefined
      : openWriteMailbox({ etcd: cluster.connection, prefix: config.cluster.etcd.prefix, log });
  const clusterStore = cluster?.store;
  const forward =
    writeMailbox === undefined || clusterStore === undefined || config.server
      ? undefined
      : writeForwarder({
          mailbox: writeMailbox,
          reached: (index) => clusterStore.reached(index),
          log,
          serverKnown: () => cluster?.members.hasServer() === true,
        });
  // The agent keeps its services and checks in the catalog (docs/decisions.md D26): a server or a lone
  // agent writes them itself, a client agent through a server with its agent token (docs/decisions.md D25).
  const antiEntropy = new AntiEntropy({
    state: local.state,
    writer:
      forward === undefined
        ? catalog
        : new ForwardedNodeSync(
            store,
            config.datacenter,
            forwardedCatalogRequests(forward, () => agentTokens.agentToken()),
          ),
    node: selfNodeFields(info),
    clock,
    random,
    log,
    checkUpdateIntervalMs: () => running.checkUpdateIntervalMs,
  });
  void selfRegistered.then(() => antiEntropy.start());
  const writesThrough = (group: readonly Route[]): readonly Route[] =>
    forward === undefined ? group : forwardingRoutes(group, forward, defaultToken);
  if (writeMailbox !== undefined && config.server) {
    const writes = buildApi(maxBodyBytes, gate, [
      writeRoutes([...kvApi, ...caApi, ...intentionsApi, ...catalogApi, ...aclApi]),
    ]);
    serveForwardedWrites(writeMailbox, forwardedWriteRunner(writes, log), () => store.index, log);
  }
  const routes = buildApi(maxBodyBytes, gate, [
    writesThrough(kvApi),
    writesThrough(caApi),
    authorizeRoutes({
      intentions,
      connectEnabled: config.connect.enabled,
      cacheMaxEntries: config.cache.maxEntries,
      metrics,
    }),
    writesThrough(intentionsApi),
    writesThrough(catalogApi),
    healthRoutes({ queries: catalogQueries, store, blocking, brand, limits, random, renders }),
    writesThrough(aclApi),
    agentTokenRoutes({ tokens: agentTokens, nodeName: info.nodeName, log }),
    agentServiceRoutes({ local, brand, datacenter: config.datacenter, blocking, limits, random }),
    agentCheckRoutes({ local, brand }),
    agentRoutes({
      metrics,
      prometheus,
      info,
      brand,
      config: () => running,
      reload: async () => {
        await reload();
      },
      cluster: cluster?.routes,
      stats: () => ({
        agent: { parked_queries: String(blocking.parked), watches: String(store.watchCount) },
        raft: { applied_index: String(store.index), commits: String(store.stats.commits) },
        runtime: { arch: process.arch, os: process.platform, version: process.version },
        ...(listening === undefined
          ? {}
          : { transport: { name: listening.transport, reason: listening.transportReason, uws: listening.uws ?? '' } }),
      }),
    }),
  ]);

  const servers: HttpServer[] = [];
  let httpsServer: HttpServer | undefined;
  let listening: Listening | undefined;
  let descriptorWatch: DescriptorWatch | undefined;
  let closing: Promise<void> | undefined;

  const startListeners = async (): Promise<Listening> => {
    // No plain HTTP listener: node:https serves the one there is, and uWS is never loaded.
    const choice: TransportChoice =
      config.ports.http === -1
        ? { name: 'node', reason: 'ports.http is -1: HTTPS only, always node:https' }
        : chooseTransport(config.httpConfig.transport, config.clientAddr);
    if (choice.warning !== undefined) log.warn({ transport: choice.name }, choice.warning);
    const serverOptions = {
      host: config.clientAddr,
      routes,
      commonHeaders: commonHeaders(config, brand),
      log,
      recordRequest: prometheus?.recordRequest,
    };
    const credentials = config.ports.https === -1 ? undefined : await readTlsCredentials(config.tls);
    try {
      const http =
        config.ports.http === -1
          ? undefined
          : await startHttpServer(choice.name, { ...serverOptions, port: config.ports.http });
      if (http) servers.push(http);
      const https =
        credentials === undefined
          ? undefined
          : await startHttpsServer({ ...serverOptions, port: config.ports.https }, credentials);
      if (https) servers.push((httpsServer = https));
      const uws = choice.uws === undefined ? {} : { uws: choice.uws };
      return { http: http?.port, https: https?.port, transport: choice.name, transportReason: choice.reason, ...uws };
    } catch (err) {
      for (const server of servers.splice(0)) server.close();
      throw err;
    }
  };

  let reloading = Promise.resolve<unknown>(undefined);
  const reload = (given?: AgentConfig): Promise<ReloadPlan> => {
    const run = reloading.then(async () => {
      let next: AgentConfig;
      let credentials: Awaited<ReturnType<typeof readTlsCredentials>> | undefined;
      let registrations: PreparedConfig;
      let checkCa: string | undefined;
      try {
        if (given === undefined && options.reloadConfig === undefined) throw agentError('CONFIG_RELOAD_UNAVAILABLE');
        next = given ?? (await (options.reloadConfig as () => AgentConfig | Promise<AgentConfig>)());
        // Everything that can fail is read before anything changes.
        if (httpsServer !== undefined && next.ports.https !== -1) credentials = await readTlsCredentials(next.tls);
        registrations = local.prepareConfig(next.registrations);
        // Read again whether or not its path changed: the file may have been replaced (Consul re-reads it too).
        checkCa = await readCheckCa(next.tls.caFile);
      } catch (err) {
        const failure =
          isAgentError(err) && err.code === 'CONFIG_RELOAD_UNAVAILABLE'
            ? err
            : agentError('CONFIG_RELOAD_FAILED', {
                detail: isConfigError(err) || isAgentError(err) ? err.message : String(err),
                cause: err,
              });
        log.error({ err: { message: failure.message } }, 'config reload failed; the running config stays');
        throw failure;
      }
      // Applied: what changed since the last reload; pending: what differs from what the process started with.
      const plan: ReloadPlan = {
        applied: planReload(running, next).applied,
        restartNeeded: planReload(config, next).restartNeeded,
      };
      running = next;
      agentTokens.load(next.acl.tokens);
      if ('setLevel' in log) (log as RootLogger).setLevel(next.logLevel);
      if (credentials !== undefined) httpsServer?.replaceCredentials?.(credentials);
      local.applyConfig(registrations);
      local.trustCheckCa(checkCa);
      log.info(
        { applied: plan.applied, restartNeeded: plan.restartNeeded, tlsReloaded: credentials !== undefined },
        'config reloaded',
      );
      const [caKeys, restartKeys] = partition(plan.restartNeeded, (key) => key.startsWith('connect.ca_config.'));
      if (restartKeys.length > 0)
        log.warn({ keys: restartKeys }, 'config reloaded: these changes take effect after a restart');
      // As in Consul, the file's ca_config only bootstraps the CA; a running CA changes through its API.
      if (caKeys.length > 0)
        log.warn(
          { keys: caKeys },
          'config reloaded: connect.ca_config only bootstraps the CA; change a running CA with PUT /v1/connect/ca/configuration (svc-agent connect ca set-config)',
        );
      return plan;
    });
    reloading = run.catch(() => undefined);
    return run;
  };

  return {
    get config() {
      return running;
    },
    reload,
    info,
    store,
    cluster,
    acl: resolver,
    intentions,
    authorize,
    ca,
    local,
    catalog: catalogQueries,
    get listening() {
      return listening;
    },
    async listen() {
      if (listening === undefined) {
        if (cluster === undefined) await selfRegistered;
        listening = await startListeners();
        const bound = [...servers];
        descriptorWatch = new DescriptorWatch(processDescriptors, log, (out) =>
          bound.forEach((s) => s.outOfDescriptors(out)),
        ).start();
        await cluster?.listening((listening.http ?? listening.https) as number);
      }
      return (listening.http ?? listening.https) as number;
    },
    close() {
      closing ??= (async () => {
        descriptorWatch?.stop();
        for (const server of servers) server.close();
        blocking.releaseAll();
        liveness?.close();
        await antiEntropy.close();
        await local.close();
        intentions.close();
        ca?.leaves.close();
        if (ca !== undefined) await leafCacheFile?.close(ca.leaves.held());
        ca?.roots.close();
        ca?.manager.close();
        clusterCaParts?.close();
        secretParts?.close();
        writeMailbox?.close();
        // Let the released answers (written from promise callbacks) reach their sockets.
        await new Promise((resolve) => setImmediate(resolve));
        await signer?.close();
        await cluster?.close(); // the member record goes first: other agents stop listing this one at once
        await store.close();
      })();
      return closing;
    },
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

function partition<T>(items: readonly T[], test: (item: T) => boolean): [T[], T[]] {
  const yes: T[] = [];
  const no: T[] = [];
  for (const item of items) (test(item) ? yes : no).push(item);
  return [yes, no];
}
