// The one pacing point of leaf issuance: arrival order, one batch started per event-loop turn,
// never more than MAX_ISSUING started and unsettled, a place freed by success or failure alike.
// Turns are stepped by hand, so nothing here depends on timing.
import { describe, expect, it } from 'vitest';
import { IssueQueue, MAX_ISSUING, STARTS_PER_TURN } from '../../../../src/connect/ca/issue-queue.js';
import { MAX_BATCH } from '../../../../src/connect/ca/signing-protocol.js';

/** A queue whose turns run only when `turn()` is called, and whose issuances settle on demand. */
function steppedQueue() {
  const turns: (() => void)[] = [];
  const started: number[] = [];
  const pending = new Map<number, { resolve: () => void; reject: (err: Error) => void }>();
  const queue = new IssueQueue<number>(
    (n) =>
      new Promise<void>((resolve, reject) => {
        started.push(n);
        pending.set(n, { resolve, reject });
      }),
    (fn) => turns.push(fn),
  );
  const turn = (): void => {
    const due = turns.splice(0);
    for (const fn of due) fn();
  };
  const flush = async (): Promise<void> => {
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return { queue, started, pending, turn, turns, flush };
}

describe('IssueQueue', () => {
  it('starts one pool batch a turn, as a pool batch holds at most MAX_BATCH leaves', () => {
    expect(STARTS_PER_TURN).toBe(MAX_BATCH);
    expect(MAX_ISSUING % MAX_BATCH).toBe(0);
  });

  it('starts nothing in the turn an issuance is asked for, then a batch a turn in arrival order', () => {
    const q = steppedQueue();
    for (let n = 0; n < 40; n++) q.queue.push(n);
    expect(q.started).toEqual([]);
    expect(q.turns).toHaveLength(1); // one turn scheduled, however many wait
    q.turn();
    expect(q.started).toEqual(Array.from({ length: STARTS_PER_TURN }, (_, i) => i));
    q.turn();
    q.turn();
    expect(q.started).toEqual(Array.from({ length: 40 }, (_, i) => i));
    expect(q.queue.queued).toBe(0);
    expect(q.queue.inFlight).toBe(40);
    expect(q.turns).toHaveLength(0);
  });

  it('holds at most MAX_ISSUING started and unsettled; each settlement, either way, lets one more start', async () => {
    const q = steppedQueue();
    const total = MAX_ISSUING + 50;
    for (let n = 0; n < total; n++) q.queue.push(n);
    for (let i = 0; i < total; i++) q.turn(); // far more turns than starting MAX_ISSUING takes
    expect(q.started).toHaveLength(MAX_ISSUING);
    expect(q.queue.inFlight).toBe(MAX_ISSUING);
    expect(q.queue.queued).toBe(50);
    expect(q.turns).toHaveLength(0); // full: no turn wasted

    q.pending.get(0)!.resolve();
    q.pending.get(1)!.reject(new Error('signer down'));
    await q.flush();
    expect(q.queue.inFlight).toBe(MAX_ISSUING - 2);
    q.turn();
    expect(q.started.slice(MAX_ISSUING)).toEqual([MAX_ISSUING, MAX_ISSUING + 1]);
    expect(q.queue.inFlight).toBe(MAX_ISSUING);
  });

  it('frees the place of a start that throws', async () => {
    const turns: (() => void)[] = [];
    let calls = 0;
    const queue = new IssueQueue<number>(
      () => {
        calls++;
        throw new Error('no signer');
      },
      (fn) => turns.push(fn),
    );
    queue.push(1);
    queue.push(2);
    turns.shift()!();
    expect(calls).toBe(2);
    await Promise.resolve();
    await Promise.resolve();
    expect(queue.inFlight).toBe(0);
  });
});
