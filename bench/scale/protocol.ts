// The messages between the scale harness (harness.ts) and its host processes (host.ts), declared
// once: the harness sends a host its instances to build and the conditions to wait for; a host
// answers each request by its id. Times are wall-clock milliseconds (performance.timeOrigin +
// performance.now()), comparable between processes of one machine.

/** What each in-process instance is: its agent's cluster settings and its node's registrations. */
export interface InstanceSpec {
  /** Node names, one instance each. */
  readonly names: readonly string[];
  /** etcd client URLs (the members, or a grpc-proxy in front of them). */
  readonly endpoints: readonly string[];
  readonly prefix: string;
  /** `cluster.member_ttl`, Go duration text. */
  readonly memberTtl: string;
  /** `cluster.leader_probe_interval`, Go duration text. */
  readonly probeInterval: string;
  /** Services each node registers, each with one TTL check. */
  readonly services: number;
  /** Instances started at once (each opens an etcd client and reads the whole view). */
  readonly startConcurrency: number;
}

/** A condition every instance's view is waited on for; each instance reports when it first held. */
export type Condition =
  /** Every named node is in the view with `services` services. */
  | { readonly kind: 'nodes'; readonly names: readonly string[]; readonly services: number }
  /** An intention from `source` to `destination` with this action. */
  | { readonly kind: 'intention'; readonly source: string; readonly destination: string; readonly action: string }
  /** Each of `nodes` has its check `checkId` at `status`. */
  | { readonly kind: 'check'; readonly nodes: readonly string[]; readonly checkId: string; readonly status: string };

export type ToHost =
  | { readonly type: 'start'; readonly id: number; readonly spec: InstanceSpec }
  /** Answered twice: `armedId` once every instance watches (a write sent after it is seen), then `id` with the arrivals. */
  | {
      readonly type: 'await';
      readonly id: number;
      readonly armedId: number;
      readonly condition: Condition;
      readonly limitMs: number;
    }
  /** Sets one TTL check of one of this host's nodes; answers with the time it was set. */
  | {
      readonly type: 'flip';
      readonly id: number;
      readonly node: string;
      readonly checkId: string;
      readonly status: 'passing' | 'warning' | 'critical';
    }
  /** Flips a random check of a random instance `perSecond` times a second in all (0: stop). */
  | { readonly type: 'churn-checks'; readonly id: number; readonly perSecond: number }
  | { readonly type: 'stats'; readonly id: number }
  /** Graceful stop of every instance (each revokes its member lease and closes its watches). */
  | { readonly type: 'close'; readonly id: number };

/** What one instance's wait came to: when it held (ms), or undefined if not within the limit. */
export type Arrivals = readonly (number | undefined)[];

export interface HostStats {
  readonly instances: number;
  readonly heapUsed: number;
  /** heapUsed before the first instance started: the host's own share. */
  readonly heapBefore: number;
  /** Instance starts tried again after a failure, and the last failure's message. */
  readonly startRetries: number;
  readonly lastStartError: string;
  readonly rss: number;
  /** Event-loop delay p99 over the last interval (ms): a host too busy to apply views inflates propagation. */
  readonly loopDelayP99Ms: number;
  /** Check flips the churn made so far. */
  readonly flips: number;
  /** Watch events the instances' views applied (sum of each store's viewEvents). */
  readonly viewEvents: number;
  /** Full re-reads of a view beyond the first (a compaction or a broken watch), summed. */
  readonly resyncs: number;
}

export type FromHost =
  | { readonly type: 'ok'; readonly id: number; readonly at?: number }
  | { readonly type: 'arrivals'; readonly id: number; readonly arrivals: Arrivals }
  | { readonly type: 'stats'; readonly id: number; readonly stats: HostStats }
  | { readonly type: 'error'; readonly id: number; readonly message: string };

/** The TTL check of service `i` on a node: one per service, IDs known to both sides. */
export function checkId(service: number): string {
  return `service:svc-${service}`;
}

/** The wall-clock time in ms, sub-millisecond, shared by the processes of one machine. */
export function wallMs(): number {
  return performance.timeOrigin + performance.now();
}
