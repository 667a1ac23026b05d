// The composition root: builds the agent's components from its config and wires them together.
// The role (lone, cluster server, cluster client) is chosen once (choose-role.ts); its file wires
// what differs, and this one what every agent has. No logic lives here.
import { EventFeed } from '../events/event-feed.js';
import { agentInfo, buildVersion } from '../agent-info.js';
import { AgentTokens, openAgentTokenFile } from '../acl/agent-tokens.js';
import { createAclDomain } from '../acl/domain.js';
import { initAclState } from '../acl/init.js';
import { AclResolver } from '../acl/resolver.js';
import { Catalog } from '../catalog/catalog.js';
import { consulService } from '../catalog/consul-service.js';
import { CatalogQueries } from '../catalog/queries.js';
import { selfNodeFields } from '../catalog/self.js';
import type { AgentConfig } from '../config/types.js';
import { systemClock } from '../core/clock.js';
import { loggedAtSource } from '../core/errors.js';
import { silentLogger, type Logger, type LogTap } from '../core/log.js';
import { Metrics } from '../core/metrics.js';
import { tightenDataDir } from '../core/private-files.js';
import { PrometheusMetrics } from '../core/prometheus.js';
import { connectAuthorizer } from '../connect/authorizer.js';
import { IntentionStore } from '../connect/intentions/store.js';
import { BlockingQueries } from '../http/blocking.js';
import { brandHeaders } from '../http/api.js';
import { errorReply } from '../http/dispatch.js';
import { LogMonitors } from '../http/handlers/agent-monitor.js';
import { AntiEntropy } from '../local/anti-entropy.js';
import { openLocalAgent } from '../local/open.js';
import { resolveNodeId } from '../node-id.js';
import { openRole } from './choose-role.js';
import { openConnect, type ConnectParts } from './connect.js';
import { startListeners, type Listeners } from './listeners.js';
import { reloader } from './reload.js';
import { openSessions } from './sessions.js';
import { agentApi } from './routes.js';
import type { Agent, AgentOptions } from './types.js';

export type { Agent, AgentOptions } from './types.js';

export async function createAgent(config: AgentConfig, options: AgentOptions = {}): Promise<Agent> {
  const log = options.log ?? silentLogger;
  const clock = options.clock ?? systemClock;
  const random = options.random ?? Math.random;

  await tightenDataDir(config.dataDir, log);
  const info = agentInfo(config, await resolveNodeId(config.nodeId, config.dataDir), new Date(clock.now()));
  const metrics = new Metrics(clock);
  const prometheus = config.telemetry.prometheusRetentionTimeMs > 0 ? new PrometheusMetrics(metrics) : undefined;
  const role = await openRole({
    config,
    info,
    log,
    clock,
    random,
    metrics,
    prometheus,
    store: options.store,
    acceptStateLoss: options.acceptStateLoss,
  });
  const { store, cluster } = role;
  const brand = brandHeaders(config.httpConfig.headerBrand, role.contact);
  const blocking = new BlockingQueries(store, clock, (err, path) => errorReply(err, log, path));
  metrics.gauge('svc.blocking.parked', () => blocking.parked);
  metrics.gauge('svc.state.watches', () => store.watchCount);
  metrics.gauge('svc.state.index', () => store.index);
  /** The config in force: a reload replaces it, and what reads it per use follows (src/config/reload.ts). */
  let running = config;
  const tokenFile =
    config.acl.enableTokenPersistence && config.dataDir !== undefined
      ? await openAgentTokenFile(config.dataDir, log)
      : undefined;
  const agentTokens = new AgentTokens(config.acl.tokens, tokenFile, log);
  const defaultToken = (): string | undefined => agentTokens.defaultToken();

  const resolver: AclResolver = new AclResolver(
    store,
    {
      enabled: config.acl.enabled,
      defaultPolicy: config.acl.defaultPolicy,
      downPolicy: config.acl.downPolicy,
      health: store.health,
      datacenter: config.datacenter,
      localTokens: (secret) =>
        agentTokens.recoveryIdentity(secret, { nodeName: info.nodeName, datacenter: config.datacenter }),
    },
    clock,
  );
  metrics.gauge('svc.acl.token_cache_entries', () => resolver.cachedTokens);
  const secrets = role.secrets;
  const onKeepFailed = (err: unknown): void =>
    log.warn({ err }, 'the initial management token secret is not recorded with a server yet');
  if (config.acl.enabled)
    await role.setUpAcl(
      () =>
        initAclState(store, { initialManagement: config.acl.tokens.initialManagement, secrets, onKeepFailed }, clock),
      (secret) => resolver.resolve(secret),
    );

  const intentions = new IntentionStore(store, clock);
  const catalog = new Catalog(store, config.datacenter);
  const catalogQueries = new CatalogQueries(store);
  // The agent's own node, alive, in the catalog (a lone agent waits for it before it listens); only
  // an agent that is a server (a lone one, or a cluster's) registers it, with its `consul` service.
  const registerOwnNode = (port: number) => () =>
    catalog
      .registerSelf(info.nodeName, selfNodeFields(info), consulService(port, buildVersion(info.version)))
      .then(() => undefined);
  const couldNotRegister = (err: unknown): void =>
    // A cause logged where it arose (etcd down, or out of space) is not warned of twice.
    log[loggedAtSource(err) ? 'info' : 'warn']({ err }, 'the agent could not register its node in the catalog');
  const selfRegistered = role.registerSelf(registerOwnNode(config.ports.http)).catch(couldNotRegister);
  role.maintainCatalog(catalog, catalogQueries, selfRegistered);
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

  const connect: ConnectParts | undefined = config.connect.enabled
    ? await openConnect({
        config,
        role,
        store: options.wrapCaStore?.(store) ?? store,
        resolver,
        clock,
        random,
        log,
        metrics,
        rootChangeSpreadMs: () => running.connect.leafRootChangeSpreadMs,
      })
    : undefined;
  const ca = connect?.ca;

  const local = await openLocalAgent(config, { nodeName: info.nodeName, clock, log });
  // The agent keeps its services and checks in the catalog (docs/decisions.md D26).
  const antiEntropy = new AntiEntropy({
    state: local.state,
    writer: role.catalogWriter(catalog, (serviceId) =>
      agentTokens.serviceSyncToken(serviceId !== undefined && local.state.service(serviceId)?.source === 'config'),
    ),
    node: selfNodeFields(info),
    clock,
    random,
    log,
    checkUpdateIntervalMs: () => running.checkUpdateIntervalMs,
  });
  void selfRegistered.then(() => antiEntropy.start());
  const events = new EventFeed(store, {
    nodeName: info.nodeName,
    services: () => [...local.state.services()].map((s) => ({ name: s.service, tags: s.tags })),
  });

  const sessions = openSessions(role, { clock, log, nodeName: info.nodeName, selfRegistered });
  // createLogger's root is a tap itself (as reload.ts finds its setLevel).
  const monitors = new LogMonitors(options.logTap ?? ('tap' in log ? (log as Logger & LogTap) : undefined), log);

  // PUT /v1/agent/leave: the node's sync stops first, so that nothing registers it again while the
  // servers deregister it (docs/decisions.md#departed-members); the caller stops the agent once answered.
  let leaving: Promise<void> | undefined;
  const leave = (): Promise<void> =>
    (leaving ??= (async () => {
      await antiEntropy.close();
      await role.leave();
      log.info({}, 'Graceful leave complete');
    })().catch((err: unknown) => {
      leaving = undefined; // a later leave tries again
      throw err;
    }));
  let announceLeft = (): void => undefined;
  const left = new Promise<void>((resolve) => (announceLeft = resolve));

  let listeners: Listeners | undefined;
  let closing: Promise<void> | undefined;
  const reload = reloader({
    started: config,
    running: () => running,
    apply: (next) => (running = next),
    reloadConfig: options.reloadConfig,
    agentTokens,
    local,
    listeners: () => listeners,
    log,
  });
  const routes = agentApi({
    role,
    info,
    running: () => running,
    resolver,
    agentTokens,
    aclDomain,
    intentions,
    catalog,
    catalogQueries,
    ca,
    local,
    events,
    sessions,
    monitors,
    leave,
    // After the answer is written (from the promise's callback): the caller then stops the agent.
    leaveAnswered: () => void setImmediate(announceLeft),
    blocking,
    brand,
    clock,
    log,
    random,
    metrics,
    prometheus,
    reload: async () => {
      await reload();
    },
    transportStats: () => {
      const l = listeners?.listening;
      return l === undefined ? undefined : { name: l.transport, reason: l.transportReason, uws: l.uws ?? '' };
    },
  });

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
      return listeners?.listening;
    },
    left,
    async listen() {
      if (listeners === undefined) {
        await role.readyToListen(selfRegistered);
        listeners = await startListeners({ config, routes, brand, log, prometheus });
        const port = (listeners.listening.http ?? listeners.listening.https) as number;
        await role.listening(port);
        // The `consul` service's port is the one bound.
        if (port !== config.ports.http)
          void selfRegistered.then(() => role.registerSelf(registerOwnNode(port))).catch(couldNotRegister);
      }
      return (listeners.listening.http ?? listeners.listening.https) as number;
    },
    close() {
      closing ??= (async () => {
        listeners?.close();
        monitors.close();
        blocking.releaseAll();
        events.close();
        sessions.close();
        await antiEntropy.close();
        await local.close();
        intentions.close();
        await connect?.close();
        role.closeParts();
        // Let the released answers (written from promise callbacks) reach their sockets.
        await new Promise((resolve) => setImmediate(resolve));
        await connect?.closeSigner();
        await role.closeState();
      })();
      return closing;
    },
  };
}
