// Running the agent: persistence across kill -9, graceful stop, start-up errors, the uWS check, the
// event loop's scheduler slice, V8's helper threads under SCHED_IDLE.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { sliceUnsupported } from '../../src/core/thread-scheduling.js';
import { runCli, startAgent, tempDir } from './support/agent-process.js';
import { get, openRequest } from './support/raw-http.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe('persistence with -data-dir', () => {
  it('keeps every acknowledged write across kill -9, and the index clock does not go back', async () => {
    const dir = await tempDir();
    cleanups.push(dir.remove);
    const first = await startAgent({ dataDir: dir.path });
    const writes = await Promise.all(
      Array.from({ length: 200 }, (_, i) => fetch(`${first.url}/v1/kv/p/${i}`, { method: 'PUT', body: `v${i}` })),
    );
    expect(writes.every((r) => r.status === 200)).toBe(true);
    await fetch(`${first.url}/v1/kv/p/7`, { method: 'DELETE' });
    const lastIndex = Number((await fetch(`${first.url}/v1/kv/p/?recurse`)).headers.get('x-svc-index'));
    const self = (await (await fetch(`${first.url}/v1/agent/self`)).json()) as { Config: { NodeID: string } };
    expect(await first.stop('SIGKILL')).toBe('SIGKILL');

    const second = await startAgent({ dataDir: dir.path });
    cleanups.push(() => second.stop());
    const rows = (await (await fetch(`${second.url}/v1/kv/p/?recurse`)).json()) as { Key: string; Value: string }[];
    expect(rows).toHaveLength(199);
    expect(rows.find((r) => r.Key === 'p/7')).toBeUndefined();
    expect(Buffer.from(rows.find((r) => r.Key === 'p/42')!.Value, 'base64').toString()).toBe('v42');
    expect(Number((await fetch(`${second.url}/v1/kv/p/?recurse`)).headers.get('x-svc-index'))).toBe(lastIndex);
    await fetch(`${second.url}/v1/kv/p/new`, { method: 'PUT', body: 'n' });
    expect(Number((await fetch(`${second.url}/v1/kv/p/new`)).headers.get('x-svc-index'))).toBeGreaterThan(lastIndex);
    const again = (await (await fetch(`${second.url}/v1/agent/self`)).json()) as { Config: { NodeID: string } };
    expect(again.Config.NodeID).toBe(self.Config.NodeID);
  });

  it('refuses a second agent on the same data dir', async () => {
    const dir = await tempDir();
    cleanups.push(dir.remove);
    const first = await startAgent({ dataDir: dir.path });
    cleanups.push(() => first.stop());
    const second = await runCli(['agent', '-data-dir', dir.path, '-http-port', '0']);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/lock/i);
  });
});

/** Resolves once the agent's parked-queries gauge reads `count`; vitest's test timeout is the hang guard. */
async function parkedQueries(url: string, count: number): Promise<void> {
  for (;;) {
    const body = (await (await fetch(`${url}/v1/agent/metrics`)).json()) as { Gauges: { Name: string; Value: number }[] };
    if (body.Gauges.find((g) => g.Name === 'svc.blocking.parked')?.Value === count) return;
    await new Promise((r) => setImmediate(r));
  }
}

describe('graceful stop', () => {
  it('on SIGTERM answers parked queries with current data and exits 0', async () => {
    const agent = await startAgent();
    await fetch(`${agent.url}/v1/kv/stop/me`, { method: 'PUT', body: 'x' });
    const index = Number((await fetch(`${agent.url}/v1/kv/stop/me`)).headers.get('x-svc-index'));
    const { socket, response } = await openRequest(agent.port, get(`/v1/kv/stop/me?index=${index}&wait=60s`));
    cleanups.push(async () => socket.destroy());
    await parkedQueries(agent.url, 1);
    const exit = agent.stop('SIGTERM');
    const answered = await response;
    expect(answered.status).toBe(200);
    expect(Number(answered.headers['x-svc-index'])).toBe(index);
    expect(await exit).toBe(0);
  });
});

describe('start-up', () => {
  it('stops with exit 1 on an unknown flag', async () => {
    const out = await runCli(['agent', '-dev', '-bogus']);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain('flag provided but not defined: -bogus');
  });

  it('stops with exit 1 on a bad config value, naming the key and what is expected', async () => {
    const dir = await tempDir('svc-cfg-');
    cleanups.push(dir.remove);
    const file = `${dir.path}/bad.json`;
    await import('node:fs/promises').then((fs) => fs.writeFile(file, JSON.stringify({ acl: { default_policy: 'maybe' } })));
    const out = await runCli(['agent', '-dev', '-config-file', file]);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain('acl.default_policy');
    expect(out.stderr).toContain('"allow"');
  });

  it('requires a data dir unless -dev is given', async () => {
    const out = await runCli(['agent', '-http-port', '0']);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain('data_dir');
  });

  it('logs one start-up line with address, node, datacenter, data dir and the uWS binary', async () => {
    const agent = await startAgent({ args: ['-node', 'n1', '-datacenter', 'east'] });
    cleanups.push(() => agent.stop());
    const line = agent.logs.find((l) => l.msg === 'svc-agent started')!;
    expect(line).toMatchObject({ node: 'n1', datacenter: 'east', dataDir: null, uwsNative: true });
    expect(line.address).toBe(`127.0.0.1:${agent.port}`);
  });

  describe.runIf(sliceUnsupported() === undefined)('performance.event_loop_slice', () => {
    /** The slice of the agent's main thread (its tid is its pid), where the kernel shows slices. */
    const sliceOf = (pid: number): number | undefined => {
      const match = existsSync(`/proc/${pid}/sched`) ? /^se\.slice\s*:\s*(\d+)/m.exec(readFileSync(`/proc/${pid}/sched`, 'utf8')) : null;
      return match === null ? undefined : Number(match[1]);
    };
    const defaultSlice = sliceOf(process.pid);

    it.runIf(defaultSlice !== undefined)('gives the event loop a 100us slice by default and says so at start-up', async () => {
      const agent = await startAgent();
      cleanups.push(() => agent.stop());
      expect(agent.logs.find((l) => l.msg === 'svc-agent started')).toMatchObject({ eventLoopSlice: '0.1ms' });
      expect(agent.logs.some((l) => l.level === 40)).toBe(false);
      expect(sliceOf(agent.child.pid!)).toBe(100_000);
    });

    it.runIf(defaultSlice !== undefined)('leaves the kernel default with 0s', async () => {
      const agent = await startAgent({ config: { performance: { event_loop_slice: '0s' } } });
      cleanups.push(() => agent.stop());
      expect(agent.logs.find((l) => l.msg === 'svc-agent started')).toMatchObject({ eventLoopSlice: 'kernel default' });
      expect(sliceOf(agent.child.pid!)).toBe(defaultSlice);
    });

    it('warns and starts anyway when the slice cannot be set', async () => {
      const agent = await startAgent({ env: { PATH: '/nonexistent' } });
      cleanups.push(() => agent.stop());
      const warning = agent.logs.find((l) => l.msg === 'the event loop keeps the kernel default slice');
      expect(warning).toMatchObject({ level: 40, eventLoopSlice: '0.1ms', reason: expect.stringMatching(/^perl failed: .*ENOENT/) });
      expect(agent.logs.find((l) => l.msg === 'svc-agent started')).toMatchObject({ eventLoopSlice: 'kernel default' });
    });
  });

  describe.runIf(process.platform === 'linux')('performance.v8_threads', () => {
    /** The agent's threads other than the main one, in the order they started, with their policies. */
    const threadsOf = (pid: number): { tid: number; policy: number }[] =>
      readdirSync(`/proc/${pid}/task`)
        .map(Number)
        .filter((tid) => tid !== pid)
        .map((tid) => {
          const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
          const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
          return { tid, start: Number(fields[19]), policy: Number(fields[38]) };
        })
        .sort((a, b) => a.start - b.start || a.tid - b.tid);
    const SCHED_IDLE = 5;
    // The signing thread at nice +10 rather than under SCHED_IDLE, to tell V8's threads apart.
    const signingLow = { connect: { signing_priority: 'low' } };

    it('runs the first five threads node starts (V8\'s platform) under SCHED_IDLE by default, and no other', async () => {
      const agent = await startAgent({ config: signingLow });
      cleanups.push(() => agent.stop());
      expect(agent.logs.find((l) => l.msg === 'svc-agent started')).toMatchObject({ v8Threads: 'idle' });
      const threads = threadsOf(agent.child.pid!);
      expect(threads.slice(0, 5).map((t) => t.policy)).toEqual([SCHED_IDLE, SCHED_IDLE, SCHED_IDLE, SCHED_IDLE, SCHED_IDLE]);
      // The rest (the inspector's signal thread, libuv's pool, the signing thread) keep theirs.
      expect(threads.slice(5).length).toBeGreaterThan(0);
      expect(threads.slice(5).every((t) => t.policy === 0)).toBe(true);
      expect(readFileSync(`/proc/${agent.child.pid!}/stat`, 'utf8').split(') ')[1]?.split(' ')[38]).toBe('0');
    });

    it('leaves them alone with "normal"', async () => {
      const agent = await startAgent({ config: { ...signingLow, performance: { v8_threads: 'normal' } } });
      cleanups.push(() => agent.stop());
      expect(agent.logs.find((l) => l.msg === 'svc-agent started')).toMatchObject({ v8Threads: 'normal' });
      expect(threadsOf(agent.child.pid!).every((t) => t.policy === 0)).toBe(true);
    });

    it('warns and starts anyway when chrt is missing', async () => {
      const agent = await startAgent({ config: { performance: { event_loop_slice: '0s' } }, env: { PATH: '/nonexistent' } });
      cleanups.push(() => agent.stop());
      const warning = agent.logs.find((l) => l.msg === "V8's helper threads keep their normal priority");
      expect(warning).toMatchObject({ level: 40, reason: expect.stringMatching(/^chrt failed: .*ENOENT/) });
      expect(agent.logs.find((l) => l.msg === 'svc-agent started')).toMatchObject({ v8Threads: 'normal' });
    });
  });

  it('refuses to start on the uWS JavaScript fallback unless SVC_ALLOW_UWS_FALLBACK=1', async () => {
    const refused = await runCli(['agent', '-dev', '-http-port', '0'], { UWS_USE_FALLBACK: '1' });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('SVC_ALLOW_UWS_FALLBACK=1');
    const allowed = await startAgent({ env: { UWS_USE_FALLBACK: '1', SVC_ALLOW_UWS_FALLBACK: '1' } });
    cleanups.push(() => allowed.stop());
    expect(allowed.logs.find((l) => l.msg === 'svc-agent started')).toMatchObject({ uwsNative: false });
  });

  it('prints its version', async () => {
    const out = await runCli(['version']);
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/^svc-agent v\d+\.\d+\.\d+\n$/);
  });
});
