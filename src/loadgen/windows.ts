// A generator thread's measured time cut into windows: every second, cut short where a stage or
// the schedule ends, so that each stage's windows are its own and no window runs past the end. An
// answer goes in the window it came in; the answers after the schedule's end go in the drain.
// src/cli/loadtest/rates.ts turns the windows into rates.
import type { Recorder } from './recorder.js';
import type { Stage } from './pacer.js';
import type { ThreadTick } from './types.js';

/** Where the windows end, ms from the start of the measured time: each whole second and each stage's end. */
export function windowEnds(totalMs: number, stages: readonly Stage[] | undefined): number[] {
  const ends = new Set<number>();
  for (let s = 1000; s < totalMs; s += 1000) ends.add(s);
  let at = 0;
  for (const s of stages ?? []) {
    at += s.ms;
    if (at < totalMs) ends.add(at);
  }
  if (totalMs > 0) ends.add(totalMs);
  return [...ends].sort((a, b) => a - b);
}

export class Windows {
  private k = 0;
  private done = false;

  constructor(
    private readonly recorder: Recorder,
    private readonly ends: readonly number[],
    private readonly post: (tick: ThreadTick) => void,
  ) {}

  /** The end of the open window, or undefined past the schedule's end. */
  get nextEndMs(): number | undefined {
    return this.done ? undefined : this.ends[this.k];
  }

  /** Closes every window that ends at or before `atMs` (call before recording what came at `atMs`). */
  roll(atMs: number): void {
    while (!this.done && this.k < this.ends.length && atMs >= (this.ends[this.k] as number))
      this.close(this.ends[this.k]!);
  }

  /** Stopped early: the open window ends at `atMs`, and no other follows. */
  cut(atMs: number): void {
    this.roll(atMs);
    const start = this.startOf(this.k);
    if (!this.done && this.k < this.ends.length && atMs > start) this.close(atMs);
    this.done = true;
  }

  /** After the schedule: what came after its end, up to the last answer at `lastMs`. */
  drain(lastMs: number): void {
    const end = this.ends.at(-1) ?? 0;
    this.roll(end);
    this.done = true;
    this.post(this.recorder.tick(this.ends.length + 1, end, Math.max(end, lastMs), true));
  }

  private startOf(k: number): number {
    return k === 0 ? 0 : (this.ends[k - 1] as number);
  }

  private close(endMs: number): void {
    this.post(this.recorder.tick(this.k + 1, this.startOf(this.k), endMs));
    this.k++;
  }
}
