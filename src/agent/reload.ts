// A config reload (SIGHUP, PUT /v1/agent/reload): everything that can fail is read first, then the
// new config is applied in one step: what reads the config per use follows it, and the parts that
// hold a copy (agent tokens, log level, HTTPS certificates, registrations, the check CA) take it.
import type { AgentTokens } from '../acl/agent-tokens.js';
import { isConfigError } from '../config/errors.js';
import { planReload, type ReloadPlan } from '../config/reload.js';
import type { AgentConfig } from '../config/types.js';
import { agentError, isAgentError } from '../core/errors.js';
import type { Logger, RootLogger } from '../core/log.js';
import { readTlsCredentials, type TlsServerCredentials } from '../http/tls-credentials.js';
import { readCheckCa, type LocalAgent, type PreparedConfig } from '../local/open.js';
import type { Listeners } from './listeners.js';

export interface ReloadDeps {
  /** The config the process started with: what differs from it needs a restart. */
  readonly started: AgentConfig;
  readonly running: () => AgentConfig;
  readonly apply: (next: AgentConfig) => void;
  /** Re-reads the config (the CLI: the same files and flags); undefined when the caller gave none. */
  readonly reloadConfig: (() => AgentConfig | Promise<AgentConfig>) | undefined;
  readonly agentTokens: AgentTokens;
  readonly local: LocalAgent;
  readonly listeners: () => Listeners | undefined;
  readonly log: Logger;
}

/** Reloads one at a time, in the order asked; a config that does not load changes nothing. */
export function reloader(d: ReloadDeps): (given?: AgentConfig) => Promise<ReloadPlan> {
  const { log } = d;
  let reloading = Promise.resolve<unknown>(undefined);
  return (given) => {
    const run = reloading.then(async () => {
      let next: AgentConfig;
      let credentials: TlsServerCredentials | undefined;
      let registrations: PreparedConfig;
      let checkCa: string | undefined;
      const listeners = d.listeners();
      try {
        if (given === undefined && d.reloadConfig === undefined) throw agentError('CONFIG_RELOAD_UNAVAILABLE');
        next = given ?? (await (d.reloadConfig as () => AgentConfig | Promise<AgentConfig>)());
        if (listeners?.https === true && next.ports.https !== -1) credentials = await readTlsCredentials(next.tls);
        registrations = d.local.prepareConfig(next.registrations);
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
        applied: planReload(d.running(), next).applied,
        restartNeeded: planReload(d.started, next).restartNeeded,
      };
      d.apply(next);
      d.agentTokens.load(next.acl.tokens);
      if ('setLevel' in log) (log as RootLogger).setLevel(next.logLevel);
      if (credentials !== undefined) listeners?.replaceCredentials?.(credentials);
      d.local.applyConfig(registrations);
      d.local.trustCheckCa(checkCa);
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
}

function partition<T>(items: readonly T[], test: (item: T) => boolean): [T[], T[]] {
  const yes: T[] = [];
  const no: T[] = [];
  for (const item of items) (test(item) ? yes : no).push(item);
  return [yes, no];
}
