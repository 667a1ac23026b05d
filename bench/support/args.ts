// Command-line flags shared by the HTTP benches, parsed once with their defaults and reasons.
import { parseArgs } from 'node:util';

export interface HttpBenchArgs {
  /** Measured seconds per scenario: 10 s gives wrk ~10^5-10^6 samples, and 7 rows stay ~1.5 min. */
  durationS: number;
  /** Unmeasured seconds first, so V8 has optimised the server's hot path and the store is warm. */
  warmupS: number;
  /**
   * wrk threads. 1 by default: server and client share 2 cores, and with one wrk thread each gets
   * a core; with two, wrk's second thread steals the server's core and the figures swing more.
   */
  threads: number;
  /** Keep-alive connections, 64: enough to keep a single-threaded server saturated. */
  connections: number;
  tool: 'wrk' | 'autocannon';
  /** Whole sequences to run; each row reports the median across rounds. */
  rounds: number;
  /** Also run the node:http baseline rows. */
  nodeHttp: boolean;
  /** Parked blocking queries for the fan-out bench. */
  queries: number;
  /** Longest wait for an idle machine before each measured run (0: never wait). */
  quietWaitS: number;
}

function positive(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} wants a non-negative integer, got ${text}`);
  return n;
}

export function parseHttpBenchArgs(argv: readonly string[] = process.argv.slice(2)): HttpBenchArgs {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      duration: { type: 'string' },
      warmup: { type: 'string' },
      threads: { type: 'string' },
      connections: { type: 'string' },
      tool: { type: 'string' },
      rounds: { type: 'string' },
      'node-http': { type: 'boolean' },
      queries: { type: 'string' },
      'quiet-wait': { type: 'string' },
    },
    strict: true,
  });
  const tool = values.tool ?? 'wrk';
  if (tool !== 'wrk' && tool !== 'autocannon') throw new Error(`--tool wants wrk or autocannon, got ${tool}`);
  return {
    durationS: Math.max(1, positive('duration', values.duration, 10)),
    warmupS: positive('warmup', values.warmup, 2),
    threads: Math.max(1, positive('threads', values.threads, 1)),
    connections: Math.max(1, positive('connections', values.connections, 64)),
    tool,
    rounds: Math.max(1, positive('rounds', values.rounds, 1)),
    nodeHttp: values['node-http'] ?? false,
    queries: Math.max(1, positive('queries', values.queries, 15_000)),
    quietWaitS: positive('quiet-wait', values['quiet-wait'], 15),
  };
}
