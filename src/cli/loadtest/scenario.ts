// What every scenario of `svc-agent loadtest` gets (the target, the common flags, a way to stop)
// and what it hands back for the result (src/cli/loadtest/result.ts).
import type { ApiClient, Target } from '../client/api.js';
import type { FlagSpecs } from '../client/flags.js';
import type { Aggregate } from '../../loadgen/aggregate.js';
import type { SecondPoint } from '../../loadgen/types.js';

export interface CommonSettings {
  readonly measureMs: number;
  readonly warmupMs: number;
  readonly connections: number;
  /** Open loop, requests per second; undefined for closed loop. */
  readonly rate: number | undefined;
  readonly threads: number;
}

export interface RunContext {
  readonly api: ApiClient;
  readonly targets: readonly Target[];
  /** Headers every request of the run carries: the token, in the target's header brand. */
  readonly headers: Readonly<Record<string, string>>;
  /** `X-Svc-Index` or `X-Consul-Index`, as the target spells the blocking-query index. */
  readonly indexHeader: string;
  /** The run's names on the target start with it (`lt-1a2b3c`). */
  readonly prefix: string;
  readonly flags: Readonly<Record<string, unknown>>;
  readonly common: CommonSettings;
  /** Aborted by Ctrl-C: scenarios stop sending and report what they measured. */
  readonly stop: AbortSignal;
  /** One progress point per measured second. */
  progress(point: SecondPoint): void;
  /** A line about what the run is doing (seeding, waiting for leaves...). */
  say(line: string): void;
}

/** The measured part: latencies and counts merged from every generator thread or loop. */
export interface Measured {
  readonly aggregate: Aggregate;
  /** 2xx answers during the warm-up (the target's counters see those too). */
  readonly warmupOk: number;
  readonly elapsedMs: number;
  /** The generator's CPU over the run, 100 per busy thread. */
  readonly cpuPct: number;
  readonly threads: number;
  /** The generator was the limit: its threads (or, on the main thread, its event loop) busy over 90% of the time. */
  readonly clientBusy?: boolean;
  /** Requests sent that carried a send time (kv writes), warm-up included. */
  readonly stampedSent?: number;
}

/** The run's count beside the target's own, read from GET /v1/agent/metrics before and after. */
export interface CrossCheck {
  /** What the target's number is: `svc.connect.authorize.allowed + denied`, say. */
  readonly counter: string;
  readonly generatorCounted: number;
  /** null when the target has no such metric (not a svc-agent, or metrics withheld). */
  readonly targetCounted: number | null;
  readonly agrees: boolean | null;
}

/** How long until every party saw a change: one CDF in the report. */
export interface Propagation {
  readonly name: string;
  /** Parties that saw it, and those that had not when the run gave up waiting. */
  readonly seen: number;
  readonly missing: number;
  /** Milliseconds until each party saw it, sorted. */
  readonly samplesMs: readonly number[];
  /** Answers with the old state to requests sent after the change was acknowledged. */
  readonly staleAfterAck?: number;
}

export interface ScenarioReport {
  readonly measured: Measured;
  /** The scenario's own settings (seeded intentions, proxies...), merged into the result's `settings`. */
  readonly settings: Readonly<Record<string, unknown>>;
  readonly crossCheck: CrossCheck | null;
  readonly propagation?: readonly Propagation[];
  /** Extra summary rows: [label, text]. */
  readonly facts?: readonly (readonly [string, string])[];
}

export interface Scenario {
  readonly synopsis: string;
  readonly flags: FlagSpecs;
  /** What one counted operation is, for the throughput line (`req/s`, `connections/s`, `leaves/s`). */
  readonly unit: string;
  run(ctx: RunContext): Promise<ScenarioReport>;
}
