// `svc-agent loadtest` against an agent started here, ACLs on: each scenario's JSON result is sane
// and agrees with the agent's own counters, open loop sends exactly what was due, what the run
// seeded is gone afterwards, a target without the endpoint, or none at all, gets one clear line,
// and the HTML reports draw every chart in headless Chromium without a page error.
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startAgent, tempDir, type AgentProcess } from './support/agent-process.js';
import { launchChromium } from './support/browser.js';

const ROOT = 'loadtest-root';

/** Run in the page: each chart's id and how many of its canvas pixels are in its series' colours. */
const CHART_PIXELS = `[...document.querySelectorAll('[data-chart]')].map((el) => {
  const canvas = el.querySelector('canvas');
  const spec = JSON.parse(document.getElementById('charts').textContent).find((c) => c.id === el.id);
  if (canvas === null) return [el.id, 0];
  const colours = new Set(spec.series.map((s) => parseInt(s.color.slice(1), 16)));
  const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  let hits = 0;
  for (let i = 0; i < pixels.length; i += 4) if (pixels[i + 3] === 255 && colours.has((pixels[i] << 16) | (pixels[i + 1] << 8) | pixels[i + 2])) hits++;
  return [el.id, hits];
})`;

interface Result {
  schema: string;
  scenario: string;
  prefix: string;
  settings: { mode: string; connections: number; rate: number | null; seededIntentions: number; l7Intentions?: number };
  summary: {
    requests: number;
    ok: number;
    errors: Record<string, number>;
    achievedRps: number;
    dropped: number;
    drain: { requests: number };
    latencyUs: { p50: number; p99: number; max: number };
    outcomes: Record<string, { requests: number; rps: number; latencyUs: { p50: number } }>;
  };
  series: { t: number; requests: number }[];
  distribution: [number, number][];
  crossCheck: { counter: string; generatorCounted: number; targetCounted: number | null; agrees: boolean | null };
  propagation: {
    name: string;
    includes: string | null;
    agentMs: number | null;
    seen: number;
    missing: number;
    staleAfterAck: number | null;
    ms: { p50: number; max: number };
    samplesMs: number[];
  }[];
  facts: Record<string, number | string | null>;
  markers: { label: string; t: number }[];
}

describe('svc-agent loadtest', () => {
  let agent: AgentProcess;
  let dir: { path: string; remove: () => Promise<void> };
  beforeAll(async () => {
    dir = await tempDir('svc-loadtest-');
    agent = await startAgent({
      config: {
        acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: ROOT } },
        connect: { leaf_root_change_spread: '1s', ca_config: { csr_max_per_second: 0 } },
      },
    });
  });
  afterAll(async () => {
    await agent.stop();
    await dir.remove();
  });
  const loadtest = (...args: string[]) =>
    runCli(['loadtest', ...args], { SVC_HTTP_ADDR: `127.0.0.1:${agent.port}`, SVC_HTTP_TOKEN: ROOT }, 60_000);

  it("closed loop: a sane result that agrees with the agent's counters, and nothing left behind", async () => {
    const out = join(dir.path, 'closed.json');
    const run = await loadtest(
      'authorize',
      '-duration',
      '2s',
      '-warmup',
      '0s',
      '-connections',
      '8',
      '-intentions',
      '200',
      '-destinations',
      '20',
      '-out',
      out,
      '-report',
      join(dir.path, 'closed.html'),
    );
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('throughput');
    const r = JSON.parse(await readFile(out, 'utf8')) as Result;
    expect(r).toMatchObject({
      schema: 'svc-agent-loadtest/4',
      scenario: 'authorize',
      settings: { mode: 'closed', connections: 8, seededIntentions: 200, l7Intentions: 20 },
    });
    expect(r.summary.requests).toBeGreaterThan(0);
    expect(r.summary.ok).toBe(r.summary.requests);
    expect(r.summary.errors).toEqual({});
    expect(r.summary.latencyUs.p50).toBeGreaterThan(0);
    expect(r.summary.latencyUs.p99).toBeGreaterThanOrEqual(r.summary.latencyUs.p50);
    expect(r.summary.latencyUs.max).toBeGreaterThanOrEqual(r.summary.latencyUs.p99);
    // The windows hold every answer but the drain's (after the schedule's end), which is reported apart.
    expect(r.series.reduce((n, p) => n + p.requests, 0) + r.summary.drain.requests).toBe(r.summary.requests);
    expect(r.distribution.at(-1)?.[0]).toBe(100);
    expect(r.crossCheck).toMatchObject({
      counter: 'svc.connect.authorize.allowed + denied',
      generatorCounted: r.summary.ok,
      targetCounted: r.summary.ok,
      agrees: true,
    });
    // Allow and deny each have their own count and latency; denies are expected answers, not errors.
    const { allow, deny } = r.summary.outcomes;
    expect(allow!.requests + deny!.requests).toBe(r.summary.ok);
    expect(deny!.requests).toBeGreaterThan(0);
    expect(deny!.latencyUs.p50).toBeGreaterThan(0);
    const left = (await (
      await fetch(`${agent.url}/v1/connect/intentions`, { headers: { 'X-Svc-Token': ROOT } })
    ).json()) as { SourceName: string }[];
    expect(left.filter((x) => x.SourceName.startsWith(r.prefix))).toEqual([]);
  });

  it('open loop sends or drops exactly what falls due in the measured time', async () => {
    const out = join(dir.path, 'open.json');
    const run = await loadtest(
      'authorize',
      '-duration',
      '2s',
      '-warmup',
      '0s',
      '-rate',
      '500/s',
      '-connections',
      '4',
      '-intentions',
      '50',
      '-out',
      out,
    );
    expect(run.code).toBe(0);
    const r = JSON.parse(await readFile(out, 'utf8')) as Result;
    expect(r.settings).toMatchObject({ mode: 'open', rate: 500 });
    // Sending stops at -duration: a call still waiting for a connection then is dropped, and counted.
    expect(r.summary.requests + r.summary.dropped).toBe(1000);
    expect(r.crossCheck.agrees).toBe(true);
  });

  it('connection-rate: a new connection per call, counted as connections per second', async () => {
    const out = join(dir.path, 'conn.json');
    const run = await loadtest(
      'connection-rate',
      '-duration',
      '1s',
      '-warmup',
      '0s',
      '-connections',
      '4',
      '-intentions',
      '20',
      '-out',
      out,
    );
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('connections/s');
    const r = JSON.parse(await readFile(out, 'utf8')) as Result & { limitedBy: string };
    expect(r.scenario).toBe('connection-rate');
    expect(r.summary.requests).toBeGreaterThan(0);
    expect(r.summary.errors).toEqual({});
    expect(r.crossCheck.agrees).toBe(true);
    expect(typeof r.limitedBy).toBe('string');
  });

  it('kv: a read/write mix whose writes the agent counted, and watchers woken by them', async () => {
    const out = join(dir.path, 'kv.json');
    const run = await loadtest(
      'kv',
      '-duration',
      '2s',
      '-warmup',
      '0s',
      '-connections',
      '8',
      '-keys',
      '20',
      '-write-percent',
      '20',
      '-watchers',
      '10',
      '-out',
      out,
      '-report',
      join(dir.path, 'kv.html'),
    );
    expect(run.code).toBe(0);
    const r = JSON.parse(await readFile(out, 'utf8')) as Result;
    expect(r.summary.requests).toBeGreaterThan(0);
    expect(r.summary.errors).toEqual({});
    // Each write is one commit: the agent's index moved by exactly the writes sent.
    expect(r.crossCheck.generatorCounted).toBeGreaterThan(0);
    expect(r.crossCheck.agrees).toBe(true);
    const { read, write } = r.summary.outcomes;
    expect(read!.requests + write!.requests).toBe(r.summary.ok);
    expect(write!.requests).toBe(r.crossCheck.generatorCounted);
    expect(r.facts['writes sent']).toBe(r.crossCheck.generatorCounted);
    const wake = r.propagation.find((p) => p.name === 'write to watcher')!;
    expect(wake.seen).toBeGreaterThan(0);
    expect(wake.ms.p50).toBeGreaterThan(0);
    const left = await fetch(`${agent.url}/v1/kv/${r.prefix}?recurse`, { headers: { 'X-Svc-Token': ROOT } });
    expect(left.status).toBe(404);
  });

  it('leaf-wave: every service gets its first leaf, and the 429s of a limited agent are counted and retried', async () => {
    const out = join(dir.path, 'wave.json');
    const run = await loadtest('leaf-wave', '-services', '30', '-duration', '30s', '-out', out);
    expect(run.code).toBe(0);
    const r = JSON.parse(await readFile(out, 'utf8')) as Result;
    expect(r.summary.ok).toBe(30);
    expect(r.crossCheck).toMatchObject({
      counter: 'svc.connect.ca.leaf.issued',
      generatorCounted: 30,
      targetCounted: 30,
      agrees: true,
    });
    expect(r.facts['all issued in ms']).toEqual(expect.any(Number));

    const limited = await startAgent({ config: { connect: { ca_config: { csr_max_per_second: 10 } } } });
    try {
      const limitedOut = join(dir.path, 'wave-limited.json');
      const slow = await runCli(
        [
          'loadtest',
          'leaf-wave',
          '-http-addr',
          `127.0.0.1:${limited.port}`,
          '-services',
          '25',
          '-duration',
          '60s',
          '-out',
          limitedOut,
        ],
        {},
        90_000,
      );
      expect(slow.code).toBe(0);
      const l = JSON.parse(await readFile(limitedOut, 'utf8')) as Result;
      expect(l.summary.ok).toBe(25);
      // The agent's intended throttling is its own outcome, not an error.
      expect(l.summary.errors).toEqual({});
      const throttled = l.summary.outcomes.throttled!.requests;
      expect(throttled).toBeGreaterThan(0);
      expect(l.facts['throttled (429, retried after Retry-After)']).toBe(throttled);
      expect(l.facts['throttled, as the target counted']).toBe(throttled);
      expect(slow.stdout).toMatch(/throttled +\d+ \(\d+\/s\)/);
    } finally {
      await limited.stop();
    }
  });

  it('proxies: intention changes and a CA rotation reach every proxy, and authorize calls agree with the agent', async () => {
    const out = join(dir.path, 'proxies.json');
    const run = await loadtest(
      'proxies',
      '-proxies',
      '40',
      '-inbound-rate',
      '20/s',
      '-changes',
      '2',
      '-allow-writes',
      '-duration',
      '2s',
      '-warmup',
      '0s',
      '-out',
      out,
      '-report',
      join(dir.path, 'proxies.html'),
    );
    expect(run.code, run.stderr).toBe(0);
    const r = JSON.parse(await readFile(out, 'utf8')) as Result;
    expect(r.summary.errors).toEqual({});
    expect(r.crossCheck.agrees).toBe(true);
    expect(r.propagation.map((p) => p.name)).toEqual([
      'intention deny #1',
      'intention allow #2',
      'CA roots',
      'CA leaf',
    ]);
    for (const p of r.propagation) {
      expect(p).toMatchObject({ seen: 40, missing: 0 });
      expect(p.samplesMs).toHaveLength(40);
    }
    // One agent answers from the index it just wrote: no proxy was told the old answer after the ack.
    expect(r.propagation.slice(0, 2).map((p) => p.staleAfterAck)).toEqual([0, 0]);
    // Propagation to a proxy includes its call cadence, and says so; the agent's own part is apart.
    for (const p of r.propagation.slice(0, 2)) {
      expect(p.includes).toMatch(/^the proxies' call cadence/);
      expect(p.agentMs).toEqual(expect.any(Number));
    }
    expect(r.facts['proxies started']).toBe(40);
    // Each change is a moment on the report's timelines.
    expect(r.markers.map((m) => m.label)).toEqual(
      expect.arrayContaining(['intention deny #1', 'intention allow #2', 'CA rotation']),
    );
    expect(r.markers.every((m) => m.t >= 0 && m.t <= 3)).toBe(true);
    expect(run.stderr).toMatch(
      /this run takes about \d+ s after the proxies start, then up to 2m \(-rotation-timeout\)/,
    );
    const left = (await (
      await fetch(`${agent.url}/v1/connect/intentions`, { headers: { 'X-Svc-Token': ROOT } })
    ).json()) as { SourceName: string }[];
    expect(left.filter((x) => x.SourceName.startsWith(r.prefix))).toEqual([]);
  });

  it("speaks Consul's header brand, chosen by -header-brand or by a CONSUL_HTTP_ADDR target", async () => {
    const consulish = await startAgent({
      config: {
        http_config: { header_brand: 'Consul' },
        acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: ROOT } },
      },
    });
    try {
      for (const [args, env] of [
        [['-header-brand', 'Consul', '-http-addr', `127.0.0.1:${consulish.port}`, '-token', ROOT], {}],
        [[], { CONSUL_HTTP_ADDR: `127.0.0.1:${consulish.port}`, CONSUL_HTTP_TOKEN: ROOT }],
      ] as const) {
        const out = join(dir.path, 'consul-brand.json');
        // Watchers read X-Consul-Index (woken only when they do) and every call carries X-Consul-Token (ACLs deny without it).
        const run = await runCli(
          [
            'loadtest',
            'kv',
            ...args,
            '-duration',
            '1s',
            '-warmup',
            '0s',
            '-connections',
            '4',
            '-keys',
            '5',
            '-watchers',
            '5',
            '-out',
            out,
          ],
          env,
          60_000,
        );
        expect(run.code, run.stderr).toBe(0);
        const r = JSON.parse(await readFile(out, 'utf8')) as Result;
        expect(r.summary.errors).toEqual({});
        expect(r.propagation[0]!.seen).toBeGreaterThan(0);
      }
    } finally {
      await consulish.stop();
    }
  });

  it('proxies: a token that may not rotate the CA ends the run in one line, with its intention removed', async () => {
    const put = (path: string, body: unknown) =>
      fetch(`${agent.url}${path}`, { method: 'PUT', headers: { 'X-Svc-Token': ROOT }, body: JSON.stringify(body) });
    expect(
      (
        await put('/v1/acl/policy', {
          Name: 'proxies-no-operator',
          Rules: 'service_prefix "" { policy = "write" intentions = "write" }',
        })
      ).status,
    ).toBe(200);
    const token = (
      (await (await put('/v1/acl/token', { Policies: [{ Name: 'proxies-no-operator' }] })).json()) as {
        SecretID: string;
      }
    ).SecretID;
    const run = await runCli(
      [
        'loadtest',
        'proxies',
        '-http-addr',
        `127.0.0.1:${agent.port}`,
        '-token',
        token,
        '-proxies',
        '5',
        '-inbound-rate',
        '10/s',
        '-changes',
        '0',
        '-allow-writes',
        '-duration',
        '1s',
        '-warmup',
        '0s',
      ],
      {},
      60_000,
    );
    expect(run.code).toBe(1);
    expect(run.stderr.trim().split('\n').at(-1)).toMatch(
      /^Error reading the CA configuration: Unexpected response code: 403 /,
    );
    expect(run.stderr).not.toMatch(/\n\s+at /); // no stack trace
    const left = (await (
      await fetch(`${agent.url}/v1/connect/intentions`, { headers: { 'X-Svc-Token': ROOT } })
    ).json()) as { SourceName: string; DestinationName: string }[];
    expect(left.filter((x) => x.SourceName.startsWith('lt-') && x.DestinationName === '*')).toEqual([]);
  });

  it('compare puts two runs side by side, and refuses a file that is not a result', async () => {
    const cmp = await runCli([
      'loadtest',
      'compare',
      join(dir.path, 'closed.json'),
      join(dir.path, 'open.json'),
      '-force',
      '-report',
      join(dir.path, 'diff.html'),
    ]);
    expect(cmp.code, cmp.stderr).toBe(0);
    expect(cmp.stdout.split('\n')[0]).toBe(
      'UNLIKE RUNS compared (-force): mode closed vs open; rate none asked vs 500/s',
    );
    expect(cmp.stdout).toMatch(/achieved .* \d+\.\d\dx\n/);
    // A version 1 result (the first release's) still compares.
    type V3 = Record<string, unknown> & {
      crossCheck: { generatorCounted: number; targetCounted: number; agrees: boolean };
      summary: Record<string, unknown> & { achievedRps: number };
      settings: Record<string, unknown>;
    };
    const v3 = JSON.parse(await readFile(join(dir.path, 'closed.json'), 'utf8')) as V3;
    const {
      unit: _u,
      propagation: _p,
      facts: _f,
      startedAt: _s,
      stages: _st,
      findMax: _fm,
      thresholds: _t,
      markers: _m,
      ...rest
    } = v3;
    const { achievedRps, askedRps: _a, late: _l, dropped: _d, outcomes: _o, ...summary } = v3.summary;
    const { stages: _ss, findMax: _sf, ...settings } = v3.settings;
    const v1 = {
      ...rest,
      schema: 'svc-agent-loadtest/1',
      settings,
      summary: { ...summary, rps: achievedRps },
      crossCheck: {
        generatorAnswered: v3.crossCheck.generatorCounted,
        targetCounted: v3.crossCheck.targetCounted,
        agrees: v3.crossCheck.agrees,
      },
    };
    await writeFile(join(dir.path, 'v1.json'), JSON.stringify(v1));
    // An older schema is an unlike run: compared with -force, as it was.
    const refused = await runCli(['loadtest', 'compare', join(dir.path, 'v1.json'), join(dir.path, 'closed.json')]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('schema svc-agent-loadtest/1 vs svc-agent-loadtest/4');
    const old = await runCli([
      'loadtest',
      'compare',
      join(dir.path, 'v1.json'),
      join(dir.path, 'closed.json'),
      '-force',
    ]);
    expect(old.code, old.stderr).toBe(0);
    expect(old.stdout).toMatch(/achieved .* 1\.00x\n/);
    const bad = await runCli(['loadtest', 'compare', join(dir.path, 'closed.json'), join(dir.path, 'closed.html')]);
    expect(bad).toMatchObject({
      code: 1,
      stderr: `${join(dir.path, 'closed.html')} is not JSON: expected a result written by svc-agent loadtest -out\n`,
    });
  });

  describe('HTML reports in headless Chromium', () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await launchChromium();
    }, 900_000);
    afterAll(async () => {
      await browser?.close();
    });

    for (const [file, charts] of [
      ['closed.html', ['throughput', 'latency', 'distribution', 'errors']],
      ['kv.html', ['throughput', 'latency', 'distribution', 'errors', 'propagation']],
      ['proxies.html', ['throughput', 'latency', 'distribution', 'errors', 'propagation']],
      ['diff.html', ['throughput', 'latency', 'distribution', 'errors']],
    ] as const) {
      it(`${file} draws each chart and logs no error`, async () => {
        const page = await browser.newPage();
        const problems: string[] = [];
        page.on('pageerror', (err) => problems.push(err.message));
        page.on('console', (m) => void (m.type() === 'error' && problems.push(m.text())));
        page.on('request', (req) => void (req.url().startsWith('file:') || problems.push(`fetched ${req.url()}`)));
        await page.goto(`file://${join(dir.path, file)}`);
        // A chart drew when its canvas holds pixels in its series' colours (not only axes and grid).
        const drawn = (await page.evaluate(CHART_PIXELS)) as [string, number][];
        expect(drawn.map(([id]) => id)).toEqual(charts);
        for (const [id, hits] of drawn) expect(hits, `chart ${id}`).toBeGreaterThan(0);
        expect(problems).toEqual([]);
        await page.close();
      });
    }
  });

  it('lists its scenarios and flags, and refuses bad flags in one line', async () => {
    const help = await runCli(['loadtest', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Scenarios:\n {4}authorize /);
    expect(help.stdout).toContain('-rate=<value>');
    expect((await runCli(['help', 'loadtest'])).stdout).toBe(help.stdout.replace(/\n$/, '') + '\n');
    const bad = await loadtest('authorize', '-rate', 'fast');
    expect(bad).toMatchObject({
      code: 1,
      stderr: 'invalid value "fast" for flag -rate: expected requests per second, such as 5000/s\n',
    });
    expect((await loadtest('nosuch')).stderr).toBe(
      'Unknown scenario "nosuch": one of authorize, connection-rate, proxies, leaf-wave, kv, http, mesh, or compare (svc-agent loadtest --help)\n',
    );
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
    expect(down.stderr.trim().split('\n').at(-1)).toBe(
      `Error connecting to the agent at http://127.0.0.1:${port}: dial tcp 127.0.0.1:${port}: connect: connection refused`,
    );
    const noConnect = await startAgent({ config: { connect: { enabled: false } } });
    try {
      const run = await runCli([
        'loadtest',
        'authorize',
        '-http-addr',
        `127.0.0.1:${noConnect.port}`,
        '-duration',
        '1s',
      ]);
      expect(run.code).toBe(1);
      expect(run.stderr.trim().split('\n').at(-1)).toMatch(/^The target does not serve .*Connect/);
      for (const scenario of ['proxies', 'leaf-wave']) {
        const other = await runCli([
          'loadtest',
          scenario,
          '-http-addr',
          `127.0.0.1:${noConnect.port}`,
          '-duration',
          '1s',
        ]);
        expect(other.code).toBe(1);
        expect(other.stderr.trim().split('\n').at(-1)).toMatch(/^The target does not serve .*Connect/);
      }
    } finally {
      await noConnect.stop();
    }
  });
});
