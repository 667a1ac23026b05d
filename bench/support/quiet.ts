// Waits, within a bound, for the machine to be idle before a measured run. The bench machine is
// shared (other sessions build and test on the same 2 cores), and a compile beside a run costs
// the server a third of its throughput; waiting a little for a gap is cheaper than a rerun.
import { readMachineBusySeconds } from './proc-stats.js';

// Idle here means the (otherwise idle) bench, server and everything else together use under a
// fifth of one core over a half-second window.
const QUIET_BUSY_PCT = 20;
const WINDOW_MS = 500;

/** Resolves true once a window is quiet, or false after `maxWaitMs` (the run goes ahead anyway). */
export async function waitForQuiet(maxWaitMs: number): Promise<boolean> {
  const deadline = Date.now() + maxWaitMs;
  for (;;) {
    const busy0 = readMachineBusySeconds();
    await new Promise((r) => setTimeout(r, WINDOW_MS));
    const busyPct = ((readMachineBusySeconds() - busy0) / (WINDOW_MS / 1000)) * 100;
    if (busyPct < QUIET_BUSY_PCT) return true;
    if (Date.now() > deadline) return false;
  }
}
