// Builds the agent's local services and checks from its config: the state, the check-runner
// thread, the supervisor, the data_dir file (its registrations restored first), and the
// services and checks the config files declare.
import { readFile } from 'node:fs/promises';
import type { AgentConfig } from '../config/types.js';
import type { Clock } from '../core/clock.js';
import { describeFsError } from '../core/error-text.js';
import { agentError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { CheckSupervisor } from './check-supervisor.js';
import { LocalAgent } from './local-agent.js';
import { LocalState } from './local-state.js';
import { LocalPersistence } from './persistence.js';
import { ThreadProbeRunner } from './thread-runner.js';

export type { LocalAgent, PreparedConfig } from './local-agent.js';

export interface LocalAgentParts {
  readonly nodeName: string;
  readonly clock: Clock;
  readonly log: Logger;
}

export async function openLocalAgent(config: AgentConfig, parts: LocalAgentParts): Promise<LocalAgent> {
  const state = new LocalState(parts.nodeName, config.sidecarPorts);
  const persistence = config.dataDir === undefined ? undefined : new LocalPersistence(config.dataDir, parts.log);
  await persistence?.load(state);
  persistence?.follow(state);
  // Consul logs each check that changes status; tests and operators follow it.
  state.onChange((event) => {
    if (event.type === 'check-status')
      parts.log.info(
        { checkId: event.check.checkId, status: event.check.status, previous: event.previous },
        'check status changed',
      );
  });
  const runner = new ThreadProbeRunner(parts.log, { caPem: await readCheckCa(config.tls.caFile) });
  const supervisor = new CheckSupervisor(state, {
    clock: parts.clock,
    runner,
    outputMaxSize: config.checkOutputMaxSize,
  });
  const local = new LocalAgent(state, supervisor, persistence, runner);
  try {
    local.applyConfig(local.prepareConfig(config.registrations));
  } catch (err) {
    await local.close();
    throw err;
  }
  return local;
}

/**
 * The agent's CA file, which HTTP and gRPC checks verify TLS against (Consul's
 * OutgoingTLSConfigForCheck); read at start and again on every reload, as Consul does.
 */
export async function readCheckCa(path: string | undefined): Promise<string | undefined> {
  if (path === undefined) return undefined;
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw agentError('TLS_FILES_INVALID', { detail: `tls.defaults.ca_file ${path}: ${describeFsError(err)}` });
  }
}
