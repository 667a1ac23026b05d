// Time as an injected dependency, so renewal windows, blocking timeouts and TTLs are tested with a
// fake clock instead of sleeps (the lru-cache habit).

export interface TimerHandle {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs `fn` once after `ms` milliseconds unless cancelled first. */
  setTimer(ms: number, fn: () => void): TimerHandle;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(ms, fn) {
    const t = setTimeout(fn, ms);
    return { cancel: () => clearTimeout(t) };
  },
};

/** The system clock whose timers keep no process alive: for work a stop may drop (a log line's count). */
export const backgroundClock: Clock = {
  now: () => Date.now(),
  setTimer(ms, fn) {
    const t = setTimeout(fn, ms).unref();
    return { cancel: () => clearTimeout(t) };
  },
};

/** A clock that moves only when told to; timers fire in deadline order during `advance`. */
export class FakeClock implements Clock {
  private timers: { at: number; seq: number; fn: () => void; live: boolean }[] = [];
  private seq = 0;
  constructor(private current = 0) {}

  now(): number {
    return this.current;
  }

  setTimer(ms: number, fn: () => void): TimerHandle {
    const timer = { at: this.current + Math.max(0, ms), seq: this.seq++, fn, live: true };
    this.timers.push(timer);
    return { cancel: () => void (timer.live = false) };
  }

  get pendingTimers(): number {
    return this.timers.filter((t) => t.live).length;
  }

  advance(ms: number): void {
    const until = this.current + ms;
    for (;;) {
      this.timers = this.timers.filter((t) => t.live);
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers[0];
      if (!next || next.at > until) break;
      this.current = next.at;
      next.live = false;
      next.fn();
    }
    this.current = until;
  }
}
