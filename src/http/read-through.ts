// Reads of a table the store reads through (the cluster's KV: docs/decisions.md D15). A plain read
// is one backend read. A blocking read parks at once and waits on the backend's watch of its key
// or prefix from `?index`: the index a read reports also moves with unrelated writes, so comparing
// indexes would wake it for nothing, while the watch wakes it only when its own rows changed
// (docs/decisions.md D6).
import { agentError } from '../core/errors.js';
import type { RangeTarget, ReadConsistency, ReadThroughResult, ReadThroughTables } from '../state/types.js';
import type { BlockingParams, BlockingQueries, Parked, WatchedRead } from './blocking.js';
import type { Reply } from './reply.js';
import type { ApiRequest } from './request.js';

export interface ReadThroughSpec<V> {
  readonly target: RangeTarget;
  readonly consistency: ReadConsistency;
  /** As WatchedRead.shareKey, without the index and consistency (added here). */
  readonly shareKey: string;
  render(result: ReadThroughResult<V>): Reply;
}

export function answerReadThrough<V>(
  blocking: BlockingQueries,
  tables: ReadThroughTables,
  req: ApiRequest,
  params: BlockingParams,
  spec: ReadThroughSpec<V>,
): Promise<Reply> | Parked {
  if (params.minIndex === 0) return tables.read<V>(spec.target, spec.consistency).then((result) => spec.render(result));
  const parked = blocking.answer(req, params, watchedReadThrough(tables, params.minIndex, spec));
  // A read that does not know its data yet always parks (its index() is minIndex).
  return parked as Parked;
}

function watchedReadThrough<V>(tables: ReadThroughTables, minIndex: number, spec: ReadThroughSpec<V>): WatchedRead {
  let latest: ReadThroughResult<V> | undefined;
  let failure: unknown;
  // Changes at or below `since` are already in what the reader has (its ?index, then each re-read).
  let since = minIndex;
  const read = (): Promise<ReadThroughResult<V>> => tables.read<V>(spec.target, spec.consistency);
  // After a change the watch reported, the member that reported it has it: read its copy without a
  // round through the leader (a lagging member's older copy only re-arms the wait).
  const reread = (): Promise<ReadThroughResult<V>> => tables.read<V>(spec.target, spec.consistency === 'consistent' ? 'consistent' : 'stale');
  return {
    shareKey: JSON.stringify([spec.shareKey, minIndex, spec.consistency]),
    target(fn) {
      let live = true;
      let cancel = (): void => {};
      const wait = (): void => {
        cancel = tables.changedAfter(spec.target, since, () => {
          reread().then(
            (result) => {
              if (!live) return;
              latest = result;
              since = Math.max(since, result.revision);
              fn();
            },
            // etcd went away right after the change: wait again from the same revision, so the
            // change wakes the read once etcd is back.
            (err: unknown) => {
              failure = err;
              if (live) wait();
            },
          );
        });
      };
      wait();
      if (latest === undefined) {
        // What a timeout answers with when nothing changed meanwhile.
        read().then(
          (result) => {
            latest ??= result;
          },
          (err: unknown) => {
            failure = err;
          },
        );
      }
      return () => {
        live = false;
        cancel();
      };
    },
    index: () => (latest === undefined ? minIndex : latest.index),
    render() {
      if (latest !== undefined) return spec.render(latest);
      throw failure ?? agentError('STATE_NO_LEADER');
    },
  };
}
