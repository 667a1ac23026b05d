// The agent as its callers see it: the CLI (with HTTP) and library users (without).
import type { AgentInfo } from '../agent-info.js';
import type { AclResolver } from '../acl/resolver.js';
import type { CatalogQueries } from '../catalog/queries.js';
import type { ClusterState } from '../cluster/open.js';
import type { ReloadPlan } from '../config/reload.js';
import type { AgentConfig } from '../config/types.js';
import type { Clock } from '../core/clock.js';
import type { Logger, LogTap } from '../core/log.js';
import type { AuthorizeRequest, AuthorizeResult } from '../connect/authorize.js';
import type { IntentionStore } from '../connect/intentions/store.js';
import type { ConnectCa } from '../http/handlers/connect-ca.js';
import type { LocalAgent } from '../local/open.js';
import type { StateStore } from '../state/types.js';
import type { Listening } from './listeners.js';

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
  /**
   * The lines GET /v1/agent/monitor streams; by default `log` when it is createLogger's root (a tap
   * itself). Without one a monitor stays open and empty: another logger is not read back.
   */
  readonly logTap?: LogTap;
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
  /**
   * Resolves once PUT /v1/agent/leave was answered: the agent left its cluster (docs/decisions.md#departed-members)
   * and its owner stops it (close()), as Consul's agent shuts down; the CLI then exits 0.
   */
  readonly left: Promise<void>;
  /** Graceful stop: no new connections, parked queries answered, the store flushed and closed. */
  close(): Promise<void>;
}
