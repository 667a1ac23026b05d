// What a wave of 1,000 requests costs the agent's event loop, by kind of request: first leaves
// (issuance through the pool), the same services again (cached leaves) and 404s (the cost of any
// 1,000 connections and requests). The figure is the main thread's own CPU time, read from the
// scheduler, so it holds still on a shared machine where a p99 over a 1 s window swings 2-3x: it
// is the number to move when working on the first-leaf wave's authorize p99 (http/ca.ts), whose
// cost is the main thread's path. Beside it: the CPU of the signing pool (the threads at a positive
// nice) and of the other threads (V8's GC and compiler helpers above all).
// Run: node dist/bench/sizing/ca-wave-cpu.js [--rounds 7]
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { AGENT_MISSING, agentBuilt, startAgent } from '../support/agent.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { BENCH_OUT } from '../support/paths.js';
import { readCpuSeconds, readThreadGroupsCpu, type ThreadGroupsCpu } from '../support/proc-stats.js';
import { formatTable, round, writeJson } from '../support/report.js';
import { firstLeafStorm, requestStorm } from '../support/request-storm.js';
import { median } from '../support/stats.js';
import { AGENT_CONFIG, WAVE } from './ca.js';

/** Counted rounds of the three waves; each row is their median. */
const DEFAULT_ROUNDS = 7;
/** Trailing work of a wave (closing its connections) lands within this; counted with the wave. */
const SETTLE_MS = 50;
/** Pause before each wave, so the previous one's deferred work (GC, timers) is not counted. */
const PAUSE_MS = 300;

type Kind = 'first' | 'cached' | 'noWork';

interface Sample {
  readonly mainMs: number;
  /** Threads other than the main one and the signing pool: V8's GC and compiler helpers above all. */
  readonly otherMs: number;
  /** The signing pool's threads (at a positive nice). */
  readonly signingMs: number;
  readonly processMs: number;
  readonly waveMs: number;
}

async function measureWave(pid: number, storm: () => { stop(): Promise<string> }): Promise<Sample> {
  await sleep(PAUSE_MS);
  const threads0 = readThreadGroupsCpu(pid);
  const process0 = readCpuSeconds(pid) ?? Number.NaN;
  const started = performance.now();
  await storm().stop();
  const waveMs = performance.now() - started;
  await sleep(SETTLE_MS);
  const threads = readThreadGroupsCpu(pid);
  const spent = (group: keyof ThreadGroupsCpu): number =>
    (threads?.[group] ?? Number.NaN) - (threads0?.[group] ?? Number.NaN);
  const processMs = ((readCpuSeconds(pid) ?? Number.NaN) - process0) * 1000;
  return { mainMs: spent('mainMs'), otherMs: spent('otherMs'), signingMs: spent('loweredMs'), processMs, waveMs };
}

export async function runCaWaveCpuBench(rounds = DEFAULT_ROUNDS): Promise<void> {
  if (!agentBuilt()) {
    process.stdout.write(`skipped ca wave cpu bench: ${AGENT_MISSING}\n`);
    return;
  }
  await mkdir(BENCH_OUT, { recursive: true });
  const configFile = join(BENCH_OUT, 'ca-wave-cpu-config.json');
  await writeFile(configFile, JSON.stringify(AGENT_CONFIG));
  const agent = await startAgent('dev', ['-config-file', configFile]);
  const samples: Record<Kind, Sample[]> = { first: [], cached: [], noWork: [] };
  try {
    // Round 0 warms the JIT and starts the signing worker; it is not counted.
    for (let round = 0; round <= rounds; round++) {
      process.stderr.write(`  ca wave cpu: round ${round}/${rounds}${round === 0 ? ' (warm-up)' : ''} ...\n`);
      const names: string[] = [];
      const first = await measureWave(agent.pid, firstLeafStorm(agent.port, WAVE, 1, names));
      const cached = await measureWave(
        agent.pid,
        requestStorm(agent.port, WAVE, (_, i) => `/v1/agent/connect/ca/leaf/${names[i] ?? 'web'}`, 1),
      );
      const noWork = await measureWave(
        agent.pid,
        requestStorm(agent.port, WAVE, () => '/v1/no-such-endpoint', 1),
      );
      if (round === 0) continue;
      samples.first.push(first);
      samples.cached.push(cached);
      samples.noWork.push(noWork);
    }
  } finally {
    await agent.stop();
  }

  const med = (kind: Kind, field: keyof Sample): number => median(samples[kind].map((s) => s[field]));
  const floor = med('noWork', 'mainMs');
  const labels: Record<Kind, string> = {
    first: `${WAVE} first leaves (signed in the pool)`,
    cached: `the same ${WAVE} services again (cached leaves)`,
    noWork: `${WAVE} requests needing no work (404s; baseline)`,
  };
  const rows = (['first', 'cached', 'noWork'] as const).map((kind) => {
    const mainMs = med(kind, 'mainMs');
    return {
      scenario: labels[kind],
      mainMs,
      perRequestUs: (mainMs * 1000) / WAVE,
      extraUs: ((mainMs - floor) * 1000) / WAVE,
      ratio: mainMs / floor,
      runs: samples[kind].map((s) => s.mainMs.toFixed(0)).join(' '),
      otherMs: med(kind, 'otherMs'),
      signingMs: med(kind, 'signingMs'),
      processMs: med(kind, 'processMs'),
      waveMs: med(kind, 'waveMs'),
    };
  });
  const table = formatTable(
    [
      'wave of requests',
      'main-thread ms',
      'us/request',
      'extra us vs 404',
      'ratio vs 404',
      'per round',
      'other threads ms',
      'signing ms',
      'process cpu ms',
      'wave ms',
    ],
    rows.map((r) => [
      r.scenario,
      round(r.mainMs),
      round(r.perRequestUs),
      round(r.extraUs),
      round(r.ratio),
      r.runs,
      round(r.otherMs),
      round(r.signingMs),
      round(r.processMs),
      round(r.waveMs),
    ]),
  );
  process.stdout.write(
    `\nCA waves: the agent's main-thread CPU per wave (median of ${rounds} rounds; signing: the signing pool; other threads: V8's GC and compiler helpers above all)\n${table}\n`,
  );
  const path = await writeJson('ca-wave-cpu', { rounds, wave: WAVE, rows });
  process.stdout.write(`wrote ${path}\n`);
}

if (isEntryPoint(import.meta.url)) {
  runMain(async () => {
    const { values } = parseArgs({ options: { rounds: { type: 'string' } } });
    const rounds = Number(values.rounds ?? DEFAULT_ROUNDS);
    if (!Number.isInteger(rounds) || rounds < 1)
      throw new Error(`--rounds must be a positive integer, got ${values.rounds}`);
    await runCaWaveCpuBench(rounds);
  });
}
