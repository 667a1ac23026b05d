// The loadtest report's charts as a person reads them, in headless Chromium at 900 and 1,600 px:
// every series and every marker drawn, the charts as wide as the window (no sideways scroll at
// 900 px), legends that give values without hovering, a log axis for a propagation CDF that spans
// milliseconds to seconds, and tick labels on whole seconds. The report is built from a result
// made here (an open loop past saturation, with outcomes, throttling, markers and propagation).
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Aggregate } from '../../src/loadgen/aggregate.js';
import { Recorder } from '../../src/loadgen/recorder.js';
import { renderReport } from '../../src/cli/loadtest/report.js';
import { resultOf, type LoadtestResult } from '../../src/cli/loadtest/result.js';
import { tempDir } from './support/agent-process.js';
import { launchChromium } from './support/browser.js';

/** Ten seconds of an open loop at 1,000/s that the target serves at about 600/s, allow and deny, some throttled. */
function saturatedRun(): LoadtestResult {
  const aggregate = new Aggregate(1);
  const recorder = new Recorder();
  for (let t = 1; t <= 10; t++) {
    for (let i = 0; i < 600; i++)
      recorder.record({ status: 200 }, 500 + i * 10 * t, i > 300, i % 5 === 0 ? 'deny' : 'allow');
    for (let i = 0; i < 20; i++) recorder.record({ status: 429 }, 300, false, 'throttled', true);
    recorder.record({ status: 503 }, 100);
    recorder.dropped(380);
    aggregate.add(recorder.tick(t));
  }
  return resultOf({
    scenario: 'authorize',
    unit: 'req/s',
    prefix: 'lt-chart',
    targets: ['http://127.0.0.1:8500'],
    common: {
      measureMs: 10_000,
      warmupMs: 0,
      connections: 64,
      rate: 1000,
      stages: [{ ms: 10_000, rate: 1000 }],
      threads: 1,
      thresholds: [],
      findMax: false,
    },
    stoppedEarly: false,
    startedAt: '2026-11-26T00:00:00.000Z',
    cores: 2,
    report: {
      measured: {
        aggregate,
        warmupOk: 0,
        elapsedMs: 10_000,
        cpuPct: 80,
        threads: 1,
        askedRps: 1000,
        stages: [{ ms: 10_000, rate: 1000 }],
      },
      settings: {},
      crossCheck: null,
      markers: [
        { label: 'intention deny #1', t: 3.2 },
        { label: 'CA rotation', t: 6.5 },
      ],
      propagation: [
        {
          name: 'intention deny #1',
          seen: 40,
          missing: 0,
          samplesMs: Array.from({ length: 40 }, (_, i) => 2 + i * 0.5),
        },
        { name: 'CA leaf', seen: 40, missing: 0, samplesMs: Array.from({ length: 40 }, (_, i) => 1000 + i * 700) },
      ],
    },
  });
}

/** Run in the page: per chart, pixels in each series' colour and in the markers' grey, and the canvas's CSS width. */
const CHART_PIXELS = `[...document.querySelectorAll('[data-chart]')].map((el) => {
  const canvas = el.querySelector('canvas');
  const spec = JSON.parse(document.getElementById('charts').textContent).find((c) => c.id === el.id);
  const colours = spec.series.map((s) => parseInt(s.color.slice(1), 16));
  const counts = Object.fromEntries(colours.map((c) => [c, 0]));
  let marker = 0;
  const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
  for (let i = 0; i < pixels.length; i += 4) {
    if (pixels[i + 3] !== 255) continue;
    const rgb = (pixels[i] << 16) | (pixels[i + 1] << 8) | pixels[i + 2];
    if (rgb in counts) counts[rgb]++;
    if (rgb === 0x444444) marker++;
  }
  return { id: el.id, series: spec.series.map((s, k) => [s.label, counts[colours[k]]]), marker, width: canvas.getBoundingClientRect().width,
    keys: [...el.querySelectorAll('.key')].map((k) => k.textContent) };
})`;

interface Drawn {
  id: string;
  series: [string, number][];
  marker: number;
  width: number;
  keys: string[];
}

describe('loadtest report charts in headless Chromium', () => {
  let browser: Browser;
  let dir: { path: string; remove: () => Promise<void> };
  let file: string;
  beforeAll(async () => {
    dir = await tempDir('svc-loadtest-charts-');
    file = join(dir.path, 'report.html');
    await writeFile(file, await renderReport([saturatedRun()]));
    browser = await launchChromium();
  }, 900_000);
  afterAll(async () => {
    await browser?.close();
    await dir.remove();
  });

  const open = async (width: number): Promise<{ page: Page; drawn: Drawn[]; problems: string[] }> => {
    const page = await browser.newPage({ viewport: { width, height: 1000 } });
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    page.on('console', (m) => void (m.type() === 'error' && problems.push(m.text())));
    await page.goto(`file://${file}`);
    await page.screenshot({ path: join(dir.path, `report-${width}.png`), fullPage: true });
    return { page, drawn: (await page.evaluate(CHART_PIXELS)) as Drawn[], problems };
  };

  for (const width of [900, 1600]) {
    it(`at ${width} px: every series and marker drawn, legends with values, no sideways scroll`, async () => {
      const { page, drawn, problems } = await open(width);
      expect(problems).toEqual([]);
      expect(drawn.map((d) => d.id)).toEqual(['throughput', 'latency', 'distribution', 'errors', 'propagation']);
      for (const d of drawn) {
        for (const [label, hits] of d.series) expect(hits, `${d.id}: ${label}`).toBeGreaterThan(0);
        for (const key of d.keys) expect(key, d.id).toMatch(/: .*\d/);
        expect(d.keys.some((k) => k.includes('--'))).toBe(false);
      }
      // The timelines carry the intention change and the rotation; the other charts none.
      for (const d of drawn) expect(d.marker > 0, d.id).toBe(['throughput', 'latency', 'errors'].includes(d.id));
      expect(drawn.find((d) => d.id === 'throughput')!.series.map(([label]) => label)).toEqual([
        'achieved',
        'asked',
        'allow',
        'deny',
        'dropped',
      ]);
      expect(drawn.find((d) => d.id === 'errors')!.series.map(([label]) => label)).toEqual([
        'errors',
        'throttled (429)',
      ]);
      const scroll = (await page.evaluate(
        '[document.documentElement.scrollWidth, document.documentElement.clientWidth]',
      )) as [number, number];
      expect(scroll[0]).toBeLessThanOrEqual(scroll[1]);
      // As wide as the page allows: the window's width less the margins, up to the page's 1,400 px.
      for (const d of drawn) expect(d.width).toBeGreaterThan(Math.min(width, 1400) - 120);
      await page.close();
    });
  }

  it('follows the window when it is resized', async () => {
    const { page, drawn } = await open(1600);
    await page.setViewportSize({ width: 900, height: 1000 });
    await page.waitForFunction('document.querySelector("#latency canvas").getBoundingClientRect().width < 900');
    const after = (await page.evaluate(CHART_PIXELS)) as Drawn[];
    expect(after[0]!.width).toBeLessThan(drawn[0]!.width);
    const scroll = (await page.evaluate(
      '[document.documentElement.scrollWidth, document.documentElement.clientWidth]',
    )) as [number, number];
    expect(scroll[0]).toBeLessThanOrEqual(scroll[1]);
    await page.close();
  });
});
