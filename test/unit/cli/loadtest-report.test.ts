// The HTML report and the JSON result, without a target: the chart library is inside the file (no
// address to fetch), text from the run cannot end a script element early, the propagation chart
// appears only when a run measured propagation, and a last empty second is left out.
import { describe, expect, it } from 'vitest';
import { Aggregate } from '../../../src/loadgen/aggregate.js';
import { Recorder } from '../../../src/loadgen/recorder.js';
import { renderReport } from '../../../src/cli/loadtest/report.js';
import { resultOf, summaryText, type LoadtestResult } from '../../../src/cli/loadtest/result.js';
import type { Propagation } from '../../../src/cli/loadtest/scenario.js';
import { Samples } from '../../../src/cli/loadtest/samples.js';

function result(
  options: { propagation?: Propagation[]; prefix?: string; emptyLastSecond?: boolean } = {},
): LoadtestResult {
  const aggregate = new Aggregate(1);
  const recorder = new Recorder();
  for (let t = 1; t <= 3; t++) {
    for (let i = 1; i <= 100; i++) recorder.record({ status: 200 }, i * 10 * t);
    recorder.record({ status: 503 }, 5);
    aggregate.add(recorder.tick(t));
  }
  if (options.emptyLastSecond === true) aggregate.add(recorder.tick(4));
  return resultOf({
    scenario: 'authorize',
    unit: 'req/s',
    prefix: options.prefix ?? 'lt-abc',
    targets: ['http://127.0.0.1:8500'],
    common: {
      measureMs: 3000,
      warmupMs: 0,
      connections: 4,
      rate: undefined,
      stages: undefined,
      threads: 1,
      thresholds: [],
      findMax: false,
    },
    stoppedEarly: false,
    startedAt: '2026-11-25T00:00:00.000Z',
    report: {
      measured: { aggregate, warmupOk: 0, elapsedMs: 3000, cpuPct: 10, threads: 1, askedRps: null },
      settings: {},
      crossCheck: null,
      propagation: options.propagation ?? [],
    },
  });
}

describe('loadtest result and report', () => {
  it('counts answers and errors, and leaves out a last second with no requests', () => {
    const r = result({ emptyLastSecond: true });
    expect(r.summary).toMatchObject({ requests: 303, ok: 300, errors: { 503: 3 } });
    expect(r.series.map((s) => s.t)).toEqual([1, 2, 3]);
    expect(r.distribution[0]).toEqual([0, 10]);
    const [p, max] = r.distribution.at(-1)!;
    expect(p).toBe(100);
    expect(max).toBeGreaterThanOrEqual(3000); // HDR: within 3 significant digits
    expect(max).toBeLessThanOrEqual(3003);
    expect(summaryText(r)).toContain('errors           503: 3');
  });

  it('embeds its chart library and fetches nothing', async () => {
    const html = await renderReport([result()]);
    expect(html).toContain('uPlot');
    // The only addresses are the target's and uPlot's licence comment; nothing loads one.
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+href=|<img|@import|url\(/);
    expect(new Set(html.match(/https?:\/\/[\w.:/-]+/g))).toEqual(
      new Set(['http://127.0.0.1:8500', 'https://github.com/leeoniya/uPlot']),
    );
    expect([...html.matchAll(/id="(\w+)" data-chart/g)].map((m) => m[1])).toEqual([
      'throughput',
      'latency',
      'distribution',
      'errors',
    ]);
  });

  it('draws a propagation chart only for runs that measured one, and two runs side by side', async () => {
    const propagation = [{ name: 'CA roots', seen: 2, missing: 1, samplesMs: [1.5, 3] }];
    const html = await renderReport([result(), result({ propagation })]);
    expect([...html.matchAll(/id="(\w+)" data-chart/g)].map((m) => m[1])).toContain('propagation');
    expect(html).toContain('<th>B / A</th>');
    expect(html).toContain('p50 1.5 ms, p99 3 ms, max 3 ms; seen by 2, not by 1');
  });

  it('keeps text from the run inside its script and table cells', async () => {
    const html = await renderReport([
      result({ propagation: [{ name: '</script><script>alert(1)</script>', seen: 1, missing: 0, samplesMs: [1] }] }),
    ]);
    expect(html).not.toContain('<script>alert(1)');
    expect(html).toContain('&#60;/script&#62;');
  });

  it('samples uniformly within its bound', () => {
    const samples = new Samples(100);
    for (let i = 0; i < 10_000; i++) samples.add(i);
    const kept = samples.sorted();
    expect(samples.count).toBe(10_000);
    expect(kept).toHaveLength(100);
    // A uniform sample of 0..9999 has its median near 5000 (far outside this only by a broken sampler).
    expect(kept[50]).toBeGreaterThan(2500);
    expect(kept[50]).toBeLessThan(7500);
  });
});
