// The composition root: builds the agent's components from its config and wires them together.
// No logic lives here. The same object serves the CLI (with HTTP) and library use (without).
import { agentInfo, type AgentInfo } from './agent-info.js';
import type { AgentConfig } from './config/types.js';
import { systemClock, type Clock } from './core/clock.js';
import { silentLogger, type Logger } from './core/log.js';
import { createAclDomain } from './acl/domain.js';
import { initAclState } from './acl/init.js';
import { AclResolver } from './acl/resolver.js';
import { aclGate, buildApi, brandHeaders, commonHeaders } from './http/api.js';
import { BlockingQueries } from './http/blocking.js';
import { aclRoutes } from './http/handlers/acl.js';
import { agentRoutes } from './http/handlers/agent.js';
import { kvRoutes } from './http/handlers/kv.js';
import { startHttpServer, type HttpServer } from './http/uws-server.js';
import { resolveNodeId } from './node-id.js';
import { openEmbeddedStore, type EmbeddedStore } from './state/embedded-store.js';

export interface AgentOptions {
  readonly log?: Logger;
  readonly clock?: Clock;
  readonly random?: () => number;
}

export interface Agent {
  readonly config: AgentConfig;
  readonly info: AgentInfo;
  readonly store: EmbeddedStore;
  readonly acl: AclResolver;
  /** Starts the HTTP API on `client_addr:ports.http`; resolves to the bound port. */
  listen(): Promise<number>;
  /** Graceful stop: no new connections, parked queries answered, the store flushed and closed. */
  close(): Promise<void>;
}

export async function createAgent(config: AgentConfig, options: AgentOptions = {}): Promise<Agent> {
  const log = options.log ?? silentLogger;
  const clock = options.clock ?? systemClock;
  const random = options.random ?? Math.random;

  const store = await openEmbeddedStore({ dataDir: config.dataDir, log, clock });
  const info = agentInfo(config, await resolveNodeId(config.nodeId, config.dataDir), new Date(clock.now()));
  const brand = brandHeaders(config.httpConfig.headerBrand);
  const blocking = new BlockingQueries(store, clock);
  const limits = { defaultQueryTimeMs: config.defaultQueryTimeMs, maxQueryTimeMs: config.maxQueryTimeMs };

  const resolver = new AclResolver(
    store,
    { enabled: config.acl.enabled, defaultPolicy: config.acl.defaultPolicy, datacenter: config.datacenter },
    clock,
  );
  if (config.acl.enabled) await initAclState(store, { initialManagement: config.acl.tokens.initialManagement }, clock);
  const aclDomain = createAclDomain(store, clock, {
    minExpirationTtlMs: config.acl.tokenMinExpirationTtlMs,
    maxExpirationTtlMs: config.acl.tokenMaxExpirationTtlMs,
  });

  const routes = buildApi(config, aclGate(resolver, config.acl.tokens.default), [
    kvRoutes({ store, blocking, brand, limits, kvMaxValueSize: config.kvMaxValueSize, random }),
    aclRoutes({ ...aclDomain, store, blocking, brand, limits, random }),
    agentRoutes({
      info,
      brand,
      config,
      stats: () => ({
        agent: { parked_queries: String(blocking.parked), watches: String(store.watchCount) },
        raft: { applied_index: String(store.index), commits: String(store.stats.commits) },
        runtime: { arch: process.arch, os: process.platform, version: process.version },
      }),
    }),
  ]);

  let server: HttpServer | undefined;
  let closing: Promise<void> | undefined;

  return {
    config,
    info,
    store,
    acl: resolver,
    async listen() {
      if (server) return server.port;
      server = await startHttpServer({
        host: config.clientAddr,
        port: config.ports.http,
        routes,
        commonHeaders: commonHeaders(config, brand),
        log,
      });
      return server.port;
    },
    close() {
      closing ??= (async () => {
        server?.close();
        blocking.releaseAll();
        // Let the released answers (written from promise callbacks) reach their sockets.
        await new Promise((resolve) => setImmediate(resolve));
        await store.close();
      })();
      return closing;
    },
  };
}
