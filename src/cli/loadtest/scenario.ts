// What every scenario of `svc-agent loadtest` gets (the target, the common flags, a way to stop)
// and what it hands back for the result (src/cli/loadtest/result.ts).
import type { ApiClient, Target } from '../client/api.js';
import type { FlagSpecs } from '../client/flags.js';
import type { Aggregate } from '../../loadgen/aggregate.js';
import type { Stage } from '../../loadgen/pacer.js';
import type { SecondPoint } from '../../loadgen/types.js';
import type { Threshold } from './thresholds.js';

export interface CommonSettings {
  readonly measureMs: number;
  readonly warmupMs: number;
  readonly connections: number;
  /** Open loop, requests per second (-rate; with -find-max, the first step's); undefined for closed loop or -stages. */
  readonly rate: number | undefined;
  /** Open loop's schedule: -rate over -duration as one stage, or -stages; undefined for closed loop. */
  readonly stages: readonly Stage[] | undefined;
  readonly threads: number;
  readonly thresholds: readonly Threshold[];
  /** -find-max: raise the rate step by step until a threshold fails. */
  readonly findMax: boolean;
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
  /** The measured time's length: its schedule (cut short by Ctrl-C), or a main-thread tally's. */
  readonly elapsedMs: number;
  /** The generator's time from its threads' start to the last answer (the CPU share's base); default elapsedMs. */
  readonly wallMs?: number;
  /** The generator process's CPU over its wall time, in percent of one core (100 per busy core). */
  readonly cpuPct: number;
  readonly threads: number;
  /** The generator was the limit: its threads (or, on the main thread, its event loop) busy over 90% of the time. */
  readonly clientBusy?: boolean;
  /** Requests sent that carried a send time (kv writes), warm-up included. */
  readonly stampedSent?: number;
  /** A rate asked without stages (proxies' inbound calls); null otherwise: stages say what was asked (rates.ts). */
  readonly askedRps: number | null;
  /** The open loop's stages, for each one's share of the result; null without -stages or -rate. */
  readonly stages?: readonly Stage[] | null;
  readonly findMax?: FindMax;
}

export interface FindMaxStep {
  readonly askedRps: number;
  readonly durationMs: number;
  /** A step confirming the best rate held (twice as long). */
  readonly confirm: boolean;
  readonly achievedRps: number;
  readonly p99Us: number;
  readonly errors: number;
  readonly dropped: number;
  readonly held: boolean;
  /** The thresholds the step did not hold. */
  readonly failed: readonly string[];
  /** The generator's threads were busy through the step. */
  readonly clientBusy: boolean;
}

export interface FindMax {
  /** The rate a confirming step held; null when none did. */
  readonly highestHeldRps: number | null;
  readonly criteria: readonly string[];
  /** Each search step's length (a confirming step's is twice it), and the shortest the tool runs. */
  readonly stepMs: number;
  readonly minStepMs: number;
  /** The confirming step's figures. */
  readonly confirmed: {
    readonly askedRps: number;
    readonly achievedRps: number;
    readonly p99Us: number;
    readonly durationMs: number;
  } | null;
  /** The achieved rates of the steps asked near the answer (within 1.25x either way). */
  readonly spread: { readonly steps: number; readonly lowRps: number; readonly highRps: number } | null;
  /** A step failed while the generator's threads were busy: the client, not the target, was the limit. */
  readonly clientLimited: boolean;
  readonly steps: readonly FindMaxStep[];
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
  /** What the times include (`the proxies' call cadence (1/inbound-rate)`), said beside them. */
  readonly includes?: string;
  /** The agent's own part: from the write's ack to the first answer with the new state to a call made after it. */
  readonly agentMs?: number | null;
}

/** A moment of the run drawn on every timeline: an intention change, a CA rotation. */
export interface Marker {
  readonly label: string;
  /** Seconds since the measured time began. */
  readonly t: number;
}

export interface ScenarioReport {
  readonly measured: Measured;
  /** The scenario's own settings (seeded intentions, proxies...), merged into the result's `settings`. */
  readonly settings: Readonly<Record<string, unknown>>;
  readonly crossCheck: CrossCheck | null;
  readonly propagation?: readonly Propagation[];
  readonly markers?: readonly Marker[];
  /** Extra summary rows: [label, value]; numbers stay numbers in the JSON. */
  readonly facts?: readonly (readonly [string, number | string | null])[];
}

export interface Scenario {
  readonly synopsis: string;
  readonly flags: FlagSpecs;
  /** What one counted operation is, for the throughput line (`req/s`, `connections/s`, `leaves/s`). */
  readonly unit: string;
  /** The unit when the scenario's flags change what is counted (mesh's -long counts exchanges). */
  unitOf?(flags: Readonly<Record<string, unknown>>): string;
  /** Driven by the generator threads: takes -rate, -stages and -find-max. */
  readonly openLoop?: boolean;
  run(ctx: RunContext): Promise<ScenarioReport>;
}
