// Drives requests over a pool of connections, closed loop (each connection sends again as soon as
// it is answered) or open loop (requests fall due on a pacer's schedule whatever the server does).
// In open loop a latency runs from the moment the request was due, not from when a connection was
// free to send it: a stalled server delays the requests queued behind it, and they show it
// (coordinated omission). A request due while every connection is busy waits in a bounded backlog
// (late); one due when the backlog is full, or still waiting when the run ends, is dropped, so
// sending stops on time whatever the rate asked. The clock is injected, so this is tested without
// waiting.
import type { Pacer } from './pacer.js';
import type { Outcome } from './types.js';

export interface LoadClock {
  /** Milliseconds, fractional. */
  now(): number;
  sleepUntil(ms: number): Promise<void>;
}

const ORIGIN = performance.timeOrigin;

/** Epoch milliseconds, fractional: the same on every thread (each thread's performance.now() has its own origin). */
export const epochClock: LoadClock = {
  now: () => ORIGIN + performance.now(),
  // A due time already past resolves after pending I/O (answers free connections), not a 1 ms
  // timer, which would cap an open loop near 1,000 requests per second.
  sleepUntil: (ms) => {
    const wait = ms - (ORIGIN + performance.now());
    return new Promise((resolve) => (wait <= 0 ? setImmediate(resolve) : setTimeout(resolve, wait)));
  },
};

/** One connection: sends one request at a time. */
export interface Channel {
  send(): Promise<Outcome>;
  /** The same without a promise per request (HttpChannel): `done` gets the outcome. */
  start?(done: (outcome: Outcome) => void): void;
}

/** A connection and how to send on it: its own callback, or its promise adapted once. */
interface Slot {
  readonly channel: Channel;
  readonly start: (done: (outcome: Outcome) => void) => void;
}

function slotOf(channel: Channel): Slot {
  const start = channel.start?.bind(channel) ?? ((done) => void channel.send().then(done));
  return { channel, start };
}

/** A request sent this long after it fell due counts as late even if a connection was free (a busy generator). */
export const LATE_MS = 10;

export interface LoadPlan {
  readonly channels: readonly Channel[];
  /** Open loop: when each request falls due; undefined for closed loop. */
  readonly pacer?: Pacer | undefined;
  /** When to stop sending (ms on the clock), the backlog too; answers still in flight are awaited. */
  readonly until: number;
  /** Open loop: when the schedule starts (default: now). */
  readonly from?: number | undefined;
  readonly clock: LoadClock;
  /**
   * Latency in microseconds, from send (closed loop) or from due time (open loop); `late` when it
   * waited for a free connection or went out LATE_MS after it fell due.
   */
  readonly record: (outcome: Outcome, latencyUs: number, late: boolean, channel: Channel) => void;
  /** Requests due that were never sent: the backlog was full, or the run ended first. */
  readonly dropped?: (count: number) => void;
  /** Most requests waiting for a free connection (default: one second of the rate, at least one per connection). */
  readonly backlog?: number | undefined;
  /** Stops early (Ctrl-C): nothing new is sent. */
  readonly stopped?: () => boolean;
}

export async function drive(plan: LoadPlan): Promise<void> {
  if (plan.pacer === undefined) await closedLoop(plan);
  else await openLoop(plan, plan.pacer);
}

// Each connection sends again from its answer's callback, once the answer is recorded (a kv answer
// is named by the request its connection sent last).
function closedLoop(plan: LoadPlan): Promise<void> {
  const { clock, until } = plan;
  return new Promise((resolve) => {
    let running = plan.channels.length;
    if (running === 0 || clock.now() >= until || plan.stopped?.() === true) return resolve();
    for (const channel of plan.channels) {
      const { start } = slotOf(channel);
      let sent = clock.now();
      const answered = (outcome: Outcome): void => {
        const now = clock.now();
        plan.record(outcome, (now - sent) * 1000, false, channel);
        if (now < until && plan.stopped?.() !== true) {
          sent = clock.now();
          start(answered);
        } else if (--running === 0) resolve();
      };
      start(answered);
    }
  });
}

/** The default backlog: one second of the fastest stage, at least one per connection, at most 100,000 due times. */
function backlogOf(plan: LoadPlan, pacer: Pacer): number {
  const fastest = Math.max(0, ...pacer.stages.map((s) => s.rate));
  return plan.backlog ?? Math.min(100_000, Math.max(plan.channels.length, Math.ceil(fastest)));
}

async function openLoop(plan: LoadPlan, pacer: Pacer): Promise<void> {
  const { clock } = plan;
  const free = plan.channels.map(slotOf);
  // Due times of requests waiting for a free connection, oldest first, in a ring.
  const capacity = backlogOf(plan, pacer);
  const ring = new Float64Array(Math.max(1, capacity));
  let head = 0;
  let waiting = 0;
  let sending = true;
  let inFlight = 0;
  let idle: (() => void) | undefined;
  const drop = (n: number): void => {
    if (n > 0) plan.dropped?.(n);
  };
  const fire = (slot: Slot, due: number, late: boolean): void => {
    inFlight++;
    slot.start((outcome) => {
      inFlight--;
      plan.record(outcome, (clock.now() - due) * 1000, late, slot.channel);
      if (sending && waiting > 0) {
        const next = ring[head] as number;
        head = (head + 1) % ring.length;
        waiting--;
        fire(slot, next, true);
      } else free.push(slot);
      if (inFlight === 0) idle?.();
    });
  };
  const start = plan.from ?? clock.now();
  const end = Math.min(plan.until, start + pacer.totalMs);
  // Every call due strictly before the end; one due at the last moment still goes out.
  const total = Math.min(pacer.total, pacer.dueBy(end - start - 1e-6));
  let n = 0;
  while (n < total && plan.stopped?.() !== true) {
    const now = clock.now();
    const due = Math.min(pacer.dueBy(now - start), total);
    for (; n < due; n++) {
      const slot = free.pop();
      const at = start + pacer.timeOf(n);
      if (slot !== undefined) fire(slot, at, now - at > LATE_MS);
      else if (waiting < capacity) {
        ring[(head + waiting) % ring.length] = at;
        waiting++;
      } else {
        // Full: every call due now is dropped at once, not one by one.
        drop(due - n);
        n = due;
        break;
      }
    }
    if (n >= total) break;
    await clock.sleepUntil(start + pacer.timeOf(n));
  }
  // Waiting calls may still go out until the run's end; then what still waits is never sent.
  if (waiting > 0 && plan.stopped?.() !== true) await clock.sleepUntil(plan.until);
  sending = false;
  drop(waiting);
  waiting = 0;
  if (inFlight > 0) await new Promise<void>((resolve) => (idle = resolve));
}
