// idleV8PlatformThreads in a fresh node process (it cannot be undone unprivileged, so not in the
// test's own): the threads it puts under SCHED_IDLE are the ones that do V8's background GC work,
// and libuv's pool keeps its policy.
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const MODULE = pathToFileURL(resolve(import.meta.dirname, '../../dist/src/core/thread-scheduling.js')).href;

// Starts libuv's pool with a file read, idles V8's threads, then makes garbage with survivors in
// bursts with sleeps between them (parallel scavenges and concurrent marking run on V8's helpers,
// which under SCHED_IDLE run while the main thread sleeps), and reports every thread's policy and
// the CPU time it used meanwhile (/proc/<tid>/sched, in ms).
const CHILD = `
import { readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { idleV8PlatformThreads } from ${JSON.stringify(MODULE)};
await readFile('/proc/self/stat');
const sched = (tid) => readFileSync('/proc/self/task/' + tid + '/sched', 'utf8');
const runtime = (tid) => Number(/^se\\.sum_exec_runtime\\s*:\\s*([\\d.]+)/m.exec(sched(tid))[1]);
const policy = (tid) => Number(/^policy\\s*:\\s*(\\d+)/m.exec(sched(tid))[1]);
const result = idleV8PlatformThreads();
const before = new Map(readdirSync('/proc/self/task').map((tid) => [tid, runtime(tid)]));
let kept = [];
for (let burst = 0; burst < 40; burst++) {
  for (let i = 0; i < 50000; i++) kept.push({ burst, i, text: 'x'.repeat(i % 64) });
  if (kept.length > 600000) kept = [];
  await new Promise((done) => setTimeout(done, 5));
}
const threads = readdirSync('/proc/self/task').map((tid) => ({ tid: Number(tid), policy: policy(tid), ranMs: runtime(tid) - (before.get(tid) ?? 0) }));
process.stdout.write(JSON.stringify({ result, pid: process.pid, threads }));
`;

interface Report {
  readonly result: { readonly ok: boolean; readonly threads?: number; readonly reason?: string };
  readonly pid: number;
  readonly threads: readonly { readonly tid: number; readonly policy: number; readonly ranMs: number }[];
}

describe.runIf(process.platform === 'linux')('idleV8PlatformThreads', () => {
  it('puts exactly the threads doing V8 background work under SCHED_IDLE, and leaves libuv pool alone', () => {
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', CHILD], { encoding: 'utf8', timeout: 60_000 });
    expect(child.stderr).toBe('');
    const report = JSON.parse(child.stdout) as Report;
    expect(report.result).toEqual({ ok: true, threads: 5 });
    const others = report.threads.filter((t) => t.tid !== report.pid);
    const idle = others.filter((t) => t.policy === 5);
    expect(idle).toHaveLength(5);
    // Helpers ran GC work, and every thread besides the main one that ran is one of the five.
    expect(idle.some((t) => t.ranMs > 0)).toBe(true);
    expect(others.filter((t) => t.ranMs > 0 && t.policy !== 5)).toEqual([]);
    // Node 20 starts 6 threads before the main module (V8's 5, the inspector's signal thread) and
    // libuv's 4 on the first file read: those 5 keep the normal policy.
    expect(others.filter((t) => t.policy === 0).length).toBeGreaterThanOrEqual(5);
    expect(report.threads.find((t) => t.tid === report.pid)?.policy).toBe(0);
  });
});
