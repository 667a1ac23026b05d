// Reads through the store's one read path (`read`, `changedAfter`), for a table a backend may hold
// in its local view or read through from its source (the cluster's KV: docs/decisions.md D15): the
// handler does not know which. A plain read is one store read. A blocking read parks at once and
// waits on the store's change notice for its key or prefix from `?index`: a read-through table's
// index also moves with unrelated writes, so comparing indexes would wake it for nothing, while the
// notice wakes it only when its own rows changed (docs/decisions.md D6). A read refused for its
// size (a listing over its limit) is answered at once with that error: waiting would not shrink it.
import { agentError, isAgentError } from '../core/errors.js';
import type { RangeTarget, ReadConsistency, ReadResult, StateStore } from '../state/types.js';
import type { BlockingParams, BlockingQueries, Parked, WatchedRead } from './blocking.js';
import type { Reply } from './reply.js';
import type { ApiRequest } from './request.js';

/** The store's read path, as this file uses it. */
type StoreReads = Pick<StateStore, 'read' | 'changedAfter'>;

export interface StoreReadSpec<V> {
  readonly target: RangeTarget;
  readonly consistency: ReadConsistency;
  /** As WatchedRead.shareKey, without the index and consistency (added here). */
  readonly shareKey: string;
  render(result: ReadResult<V>): Reply;
}

export function answerStoreRead<V>(
  blocking: BlockingQueries,
  store: StoreReads,
  req: ApiRequest,
  params: BlockingParams,
  spec: StoreReadSpec<V>,
): Promise<Reply> | Parked {
  if (params.minIndex === 0) return store.read<V>(spec.target, spec.consistency).then((result) => spec.render(result));
  const parked = blocking.answer(req, params, watchedStoreRead(store, params.minIndex, spec));
  // A read that does not know its data yet always parks (its index() is minIndex).
  return parked as Parked;
}

function watchedStoreRead<V>(store: StoreReads, minIndex: number, spec: StoreReadSpec<V>): WatchedRead {
  let latest: ReadResult<V> | undefined;
  let failure: unknown;
  /** A failure that answers the read now (see tooLarge). */
  let refused: unknown;
  // Changes at or below `since` are already in what the reader has (its ?index, then each re-read).
  let since = minIndex;
  const read = (): Promise<ReadResult<V>> => store.read<V>(spec.target, spec.consistency);
  // After a change the store reported, the member that reported it most often has it: read its copy
  // without a round through the leader. A copy older than the change (the read went to a member
  // lagging behind the watch's) is read again through the leader: answered as it is, a key the
  // change created would read as missing at an index past the reader's (a 404 for a write it waited for).
  const reread = async (changedAt?: number): Promise<ReadResult<V>> => {
    if (spec.consistency === 'consistent') return store.read<V>(spec.target, 'consistent');
    const copy = await store.read<V>(spec.target, 'stale');
    return changedAt === undefined || copy.revision >= changedAt ? copy : store.read<V>(spec.target, 'consistent');
  };
  return {
    shareKey: JSON.stringify([spec.shareKey, minIndex, spec.consistency]),
    target(fn) {
      let live = true;
      let cancel = (): void => {};
      // Answers now with `err`: the wait's watch goes, as no wake-up would end it.
      const refuse = (err: unknown): void => {
        refused = err;
        live = false;
        cancel();
        fn();
      };
      const wait = (): void => {
        cancel = store.changedAfter(spec.target, since, (changedAt) => {
          reread(changedAt).then(
            (result) => {
              if (!live) return;
              latest = result;
              since = Math.max(since, result.revision);
              fn();
            },
            // The backend went away right after the change: wait again from the same revision, so
            // the change wakes the read once it is back.
            (err: unknown) => {
              failure = err;
              if (!live) return;
              if (tooLarge(err)) refuse(err);
              else wait();
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
            if (live && tooLarge(err)) refuse(err);
          },
        );
      }
      return () => {
        live = false;
        cancel();
      };
    },
    // Refused: an index no answer was rendered at, so the wake-up renders (and throws) afresh.
    index: () => (refused !== undefined ? minIndex + 1 : latest === undefined ? minIndex : latest.index),
    render() {
      if (refused !== undefined) throw refused;
      if (latest !== undefined) return spec.render(latest);
      throw failure ?? agentError('STATE_NO_LEADER');
    },
  };
}

/** An error a later read would repeat until the data shrinks: a listing over its limit. */
function tooLarge(err: unknown): boolean {
  return isAgentError(err) && err.kind === 'too-large';
}
