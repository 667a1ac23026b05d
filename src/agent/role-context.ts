// What every role is opened with: the config, the agent's identity, and the injected clock,
// randomness and log, plus the store's row schemas and counters.
import type { AgentInfo } from '../agent-info.js';
import type { AgentConfig } from '../config/types.js';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import type { Metrics } from '../core/metrics.js';
import type { PrometheusMetrics } from '../core/prometheus.js';
import type { StateStore } from '../state/types.js';

export interface RoleContext {
  readonly config: AgentConfig;
  readonly info: AgentInfo;
  readonly log: Logger;
  readonly clock: Clock;
  readonly random: () => number;
  readonly metrics: Metrics;
  readonly prometheus: PrometheusMetrics | undefined;
  /** A store opened by the caller in place of the embedded one (the agent closes it). */
  readonly store: StateStore | undefined;
  /** Start even when recovery finds acknowledged writes gone (docs/decisions.md D17). */
  readonly acceptStateLoss: boolean | undefined;
}
