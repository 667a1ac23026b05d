// The load tool's numbers add up (issue 45), against a target of known capacity started here
// (support/fixed-rate-server.ts: exactly CAPACITY calls a second, the rest queued): -find-max finds
// the capacity within 10% in 3 of 3 runs; each stage's rate (a ramp, holds, a pause) is right to 2%
// over its own window; the console, the JSON and the HTML of one run give the same figures (all
// three parsed); thresholds print their units; the reports read in headless Chromium at 900 and
// 1,600 px with no wrapped cell and legends equal to the summary; compare prints separators and a
// missing file gets one line naming it. Rates here stay well below what the generator sends on a
// loaded 2-core machine; nothing asserts the machine's timings.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, tempDir } from './support/agent-process.js';
import { launchChromium } from './support/browser.js';
import { FixedRateServer } from './support/fixed-rate-server.js';

const CAPACITY = 2000;

interface Stage {
  kind: string;
  rate: number;
  to: number;
  durationMs: number;
  askedRps: number;
  achievedRps: number;
  answered: number;
  dropped: number;
  latencyUs: { p50: number; p99: number };
}
interface Result {
  summary: {
    elapsedMs: number;
    requests: number;
    askedRps: number | null;
    achievedRps: number;
    answered: number;
    dropped: number;
    late: number;
    drain: { ms: number; requests: number };
    latencyUs: { p50: number; p90: number; p99: number; p999: number; max: number };
  };
  stages: Stage[];
  series: { t: number; startMs: number; endMs: number; answered: number; achievedRps: number }[];
  thresholds: { threshold: string; passed: boolean; actual: number; unit: string }[];
  findMax: {
    highestHeldRps: number | null;
    confirmed: { askedRps: number; achievedRps: number; durationMs: number } | null;
    steps: { askedRps: number; achievedRps: number; held: boolean; confirm: boolean; durationMs: number }[];
    stepMs: number;
    clientLimited: boolean;
  } | null;
  limitedBy: string;
}

/** A number as the tool prints it (`1,234.5`). */
const n = (text: string | undefined): number => Number((text ?? 'NaN').replace(/,/g, ''));
const within = (actual: number, expected: number, share: number): boolean =>
  Math.abs(actual - expected) <= share * expected;

/** In the page: cells taller than one line, whether the tables fit the page's width, and each chart's legend keys. */
const LAYOUT = `(() => {
  const wrapped = [...document.querySelectorAll('.tables td, .tables th')].filter((c) => {
    const cs = getComputedStyle(c);
    const line = parseFloat(cs.lineHeight) || parseFloat(cs.fontSize) * 1.4;
    return c.clientHeight - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom) > line * 1.5;
  }).map((c) => c.textContent);
  const tables = document.querySelector('.tables');
  const keys = Object.fromEntries([...document.querySelectorAll('[data-chart]')].map((el) => [el.id, [...el.querySelectorAll('.key')].map((k) => k.textContent)]));
  return { wrapped, fits: tables.scrollWidth <= tables.clientWidth, pageFits: document.documentElement.scrollWidth <= document.documentElement.clientWidth, keys };
})()`;
interface Layout {
  wrapped: string[];
  fits: boolean;
  pageFits: boolean;
  keys: Record<string, string[]>;
}

describe('svc-agent loadtest: rates that add up, against a target of known capacity', () => {
  let target: FixedRateServer;
  let port: number;
  let dir: { path: string; remove: () => Promise<void> };
  let browser: Browser;
  beforeAll(async () => {
    dir = await tempDir('svc-loadtest-rates-');
    target = new FixedRateServer(CAPACITY);
    port = await target.listen();
    browser = await launchChromium();
  }, 900_000);
  afterAll(async () => {
    await browser?.close();
    await target.close();
    await dir.remove();
  });
  const loadtest = (...args: string[]) =>
    runCli(
      [
        'loadtest',
        'http',
        '-http-addr',
        `127.0.0.1:${port}`,
        '-path',
        '/',
        '-warmup',
        '0s',
        // Enough connections that calls queue at the target, whose rate is the limit, not at the
        // generator behind connections held by a busy machine's slow round trips.
        '-connections',
        '256',
        ...args,
      ],
      {},
      120_000,
    );
  const file = (name: string): string => join(dir.path, name);
  const read = async (name: string): Promise<Result> => JSON.parse(await readFile(file(name), 'utf8')) as Result;
  const layoutAt = async (html: string, width: number): Promise<Layout> => {
    const page: Page = await browser.newPage({ viewport: { width, height: 1000 } });
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    await page.goto(`file://${file(html)}`);
    const layout = (await page.evaluate(LAYOUT)) as Layout;
    await page.close();
    expect(problems).toEqual([]);
    return layout;
  };

  // A ramp, a hold, a pause and a hold, all below the capacity; thresholds with their units.
  const STAGES = '4s:200-1000,4s:1000,2s:0,4s:600';
  let stagesRun: { code: number | null; stdout: string; stderr: string };
  beforeAll(async () => {
    stagesRun = await loadtest(
      '-stages',
      STAGES,
      // Connections open and warm before the ramp starts.
      '-warmup',
      '1s',
      '-threshold',
      'p50<1us',
      '-threshold',
      'p99<10s',
      '-threshold',
      'rate>=0.95*asked',
      '-out',
      file('stages.json'),
      '-report',
      file('stages.html'),
    );
  }, 120_000);

  it('stages: a ramp, holds and a pause each get their rate right to 2% over their own window', async () => {
    expect(stagesRun.code, stagesRun.stderr).toBe(2); // p50<1us cannot hold
    const r = await read('stages.json');
    expect(r.stages.map((s) => [s.kind, s.durationMs, s.askedRps])).toEqual([
      ['ramp', 4000, 600], // 200 to 1,000 over 4 s: 2,400 calls
      ['hold', 4000, 1000],
      ['pause', 2000, 0],
      ['hold', 4000, 600],
    ]);
    for (const s of r.stages.filter((x) => x.kind !== 'pause'))
      expect(within(s.achievedRps, s.askedRps, 0.02), JSON.stringify(s)).toBe(true);
    // The pause is reported as such: what came in during it is at most the last answers of the stage before.
    const pause = r.stages[2]!;
    expect(pause.achievedRps).toBeLessThanOrEqual(0.02 * 1000);
    // The run: asked and achieved over the same 14 s, pause included (8,800 calls).
    expect(r.summary.elapsedMs).toBe(14_000);
    expect(r.summary.askedRps).toBe(629);
    expect(within(r.summary.achievedRps, 629, 0.02)).toBe(true);
    expect(r.limitedBy).toBe('nothing: the target served the rate asked');
    // Windows: every second, none past the schedule's end; the drain apart.
    expect(r.series.map((p) => p.t)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
    expect(r.series.reduce((sum, p) => sum + p.answered, 0)).toBe(r.summary.answered);
    expect(r.summary.answered + r.summary.drain.requests).toBe(r.summary.requests);
  });

  it('the console, the JSON and the HTML of one run give the same figures', async () => {
    const r = await read('stages.json');
    const out = stagesRun.stdout;
    // Console.
    const header = /, ([\d.]+) s(?: \(\+ ([\d,]+) ms drain\))?\n/.exec(out)!;
    expect(n(header[1]) * 1000).toBe(r.summary.elapsedMs);
    expect(n(header[2] ?? '0')).toBe(r.summary.drain.ms);
    expect(n(/requests +([\d,]+)/.exec(out)?.[1])).toBe(r.summary.requests);
    const rate =
      /throughput +([\d,]+) req\/s achieved of ([\d,]+)\/s asked over ([\d.]+) s; ([\d,]+) calls dropped, ([\d,]+) late/.exec(
        out,
      )!;
    expect([n(rate[1]), n(rate[2]), n(rate[3]) * 1000, n(rate[4]), n(rate[5])]).toEqual([
      r.summary.achievedRps,
      r.summary.askedRps,
      r.summary.elapsedMs,
      r.summary.dropped,
      r.summary.late,
    ]);
    const lat = /latency ms +p50 ([\d.]+) +p90 ([\d.]+) +p99 ([\d.]+) +p99\.9 ([\d.]+) +max ([\d.]+)/.exec(out)!;
    const msOf = (us: number): number => Number((us / 1000).toFixed(2));
    expect(lat.slice(1).map(Number)).toEqual(
      [
        r.summary.latencyUs.p50,
        r.summary.latencyUs.p90,
        r.summary.latencyUs.p99,
        r.summary.latencyUs.p999,
        r.summary.latencyUs.max,
      ].map(msOf),
    );
    const stageLines = [
      ...out.matchAll(
        /stage (\d) +([\d.]+) s (ramp [\d,]+\/s to [\d,]+\/s \(([\d,]+)\/s asked\)|at ([\d,]+)\/s|pause): (?:achieved ([\d,]+)\/s, p50 ([\d.]+) ms, p99 ([\d.]+) ms|([\d,]+) answers came in \(([\d,]+)\/s\))/g,
      ),
    ];
    expect(stageLines).toHaveLength(4);
    for (const m of stageLines) {
      const s = r.stages[Number(m[1]) - 1]!;
      expect(n(m[2]) * 1000).toBe(s.durationMs);
      if (s.kind === 'pause') {
        expect([n(m[9]), n(m[10])]).toEqual([s.answered, s.achievedRps]);
        continue;
      }
      expect(n(m[4] ?? m[5])).toBe(s.askedRps);
      expect([n(m[6]), Number(m[7]), Number(m[8])]).toEqual([
        s.achievedRps,
        msOf(s.latencyUs.p50),
        msOf(s.latencyUs.p99),
      ]);
    }
    // HTML: the summary table, the stages table and the charts' legends.
    const html = await readFile(file('stages.html'), 'utf8');
    const cell = (label: string): string => new RegExp(`<tr><th>${label}</th><td>([^<]*)</td>`).exec(html)?.[1] ?? '';
    expect(n(cell('achieved').replace(' req/s', ''))).toBe(r.summary.achievedRps);
    expect(n(cell('asked').replace('/s', ''))).toBe(r.summary.askedRps);
    expect(n(cell('requests'))).toBe(r.summary.requests);
    expect(cell('measured')).toBe(`${(r.summary.elapsedMs / 1000).toFixed(1)} s`);
    expect(Number(cell('latency p50').replace(' ms', ''))).toBe(msOf(r.summary.latencyUs.p50));
    expect(Number(cell('latency p99').replace(' ms', ''))).toBe(msOf(r.summary.latencyUs.p99));
    const stageRows = [
      ...html.matchAll(
        /<tr><th>(\d)<\/th><td>([^<]*)<\/td><td class="n">([\d.]+) s<\/td><td class="n">([\d,]+)\/s<\/td><td class="n">([\d,]+)\/s<\/td><td class="n">([\d.]+) ms<\/td><td class="n">([\d.]+) ms<\/td>/g,
      ),
    ];
    expect(
      stageRows.map((m) => [m[2]!.split(' ')[0], n(m[3]) * 1000, n(m[4]), n(m[5]), Number(m[6]), Number(m[7])]),
    ).toEqual(
      r.stages.map((s) => [
        s.kind,
        s.durationMs,
        s.askedRps,
        s.achievedRps,
        msOf(s.latencyUs.p50),
        msOf(s.latencyUs.p99),
      ]),
    );
    const charts = JSON.parse(/<script type="application\/json" id="charts">(.*?)<\/script>/s.exec(html)![1]!) as {
      id: string;
      series: { label: string; legend: string; points: [number, number][] }[];
    }[];
    const throughput = charts.find((c) => c.id === 'throughput')!;
    const achieved = throughput.series.find((s) => s.label === 'achieved')!;
    expect(n(/^([\d,]+) req\/s over the run/.exec(achieved.legend)?.[1])).toBe(r.summary.achievedRps);
    // The chart's points are the series' windows: no partial last bucket, nothing after the end.
    expect(achieved.points).toEqual(r.series.map((p) => [p.t, p.achievedRps]));
    const asked = throughput.series.find((s) => s.label === 'asked')!;
    expect(n(/^([\d,]+)\/s over the run/.exec(asked.legend)?.[1])).toBe(r.summary.askedRps);
    const p99 = charts.find((c) => c.id === 'latency')!.series.find((s) => s.label === 'p99')!;
    expect(p99.legend).toBe(`${msOf(r.summary.latencyUs.p99).toFixed(2)} ms over the run`);
  });

  it('thresholds print their units', async () => {
    const r = await read('stages.json');
    expect(r.thresholds.map((t) => [t.threshold, t.passed, t.unit])).toEqual([
      ['p50<1us', false, 'us'],
      ['p99<10s', true, 's'],
      ['rate>=0.95*asked', true, 'x asked'],
    ]);
    const p50 = r.summary.latencyUs.p50.toLocaleString('en-US');
    expect(stagesRun.stdout).toContain(`FAIL p50<1us (was ${p50} us)`);
    expect(stagesRun.stdout).toMatch(/pass p99<10s \(was 0\.\d+ s\)/);
    expect(stagesRun.stdout).toMatch(/pass rate>=0\.95\*asked \(was [01](?:\.\d+)? x asked\)/);
    expect(stagesRun.stderr).toContain(`1 of 3 thresholds failed: FAIL p50<1us (was ${p50} us)`);
    expect(await readFile(file('stages.html'), 'utf8')).toContain(`FAIL p50&#60;1us (was ${p50} us)`);
  });

  for (const width of [900, 1600]) {
    it(`the run's report at ${width} px: no wrapped cell, the tables fit, legends equal to the summary`, async () => {
      const r = await read('stages.json');
      const layout = await layoutAt('stages.html', width);
      expect(layout.wrapped).toEqual([]);
      expect(layout.fits).toBe(true);
      expect(layout.pageFits).toBe(true);
      const keys = layout.keys.throughput!;
      expect(keys.find((k) => k.startsWith('achieved: '))).toMatch(
        new RegExp(`^achieved: ${r.summary.achievedRps.toLocaleString('en-US')} req/s over the run, max `),
      );
      expect(keys.find((k) => k.startsWith('asked: '))).toMatch(
        new RegExp(`^asked: ${r.summary.askedRps!.toLocaleString('en-US')}/s over the run, max `),
      );
      // The latency legends as the summary prints them.
      for (const [label, us] of [
        ['p50', r.summary.latencyUs.p50],
        ['p99', r.summary.latencyUs.p99],
        ['max', r.summary.latencyUs.max],
      ] as const)
        expect(layout.keys.latency).toContain(`${label}: ${(us / 1000).toFixed(2)} ms over the run`);
    });
  }

  it('-find-max finds the capacity within 10% in 3 of 3 runs, confirmed by a step twice as long', async () => {
    for (const k of [1, 2, 3]) {
      // The rate criterion decides: the latency one is wide enough that a loaded machine's pauses do not.
      const run = await loadtest(
        '-threshold',
        'p99<1s',
        '-threshold',
        'errors<1%',
        '-find-max',
        '-rate',
        `${CAPACITY * 0.75}/s`,
        '-duration',
        '1s',
        '-out',
        file(`max${k}.json`),
        ...(k === 1 ? ['-report', file('max.html')] : []),
      );
      expect(run.code, run.stderr).toBe(0);
      // -duration 1s is below the shortest step: the tool says so and runs its minimum.
      expect(run.stderr).toContain('-duration 1s is shorter than the shortest -find-max step (5s): each step lasts 5s');
      const f = (await read(`max${k}.json`)).findMax!;
      expect(f.stepMs).toBe(5000);
      expect(f.clientLimited).toBe(false);
      expect(Math.abs(f.highestHeldRps! - CAPACITY) / CAPACITY, run.stdout).toBeLessThan(0.1);
      // The answer is a confirming step's: twice the step, held, at the rate given.
      expect(f.confirmed).toMatchObject({ askedRps: f.highestHeldRps, durationMs: 10_000 });
      const confirms = f.steps.filter((s) => s.confirm);
      expect(confirms.at(-1)).toMatchObject({ held: true, askedRps: f.highestHeldRps, durationMs: 10_000 });
      expect(f.steps.some((s) => !s.held)).toBe(true);
      expect(run.stdout).toMatch(
        new RegExp(
          `highest rate held +${f.highestHeldRps!.toLocaleString('en-US')}/s \\(confirmed over 10\\.0 s: achieved ${f.confirmed!.achievedRps.toLocaleString('en-US')}/s`,
        ),
      );
    }
  }, 600_000);

  it('the find-max report plots asked against achieved and p99 per step, the ladder a row per step', async () => {
    const r = await read('max1.json');
    const html = await readFile(file('max.html'), 'utf8');
    const charts = JSON.parse(/<script type="application\/json" id="charts">(.*?)<\/script>/s.exec(html)![1]!) as {
      id: string;
      series: { label: string; points: [number, number][] }[];
    }[];
    const rates = charts.find((c) => c.id === 'find-max-rates')!;
    expect(rates.series.map((s) => s.label)).toEqual(['asked', 'achieved']);
    expect(rates.series[0]!.points).toEqual(r.findMax!.steps.map((s, k) => [k + 1, s.askedRps]));
    expect(rates.series[1]!.points).toEqual(r.findMax!.steps.map((s, k) => [k + 1, s.achievedRps]));
    expect(charts.find((c) => c.id === 'find-max-p99')!.series[0]!.points).toHaveLength(r.findMax!.steps.length);
    const ladder = /<table class="ladder">(.*?)<\/table>/s.exec(html)![1]!;
    expect([...ladder.matchAll(/<tr><th>\d+<\/th>/g)]).toHaveLength(r.findMax!.steps.length);
    for (const width of [900, 1600]) {
      const layout = await layoutAt('max.html', width);
      expect(layout.wrapped).toEqual([]);
      expect(layout.fits).toBe(true);
    }
  });

  it('compare: separators in text, columns that never wrap at 900 px, and one line for a missing file', async () => {
    const cmp = await runCli([
      'loadtest',
      'compare',
      file('max1.json'),
      file('max2.json'),
      '-report',
      file('cmp.html'),
    ]);
    expect(cmp.code, cmp.stderr).toBe(0);
    const [a, b] = [await read('max1.json'), await read('max2.json')];
    expect(cmp.stdout).toMatch(
      new RegExp(
        `achieved +${a.summary.achievedRps.toLocaleString('en-US')} req/s +${b.summary.achievedRps.toLocaleString('en-US')} req/s +\\d\\.\\d\\dx`,
      ),
    );
    expect(cmp.stdout).toMatch(new RegExp(`dropped +${a.summary.dropped.toLocaleString('en-US')} `));
    for (const width of [900, 1600]) {
      const layout = await layoutAt('cmp.html', width);
      expect(layout.wrapped).toEqual([]);
      expect(layout.fits).toBe(true);
      expect(layout.pageFits).toBe(true);
    }
    const html = await readFile(file('cmp.html'), 'utf8');
    expect(html).toMatch(
      /<tr><th>achieved<\/th><td>[\d,]+ req\/s<\/td><td>[\d,]+ req\/s<\/td><td class="n">\d\.\d\dx<\/td><\/tr>/,
    );
    const missing = await runCli(['loadtest', 'compare', file('missing.json'), file('max1.json')]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(`cannot read ${file('missing.json')}: no such file\n`);
    const notFile = await runCli(['loadtest', 'compare', dir.path, file('max1.json')]);
    expect(notFile.stderr).toBe(`cannot read ${dir.path}: a directory, not a result file\n`);
  });
});
