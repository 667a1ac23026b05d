// runYielding: a signing batch pauses once `everyMs` of work has run since the last pause, and the
// default pause really takes the thread off the CPU (a voluntary context switch).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runYielding } from '../../../workers/thread-scheduling.js';

describe('runYielding', () => {
  it('pauses whenever everyMs of work has run since the last pause, and keeps the order', () => {
    let clock = 0;
    const log: string[] = [];
    const results = runYielding(
      [1, 2, 3, 4, 5, 6, 7],
      (n) => {
        log.push(`work ${n}`);
        clock += 0.4;
        return n * 10;
      },
      { everyMs: 1, now: () => clock, pause: () => log.push('pause') },
    );
    expect(results).toEqual([10, 20, 30, 40, 50, 60, 70]);
    expect(log).toEqual(['work 1', 'work 2', 'work 3', 'pause', 'work 4', 'work 5', 'work 6', 'pause', 'work 7']);
  });

  it('does not pause a batch shorter than everyMs, nor before its first item', () => {
    let clock = 0;
    let pauses = 0;
    runYielding([1, 2], () => (clock += 0.3), { everyMs: 1, now: () => clock, pause: () => pauses++ });
    expect(pauses).toBe(0);
  });

  it.runIf(process.platform === 'linux')('gives up the CPU with the default pause', () => {
    const voluntary = (): number => Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync('/proc/thread-self/status', 'utf8'))?.[1]);
    const busy = (ms: number): void => {
      const end = performance.now() + ms;
      while (performance.now() < end);
    };
    const before = voluntary();
    runYielding([1, 2, 3, 4], () => busy(1.1), { everyMs: 1 });
    // Three pauses; the file read itself may add a switch, never remove one.
    expect(voluntary() - before).toBeGreaterThanOrEqual(3);
  });
});
