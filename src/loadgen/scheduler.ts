// Drives requests over a pool of connections, closed loop (each connection sends again as soon as
// it is answered) or open loop (requests are due at a fixed rate whatever the server does). In
// open loop a latency runs from the moment the request was due, not from when a connection was
// free to send it: a stalled server delays the requests queued behind it, and they show it
// (coordinated omission). The clock is injected, so this is tested without waiting.
import type { Outcome } from './types.js';

export interface LoadClock {
  /** Milliseconds, fractional. */
  now(): number;
  sleepUntil(ms: number): Promise<void>;
}

/** Epoch milliseconds, fractional: the same on every thread (each thread's performance.now() has its own origin). */
export const epochClock: LoadClock = {
  now: () => performance.timeOrigin + performance.now(),
  // A due time already past resolves at once: a timer waits at least 1 ms, which would cap an
  // open loop near 1,000 requests per second. Requests due within one timer tick go out together.
  sleepUntil: (ms) => {
    const wait = ms - (performance.timeOrigin + performance.now());
    return wait <= 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, wait));
  },
};

/** One connection: sends one request at a time. */
export interface Channel {
  send(): Promise<Outcome>;
}

export interface LoadPlan {
  readonly channels: readonly Channel[];
  /** Requests per second across all channels; undefined for closed loop. */
  readonly rate?: number | undefined;
  /** When to stop sending (ms on the clock); answers still in flight are awaited. */
  readonly until: number;
  /** Open loop: when the schedule starts (default: now), so that `until - from` holds exactly its share of requests. */
  readonly from?: number | undefined;
  readonly clock: LoadClock;
  /** Latency in microseconds, from send (closed loop) or from due time (open loop). */
  readonly record: (outcome: Outcome, latencyUs: number) => void;
  /** Stops early (Ctrl-C): nothing new is sent. */
  readonly stopped?: () => boolean;
}

export async function drive(plan: LoadPlan): Promise<void> {
  if (plan.rate === undefined) await closedLoop(plan);
  else await openLoop(plan, plan.rate);
}

async function closedLoop(plan: LoadPlan): Promise<void> {
  const { clock } = plan;
  const stop = (): boolean => clock.now() >= plan.until || plan.stopped?.() === true;
  await Promise.all(
    plan.channels.map(async (channel) => {
      while (!stop()) {
        const sent = clock.now();
        const outcome = await channel.send();
        plan.record(outcome, (clock.now() - sent) * 1000);
      }
    }),
  );
}

async function openLoop(plan: LoadPlan, rate: number): Promise<void> {
  const { clock } = plan;
  const interval = 1000 / rate;
  const free = [...plan.channels];
  /** Due times of requests waiting for a free connection, oldest first. */
  const waiting: number[] = [];
  const inFlight = new Set<Promise<void>>();
  const fire = (channel: Channel, due: number): void => {
    const done = channel.send().then((outcome) => {
      plan.record(outcome, (clock.now() - due) * 1000);
      inFlight.delete(done);
      const next = waiting.shift();
      if (next !== undefined) fire(channel, next);
      else free.push(channel);
    });
    inFlight.add(done);
  };
  const start = plan.from ?? clock.now();
  for (let i = 0; ; i++) {
    const due = start + i * interval;
    if (due >= plan.until || plan.stopped?.() === true) break;
    await clock.sleepUntil(due);
    if (plan.stopped?.() === true) break;
    const channel = free.pop();
    if (channel === undefined) waiting.push(due);
    else fire(channel, due);
  }
  while (inFlight.size > 0) await Promise.race(inFlight);
}
