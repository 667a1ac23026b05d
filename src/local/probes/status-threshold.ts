// Consul's StatusHandler: SuccessBeforePassing consecutive successes before a check reports
// passing (or warning), FailuresBeforeWarning / FailuresBeforeCritical consecutive failures
// before it reports warning / critical. Until a threshold is reached the check keeps its status.
import type { HealthStatus } from '../model.js';

export interface Thresholds {
  readonly successBeforePassing: number;
  readonly failuresBeforeWarning: number;
  readonly failuresBeforeCritical: number;
}

export class StatusThreshold {
  private successes = 0;
  private failures = 0;

  constructor(private readonly limits: Thresholds) {}

  /** The status to report for a probe's result, or undefined to keep the current one. */
  next(result: HealthStatus): HealthStatus | undefined {
    if (result === 'passing' || result === 'warning') {
      this.successes++;
      this.failures = 0;
      return this.successes >= this.limits.successBeforePassing ? result : undefined;
    }
    this.successes = 0;
    this.failures++;
    if (this.failures >= this.limits.failuresBeforeCritical) return 'critical';
    // Consul: FailuresBeforeWarning defaults to FailuresBeforeCritical.
    const warnAt =
      this.limits.failuresBeforeWarning > 0 ? this.limits.failuresBeforeWarning : this.limits.failuresBeforeCritical;
    if (this.failures >= warnAt) return 'warning';
    return undefined;
  }
}
