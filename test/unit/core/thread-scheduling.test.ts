// runYielding: a signing batch pauses once `everyMs` of work has run since the last pause, and the
// default pause really takes the thread off the CPU (a voluntary context switch). requestSlice: the
// calling thread's scheduler slice as the kernel shows it, threads started later untouched.
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { pickV8PlatformThreads, requestSlice, runYielding, sliceUnsupported, v8PoolSize } from '../../../src/core/thread-scheduling.js';

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

describe('v8PoolSize', () => {
  it.each([
    [[], '', 4],
    [['--v8-pool-size=2'], '', 2],
    [['--v8-pool-size', '3'], '', 3],
    [[], '--max-old-space-size=512 --v8-pool-size=8', 8],
    [['--v8_pool_size=6'], '--v8-pool-size=8', 6],
    [['--v8-pool-size=0'], '', 0],
  ])('command line %j, NODE_OPTIONS %j: %i', (execArgv, nodeOptions, size) => {
    expect(v8PoolSize(execArgv, nodeOptions)).toBe(size);
  });
});

describe('pickV8PlatformThreads', () => {
  // A node 20 process as /proc shows it: the main thread, the platform's delayed-task thread and
  // 4 workers in one burst, the inspector's signal thread, then libuv's pool (started by the
  // module loader's file reads) and a worker thread.
  const node20 = [
    { tid: 100, startTicks: 5000 },
    { tid: 110, startTicks: 5009 },
    { tid: 111, startTicks: 5009 },
    { tid: 106, startTicks: 5008 },
    { tid: 101, startTicks: 5006 },
    { tid: 102, startTicks: 5006 },
    { tid: 103, startTicks: 5006 },
    { tid: 104, startTicks: 5006 },
    { tid: 105, startTicks: 5007 },
    { tid: 107, startTicks: 5009 },
    { tid: 108, startTicks: 5009 },
    { tid: 112, startTicks: 5300 },
  ];

  it('takes the first pool size + 1 threads after the main one, by start time and then thread id', () => {
    expect(pickV8PlatformThreads(node20, 100, 4)).toEqual({ tids: [101, 102, 103, 104, 105] });
    expect(pickV8PlatformThreads(node20, 100, 2)).toEqual({ tids: [101, 102, 103] });
  });

  it('goes by start time where thread ids have wrapped around', () => {
    const wrapped = [
      { tid: 32760, startTicks: 10 },
      { tid: 32761, startTicks: 12 },
      { tid: 32762, startTicks: 12 },
      { tid: 300, startTicks: 12 },
      { tid: 301, startTicks: 15 },
    ];
    expect(pickV8PlatformThreads(wrapped, 32760, 2)).toEqual({ tids: [300, 32761, 32762] });
  });

  it.each([
    [node20.slice(0, 4), 4, { reason: 'expected 5 V8 platform threads, found 3 threads beside the main one' }],
    [node20, 7, { reason: 'the first 8 threads did not start together (over 3 clock ticks), as V8\'s platform threads do' }],
    [node20, 0, { reason: "node sizes V8's pool itself with --v8-pool-size=0" }],
    [node20, Number.NaN, { reason: "node sizes V8's pool itself with --v8-pool-size=NaN" }],
  ])('refuses threads that do not look like the platform\'s (%#)', (tasks, poolSize, answer) => {
    expect(pickV8PlatformThreads(tasks, 100, poolSize)).toEqual(answer);
  });
});

describe('sliceUnsupported', () => {
  it.each([
    [{ platform: 'linux', arch: 'x64', release: '6.12.0' }, undefined],
    [{ platform: 'linux', arch: 'arm64', release: '6.18.44-fc-v657' }, undefined],
    [{ platform: 'linux', arch: 'x64', release: '7.1.3-amd64' }, undefined],
    [{ platform: 'linux', arch: 'x64', release: '6.11.9' }, 'custom slices need Linux 6.12 or later, not 6.11.9'],
    [{ platform: 'linux', arch: 'x64', release: '6.1.0-18-amd64' }, 'custom slices need Linux 6.12 or later, not 6.1.0-18-amd64'],
    [{ platform: 'linux', arch: 'x64', release: '5.15.0' }, 'custom slices need Linux 6.12 or later, not 5.15.0'],
    [{ platform: 'linux', arch: 'ia32', release: '6.12.0' }, 'no sched_setattr number for ia32'],
    [{ platform: 'darwin', arch: 'arm64', release: '24.1.0' }, 'not on darwin'],
  ])('%j: %s', (system, reason) => {
    expect(sliceUnsupported(system)).toBe(reason);
  });
});

describe.runIf(sliceUnsupported() === undefined)('requestSlice', () => {
  const shownSlice = (): number | undefined => {
    const match = /^se\.slice\s*:\s*(\d+)/m.exec(readFileSync('/proc/thread-self/sched', 'utf8'));
    return match === null ? undefined : Number(match[1]);
  };
  /** What a thread started now sees as its slice (/proc/thread-self/sched, read in the thread). */
  const newThreadSlice = async (): Promise<number | undefined> => {
    const source = `const m = /^se\\.slice\\s*:\\s*(\\d+)/m.exec(require('node:fs').readFileSync('/proc/thread-self/sched', 'utf8')); require('node:worker_threads').parentPort.postMessage(m === null ? null : Number(m[1]));`;
    const worker = new Worker(source, { eval: true });
    const [answer] = (await once(worker, 'message')) as [number | null];
    await worker.terminate();
    return answer ?? undefined;
  };
  const kernelShowsSlices = existsSync('/proc/thread-self/sched') && shownSlice() !== undefined;

  afterEach(() => {
    requestSlice(0);
  });

  it.runIf(kernelShowsSlices)('sets the calling thread slice, not that of threads started later, and 0 goes back to the default', async () => {
    const initial = shownSlice();
    expect(requestSlice(0.2)).toEqual({ ok: true, sliceMs: 0.2 });
    expect(shownSlice()).toBe(200_000);
    expect(await newThreadSlice()).toBe(initial);
    expect(requestSlice(0)).toEqual({ ok: true, sliceMs: (initial ?? 0) / 1e6 });
    expect(shownSlice()).toBe(initial);
  });

  it('refuses a slice the kernel would not take, changing nothing', () => {
    const before = kernelShowsSlices ? shownSlice() : undefined;
    for (const ms of [0.05, 100.5, -1, Number.NaN]) {
      const result = requestSlice(ms);
      expect(result.ok).toBe(false);
      expect(!result.ok && result.reason).toBe(`a slice is 0 or 0.1-100 ms, not ${ms}`);
    }
    if (kernelShowsSlices) expect(shownSlice()).toBe(before);
  });

  it('says why when perl is missing', async () => {
    // A worker thread with no perl on its PATH (its env is its own copy), running the built module.
    const module = new URL('../../../dist/src/core/thread-scheduling.js', import.meta.url).href;
    const source = `process.env.PATH = '/nonexistent'; import(${JSON.stringify(module)}).then((m) => require('node:worker_threads').parentPort.postMessage(m.requestSlice(1)));`;
    const worker = new Worker(source, { eval: true });
    const [answer] = (await once(worker, 'message')) as [{ ok: boolean; reason?: string }];
    await worker.terminate();
    expect(answer.ok).toBe(false);
    expect(answer.reason).toMatch(/^perl failed: .*ENOENT/);
  });
});
