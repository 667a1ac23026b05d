// What 10,000 HTTP checks at a 10 s interval, all passing against a loopback server, cost the
// agent's main thread: its CPU time (the scheduler's, /proc/<pid>/task/<pid>/schedstat, as
// http/ca-wave-cpu.ts reads it) above a second agent of the same build without checks, both read
// over the same windows. Probes run on the check-runner thread and report only changes, so the
// main thread should hear almost nothing once every check passes (target: <= 1 % of a core).
// Beside it: the agent's other threads (the check runner among them) and the probe rate served.
// Run: node dist/bench/sizing/checks-cpu.js [--checks 10000] [--rounds 5] [--window 20]
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { AGENT_MISSING, agentBuilt, startAgent } from '../support/agent.js';
import type { ServerProcess } from '../support/child.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { readThreadGroupsCpu } from '../support/proc-stats.js';
import { formatTable, round, writeJson } from '../support/report.js';
import { median } from '../support/stats.js';

const INTERVAL = '10s';
// Registrations in flight: enough to hide the round trip, few enough not to queue.
const REGISTER_IN_FLIGHT = 16;
/** How often the settle loop asks whether every check passes. */
const POLL_MS = 2000;

interface Window {
  /** Main-thread CPU ms per second of the window, with checks and without. */
  readonly withMainMsPerS: number;
  readonly withoutMainMsPerS: number;
  /** The other threads of the agent with checks (the check runner, GC helpers, libuv). */
  readonly withOtherMsPerS: number;
  readonly withoutOtherMsPerS: number;
  /** Probes the loopback server answered per second. */
  readonly probesPerS: number;
}

/** A loopback server answering every probe 200 with the same short body (so no output changes). */
export async function probeTarget(): Promise<{ server: Server; url: string; served: () => number }> {
  let served = 0;
  const server = createServer((_req, res) => {
    served++;
    res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}/health`, served: () => served };
}

export async function registerChecks(agent: ServerProcess, count: number, url: string): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < count; i = next++) {
      const res = await fetch(`http://127.0.0.1:${agent.port}/v1/agent/check/register`, {
        method: 'PUT',
        body: JSON.stringify({ ID: `probe-${i}`, Name: `probe ${i}`, HTTP: url, Interval: INTERVAL, Timeout: '5s' }),
      });
      if (res.status !== 200) throw new Error(`register check ${i}: ${res.status} ${await res.text()}`);
    }
  };
  await Promise.all(Array.from({ length: REGISTER_IN_FLIGHT }, worker));
}

/** Waits until no check of the agent is anything but passing. */
export async function untilAllPass(agent: ServerProcess, count: number): Promise<void> {
  const filter = encodeURIComponent('Status != "passing"');
  for (;;) {
    const res = await fetch(`http://127.0.0.1:${agent.port}/v1/agent/checks?filter=${filter}`);
    const notPassing = Object.keys((await res.json()) as object).length;
    process.stderr.write(`  ${count - notPassing}/${count} checks passing\n`);
    if (notPassing === 0) return;
    await sleep(POLL_MS);
  }
}

export async function runChecksCpuBench(argv: readonly string[]): Promise<Record<string, unknown>> {
  if (!agentBuilt()) throw new Error(AGENT_MISSING);
  const { values } = parseArgs({
    args: [...argv],
    options: { checks: { type: 'string' }, rounds: { type: 'string' }, window: { type: 'string' } },
  });
  const checks = Number(values.checks ?? 10_000);
  const rounds = Number(values.rounds ?? 5);
  const windowS = Number(values.window ?? 20);
  const target = await probeTarget();
  const withChecks = await startAgent('dev');
  const without = await startAgent('dev');
  const windows: Window[] = [];
  try {
    const started = performance.now();
    await registerChecks(withChecks, checks, target.url);
    process.stderr.write(`  ${checks} checks registered in ${Math.round(performance.now() - started)} ms\n`);
    await untilAllPass(withChecks, checks);
    // One more interval, so the first runs' changes and their spread are behind the windows.
    await sleep(10_000);
    for (let r = 0; r < rounds; r++) {
      const a0 = readThreadGroupsCpu(withChecks.pid);
      const b0 = readThreadGroupsCpu(without.pid);
      const served0 = target.served();
      const t0 = performance.now();
      await sleep(windowS * 1000);
      const a1 = readThreadGroupsCpu(withChecks.pid);
      const b1 = readThreadGroupsCpu(without.pid);
      const seconds = (performance.now() - t0) / 1000;
      if (a0 === undefined || a1 === undefined || b0 === undefined || b1 === undefined) throw new Error('agent gone');
      const per = (ms: number): number => ms / seconds;
      const window: Window = {
        withMainMsPerS: per(a1.mainMs - a0.mainMs),
        withoutMainMsPerS: per(b1.mainMs - b0.mainMs),
        withOtherMsPerS: per(a1.otherMs + a1.loweredMs - a0.otherMs - a0.loweredMs),
        withoutOtherMsPerS: per(b1.otherMs + b1.loweredMs - b0.otherMs - b0.loweredMs),
        probesPerS: (target.served() - served0) / seconds,
      };
      windows.push(window);
      process.stderr.write(
        `  window ${r + 1}: main ${window.withMainMsPerS.toFixed(2)} vs ${window.withoutMainMsPerS.toFixed(2)} ` +
          `ms/s, ${Math.round(window.probesPerS)} probes/s\n`,
      );
    }
  } finally {
    await Promise.all([withChecks.stop(), without.stop()]);
    target.server.close();
  }
  const med = (field: keyof Window): number => median(windows.map((w) => w[field]));
  // ms of CPU per second is tenths of a percent of a core: 10 ms/s = 1 %.
  const extraPct = median(windows.map((w) => w.withMainMsPerS - w.withoutMainMsPerS)) / 10;
  const table = formatTable(
    ['agent', 'main thread ms/s', '% of a core', 'other threads ms/s', 'probes/s'],
    [
      [
        `${checks} HTTP checks`,
        round(med('withMainMsPerS')),
        round(med('withMainMsPerS') / 10),
        round(med('withOtherMsPerS')),
        round(med('probesPerS')),
      ],
      [
        'no checks',
        round(med('withoutMainMsPerS')),
        round(med('withoutMainMsPerS') / 10),
        round(med('withoutOtherMsPerS')),
        0,
      ],
    ],
  );
  process.stdout.write(
    `\n${checks} HTTP checks every ${INTERVAL}, all passing: the main thread's CPU against an agent without checks ` +
      `(median of ${rounds} windows of ${windowS} s, read over the same windows)\n${table}\n` +
      `main thread above the agent without checks: ${round(extraPct)} % of a core (target <= 1 %)\n`,
  );
  const report = { checks, interval: INTERVAL, rounds, windowS, extraMainPctOfCore: extraPct, windows };
  process.stdout.write(`wrote ${await writeJson('checks-cpu', report)}\n`);
  return report;
}

if (isEntryPoint(import.meta.url)) runMain(async () => void (await runChecksCpuBench(process.argv.slice(2))));
