// `svc-agent loadtest` against an agent started here, ACLs on: the JSON result is sane and agrees
// with the agent's own counters, open loop sends exactly what was due, what the run seeded is gone
// afterwards, and a target without the endpoint, or none at all, gets one clear line.
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startAgent, tempDir, type AgentProcess } from './support/agent-process.js';

const ROOT = 'loadtest-root';

interface Result {
  schema: string;
  scenario: string;
  prefix: string;
  settings: { mode: string; connections: number; rate: number | null; seededIntentions: number };
  summary: { requests: number; ok: number; errors: Record<string, number>; rps: number; latencyUs: { p50: number; p99: number; max: number } };
  series: { t: number; requests: number }[];
  distribution: [number, number][];
  crossCheck: { generatorAnswered: number; targetCounted: number | null; agrees: boolean | null };
}

describe('svc-agent loadtest', () => {
  let agent: AgentProcess;
  let dir: { path: string; remove: () => Promise<void> };
  beforeAll(async () => {
    dir = await tempDir('svc-loadtest-');
    agent = await startAgent({ config: { acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: ROOT } } } });
  });
  afterAll(async () => {
    await agent.stop();
    await dir.remove();
  });
  const loadtest = (...args: string[]) => runCli(['loadtest', ...args], { SVC_HTTP_ADDR: `127.0.0.1:${agent.port}`, SVC_HTTP_TOKEN: ROOT }, 60_000);

  it('closed loop: a sane result that agrees with the agent\'s counters, and nothing left behind', async () => {
    const out = join(dir.path, 'closed.json');
    const run = await loadtest('authorize', '-duration', '2s', '-warmup', '0s', '-connections', '8', '-intentions', '200', '-destinations', '20', '-out', out);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('throughput');
    const r = JSON.parse(await readFile(out, 'utf8')) as Result;
    expect(r).toMatchObject({ schema: 'svc-agent-loadtest/1', scenario: 'authorize', settings: { mode: 'closed', connections: 8, seededIntentions: 200 } });
    expect(r.summary.requests).toBeGreaterThan(0);
    expect(r.summary.ok).toBe(r.summary.requests);
    expect(r.summary.errors).toEqual({});
    expect(r.summary.latencyUs.p50).toBeGreaterThan(0);
    expect(r.summary.latencyUs.p99).toBeGreaterThanOrEqual(r.summary.latencyUs.p50);
    expect(r.summary.latencyUs.max).toBeGreaterThanOrEqual(r.summary.latencyUs.p99);
    expect(r.series.reduce((n, p) => n + p.requests, 0)).toBe(r.summary.requests);
    expect(r.distribution.at(-1)?.[0]).toBe(100);
    expect(r.crossCheck).toEqual({ generatorAnswered: r.summary.ok, targetCounted: r.summary.ok, agrees: true });
    const left = (await (await fetch(`${agent.url}/v1/connect/intentions`, { headers: { 'X-Svc-Token': ROOT } })).json()) as { SourceName: string }[];
    expect(left.filter((x) => x.SourceName.startsWith(r.prefix))).toEqual([]);
  });

  it('open loop sends exactly what falls due in the measured time', async () => {
    const out = join(dir.path, 'open.json');
    const run = await loadtest('authorize', '-duration', '2s', '-warmup', '0s', '-rate', '500/s', '-connections', '4', '-intentions', '50', '-out', out);
    expect(run.code).toBe(0);
    const r = JSON.parse(await readFile(out, 'utf8')) as Result;
    expect(r.settings).toMatchObject({ mode: 'open', rate: 500 });
    expect(r.summary.requests).toBe(1000);
    expect(r.crossCheck.agrees).toBe(true);
  });

  it('connection-rate: a new connection per call, counted as connections per second', async () => {
    const out = join(dir.path, 'conn.json');
    const run = await loadtest('connection-rate', '-duration', '1s', '-warmup', '0s', '-connections', '4', '-intentions', '20', '-out', out);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('connections/s');
    const r = JSON.parse(await readFile(out, 'utf8')) as Result & { limitedBy: string };
    expect(r.scenario).toBe('connection-rate');
    expect(r.summary.requests).toBeGreaterThan(0);
    expect(r.summary.errors).toEqual({});
    expect(r.crossCheck.agrees).toBe(true);
    expect(typeof r.limitedBy).toBe('string');
  });

  it('lists its scenarios and flags, and refuses bad flags in one line', async () => {
    const help = await runCli(['loadtest', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Scenarios:\n {4}authorize /);
    expect(help.stdout).toContain('-rate=<value>');
    expect((await runCli(['help', 'loadtest'])).stdout).toBe(help.stdout.replace(/\n$/, '') + '\n');
    const bad = await loadtest('authorize', '-rate', 'fast');
    expect(bad).toMatchObject({ code: 1, stderr: 'invalid value "fast" for flag -rate: expected requests per second, such as 5000/s\n' });
    expect((await loadtest('nosuch')).stderr).toBe('Unknown scenario "nosuch": one of authorize, connection-rate (svc-agent loadtest --help)\n');
  });

  it('says in one line when the target is down or does not serve the endpoint', async () => {
    const port = await new Promise<number>((done) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => done(p));
      });
    });
    const down = await runCli(['loadtest', 'authorize', '-http-addr', `127.0.0.1:${port}`]);
    expect(down.code).toBe(1);
    expect(down.stderr.trim().split('\n').at(-1)).toBe(`Error connecting to the agent at http://127.0.0.1:${port}: ECONNREFUSED`);
    const noConnect = await startAgent({ config: { connect: { enabled: false } } });
    try {
      const run = await runCli(['loadtest', 'authorize', '-http-addr', `127.0.0.1:${noConnect.port}`, '-duration', '1s']);
      expect(run.code).toBe(1);
      expect(run.stderr.trim().split('\n').at(-1)).toMatch(/^The target does not serve .*Connect/);
    } finally {
      await noConnect.stop();
    }
  });
});
