// One blocking query kept open against the agent's HTTP API: read, hand each new answer on, block
// again on what it said (X-Consul-Index, or the ContentHash for /v1/agent/service/:id, as Consul's
// clients do), and after a failed read wait out a backoff before reading afresh. Until stopped.
import { backoffDelay, type Backoff } from '../core/backoff.js';
import type { AgentClient } from './agent-client.js';

/** A stopped watch. */
export type Unwatch = () => void;

/** The agent answered, with a status other than 200 (a refusal, or a failure of its own). */
export class AgentAnswerError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** A blocking query's longest wait; the agent answers at once when the data changes. */
const WAIT = '5m';
/** Pause after a failed read: doubling from 250 ms to 10 s, so an agent that is gone costs little. */
const RETRY: Backoff = { initialMs: 250, maxMs: 10_000 };

/** Waits out the pause after failure number `attempt` (0 for the first); keeps no process alive. */
export function pauseAfterFailure(attempt: number): Promise<void> {
  // The base delay, without jitter: one service's watches, not a fleet reconnecting together.
  const ms = backoffDelay(RETRY, attempt, () => 0.5);
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

export interface BlockingWatch {
  /** What the agent blocks on: the index (most endpoints) or the content hash (agent/service/:id). */
  readonly by: 'index' | 'hash';
  /** A read that failed or answered other than 200; the watch reads afresh after a pause. */
  onError(err: Error): void;
  /** Each answer whose index (or hash) differs from the last. */
  take(body: unknown): void;
}

/** Reads `path` and hands each new answer to `take`, then blocks on its index or hash, until stopped. */
export function watchPath(client: AgentClient, path: string, watch: BlockingWatch): Unwatch {
  const abort = new AbortController();
  let cursor = '';
  let failures = 0;
  const loop = async (): Promise<void> => {
    while (!abort.signal.aborted) {
      try {
        const query = cursor === '' ? '' : `${path.includes('?') ? '&' : '?'}${watch.by}=${cursor}&wait=${WAIT}`;
        const res = await client.call('GET', `${path}${query}`, undefined, abort.signal);
        if (res.status !== 200)
          throw new AgentAnswerError(res.status, `${path} answered ${res.status}: ${res.body.trim()}`);
        failures = 0;
        const next = watch.by === 'hash' ? res.hash : res.index > 0 ? String(res.index) : '';
        // An index that went backwards (a restarted agent) starts the watch again from the answer.
        if (next !== cursor) watch.take(JSON.parse(res.body));
        cursor = next;
      } catch (err) {
        if (abort.signal.aborted) return;
        watch.onError(err instanceof Error ? err : new Error(String(err)));
        cursor = '';
        await pauseAfterFailure(failures++);
      }
    }
  };
  void loop();
  return () => abort.abort();
}
