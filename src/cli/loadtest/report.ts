// The self-contained HTML report of one run, or of two side by side (`loadtest compare`): the
// summary, then charts drawn by uPlot, whose script and styles are embedded in the file so that
// it opens anywhere without a network. uPlot is read here and nowhere else.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { cpuText, errorsText, ms, rateText, thresholdText, type LoadtestResult } from './result.js';

const require = createRequire(import.meta.url);

/** Series colours: run A's, then run B's. */
const PALETTES = [
  ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd'],
  ['#17becf', '#bcbd22', '#8c564b', '#e377c2', '#7f7f7f'],
];

interface Chart {
  readonly id: string;
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  /** 'time' (seconds), 'percentile' (log of 1/(1-p)), 'ms' (linear). */
  readonly x: 'time' | 'percentile' | 'ms';
  readonly yLog?: boolean;
  /** Counts (throughput, errors): the y axis starts at zero, so a dip is not drawn as a fall. */
  readonly yZero?: boolean;
  readonly stepped?: boolean;
  readonly series: readonly {
    readonly label: string;
    readonly color: string;
    readonly points: readonly (readonly [number, number])[];
  }[];
}

/** `warning` (compare -force: what differs) is the page's first line. */
export async function renderReport(results: readonly LoadtestResult[], warning?: string): Promise<string> {
  const [script, styles] = await Promise.all([
    readFile(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8'),
    readFile(require.resolve('uplot/dist/uPlot.min.css'), 'utf8'),
  ]);
  const names = results.length === 1 ? [''] : ['A: ', 'B: '];
  const charts = chartsOf(results, names);
  const title =
    results.length === 1
      ? `svc-agent loadtest ${results[0]!.scenario}`
      : `svc-agent loadtest compare: ${results.map((r) => r.scenario).join(' vs ')}`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<style>${styles}
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1000px}
table{border-collapse:collapse;margin:12px 0}td,th{border-bottom:1px solid #ddd;padding:4px 10px;text-align:left;vertical-align:top}
th{background:#f5f5f5}.chart{margin:24px 0}.chart h2{font-size:16px;margin:0 0 6px}.note{color:#666}
</style></head><body>
${warning === undefined ? '' : `<p class="warning">${escapeHtml(warning)}</p>\n`}<h1>${escapeHtml(title)}</h1>
${summaryTable(results, names)}
${charts.map((c) => `<div class="chart" id="${c.id}" data-chart><h2>${escapeHtml(c.title)}</h2></div>`).join('\n')}
<p class="note">Latencies from HDR histograms (microsecond resolution; in open loop measured from when each request was due). Schema ${escapeHtml(results[0]!.schema)}.</p>
<script>${script}</script>
<script type="application/json" id="charts">${jsonForScript(charts)}</script>
<script>${DRAW}</script>
</body></html>
`;
}

function chartsOf(results: readonly LoadtestResult[], names: readonly string[]): Chart[] {
  const each = <T>(pick: (r: LoadtestResult, palette: readonly string[], name: string) => T[]): T[] =>
    results.flatMap((r, i) => pick(r, PALETTES[i % 2]!, names[i]!));
  const ms = (us: number): number => us / 1000;
  const charts: Chart[] = [
    {
      id: 'throughput',
      title: 'Throughput over time',
      xLabel: 'seconds',
      yLabel: results[0]!.unit,
      x: 'time',
      yZero: true,
      series: each((r, p, n) => [
        { label: `${n}${r.unit}`, color: p[0]!, points: r.series.map((s) => [s.t, s.requests] as const) },
      ]),
    },
    {
      id: 'latency',
      title: 'Latency percentiles over time',
      xLabel: 'seconds',
      yLabel: 'ms',
      x: 'time',
      series: each((r, p, n) => [
        { label: `${n}p50`, color: p[0]!, points: r.series.map((s) => [s.t, ms(s.p50Us)] as const) },
        { label: `${n}p99`, color: p[1]!, points: r.series.map((s) => [s.t, ms(s.p99Us)] as const) },
        { label: `${n}max`, color: p[3]!, points: r.series.map((s) => [s.t, ms(s.maxUs)] as const) },
      ]),
    },
    {
      id: 'distribution',
      title: 'Latency by percentile (HDR plot, log scales)',
      xLabel: 'percentile',
      yLabel: 'ms',
      x: 'percentile',
      yLog: true,
      series: each((r, p, n) => [
        {
          label: `${n}latency`,
          color: p[0]!,
          points: r.distribution
            .filter(([q]) => q < 100)
            .map(([q, us]) => [1 / (1 - q / 100), Math.max(0.001, ms(us))] as const),
        },
      ]),
    },
    {
      id: 'errors',
      title: 'Errors over time',
      xLabel: 'seconds',
      yLabel: 'errors/s',
      x: 'time',
      yZero: true,
      series: each((r, p, n) => [
        { label: `${n}errors`, color: p[3]!, points: r.series.map((s) => [s.t, s.errors] as const) },
      ]),
    },
  ];
  if (results.some((r) => r.propagation.length > 0)) {
    charts.push({
      id: 'propagation',
      title: 'Propagation: share of parties that saw each change, by time since it was written (CDF)',
      xLabel: 'ms',
      yLabel: 'share seen',
      x: 'ms',
      stepped: true,
      series: each((r, p, n) =>
        r.propagation.map((prop, k) => {
          const parties = prop.seen + prop.missing;
          return {
            label: `${n}${prop.name}`,
            color: p[k % p.length]!,
            points: prop.samplesMs.map((v, i) => [v, (i + 1) / Math.max(1, parties)] as const),
          };
        }),
      ),
    });
  }
  return charts;
}

function summaryTable(results: readonly LoadtestResult[], names: readonly string[]): string {
  const rows: [string, (r: LoadtestResult) => string, ((r: LoadtestResult) => number) | undefined][] = [
    ['scenario', (r) => r.scenario, undefined],
    ['targets', (r) => r.targets.join(', '), undefined],
    ['started', (r) => r.startedAt ?? '', undefined],
    [
      'settings',
      (r) =>
        Object.entries(r.settings)
          .filter(([, v]) => v !== null)
          .map(([k, v]) => `${k} ${String(v)}`)
          .join(', '),
      undefined,
    ],
    ['rate', rateText, undefined],
    ['achieved', (r) => `${r.summary.achievedRps.toLocaleString('en-US')} ${r.unit}`, (r) => r.summary.achievedRps],
    [
      'asked',
      (r) => (r.summary.askedRps === null ? 'none (closed loop)' : `${r.summary.askedRps.toLocaleString('en-US')}/s`),
      undefined,
    ],
    [
      'late, dropped',
      (r) => `${r.summary.late.toLocaleString('en-US')} late, ${r.summary.dropped.toLocaleString('en-US')} dropped`,
      undefined,
    ],
    ['requests', (r) => r.summary.requests.toLocaleString('en-US'), (r) => r.summary.requests],
    ['latency p50', (r) => `${ms(r.summary.latencyUs.p50)} ms`, (r) => r.summary.latencyUs.p50],
    ['latency p99', (r) => `${ms(r.summary.latencyUs.p99)} ms`, (r) => r.summary.latencyUs.p99],
    ['latency p99.9', (r) => `${ms(r.summary.latencyUs.p999)} ms`, (r) => r.summary.latencyUs.p999],
    ['latency max', (r) => `${ms(r.summary.latencyUs.max)} ms`, (r) => r.summary.latencyUs.max],
    ['errors', (r) => errorsText(r.summary.errors), undefined],
    ['limited by', (r) => r.limitedBy, undefined],
    ['client cpu', cpuText, undefined],
    ['thresholds', (r) => (r.thresholds.length === 0 ? 'none' : r.thresholds.map(thresholdText).join('; ')), undefined],
    ['generator counted', (r) => (r.crossCheck === null ? 'n/a' : `${r.crossCheck.generatorCounted}`), undefined],
    [
      'target counted',
      (r) =>
        r.crossCheck === null || r.crossCheck.targetCounted === null
          ? 'n/a'
          : `${r.crossCheck.targetCounted} (${r.crossCheck.counter}): ${r.crossCheck.agrees ? 'agrees' : 'DIFFERS'}`,
      undefined,
    ],
  ];
  const labels = new Set(results.flatMap((r) => [...r.propagation.map((p) => p.name), ...Object.keys(r.facts)]));
  for (const label of labels) {
    rows.push([
      label,
      (r) => {
        const p = r.propagation.find((x) => x.name === label);
        if (p !== undefined)
          return p.seen === 0
            ? `seen by none of ${p.missing}`
            : `p50 ${p.ms.p50} ms, p99 ${p.ms.p99} ms, max ${p.ms.max} ms; seen by ${p.seen}${p.missing > 0 ? `, not by ${p.missing}` : ''}${p.staleAfterAck === null ? '' : `; ${p.staleAfterAck} stale after ack`}`;
        const fact = r.facts[label];
        return fact === undefined || fact === null
          ? ''
          : typeof fact === 'number'
            ? fact.toLocaleString('en-US')
            : fact;
      },
      undefined,
    ]);
  }
  const ratio = results.length === 2;
  const head = `<tr><th></th>${names.map((n) => `<th>${escapeHtml(n.replace(/: $/, '') || 'run')}</th>`).join('')}${ratio ? '<th>B / A</th>' : ''}</tr>`;
  const body = rows
    .map(([label, text, num]) => {
      const cells = results.map((r) => `<td>${escapeHtml(text(r))}</td>`).join('');
      const a = num?.(results[0]!);
      const b = ratio ? num?.(results[1]!) : undefined;
      const ratioCell = ratio
        ? `<td>${a !== undefined && b !== undefined && a > 0 ? `${(b / a).toFixed(2)}x` : ''}</td>`
        : '';
      return `<tr><th>${escapeHtml(label)}</th>${cells}${ratioCell}</tr>`;
    })
    .join('\n');
  return `<table>${head}\n${body}</table>`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** JSON inside a script element: no `</script>` or `<!--` can end it early. */
function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c');
}

// Runs in the page: each chart's series put on one shared x axis (uPlot's aligned data), gaps spanned.
const DRAW = `
(function () {
  var charts = JSON.parse(document.getElementById('charts').textContent);
  charts.forEach(function (c) {
    var xs = [];
    var seen = {};
    c.series.forEach(function (s) { s.points.forEach(function (p) { if (!seen[p[0]]) { seen[p[0]] = true; xs.push(p[0]); } }); });
    xs.sort(function (a, b) { return a - b; });
    var at = {};
    xs.forEach(function (x, i) { at[x] = i; });
    var data = [xs].concat(c.series.map(function (s) {
      var ys = xs.map(function () { return null; });
      s.points.forEach(function (p) { ys[at[p[0]]] = p[1]; });
      return ys;
    }));
    var xScale = c.x === 'percentile' ? { time: false, distr: 3, log: 10 } : { time: false };
    // Percentile axis: one tick per decade of 1/(1-p), labelled 0%, 90%, 99%, 99.9% ...
    var xSplits = c.x === 'percentile'
      ? function (u, axis, min, max) { var out = []; for (var v = 1; v <= max * 1.0001; v *= 10) if (v >= min / 1.0001) out.push(v); return out; }
      : undefined;
    var xValues = c.x === 'percentile'
      ? function (u, splits) { return splits.map(function (v) { return v === 1 ? '0%' : String(Math.round((100 - 100 / v) * 1e6) / 1e6) + '%'; }); }
      : undefined;
    var opts = {
      width: 900,
      height: 300,
      scales: { x: xScale, y: c.yLog ? { distr: 3 } : c.yZero ? { range: function (u, min, max) { return [0, max > 0 ? max * 1.05 : 1]; } } : {} },
      axes: [{ label: c.xLabel, values: xValues, splits: xSplits }, { label: c.yLabel }],
      series: [{ label: c.xLabel }].concat(c.series.map(function (s) {
        return { label: s.label, stroke: s.color, width: 2, spanGaps: true, paths: c.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined };
      })),
    };
    new uPlot(opts, data, document.getElementById(c.id));
  });
})();
`;
