// The self-contained HTML report of one run, or of two side by side (`loadtest compare`): the
// summary, then charts drawn by uPlot, whose script and styles are embedded in the file so that
// it opens anywhere without a network. uPlot is read here and nowhere else.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { pointRate } from './rates.js';
import { errorsText, ms, ms as msText, secondsText, thresholdText, type LoadtestResult } from './result.js';

const require = createRequire(import.meta.url);

/** Series colours, run A's then run B's: achieved or p50, p99, asked, max or errors, then outcomes. */
const PALETTES = [
  ['#1f77b4', '#ff7f0e', '#7f7f7f', '#d62728', '#2ca02c', '#9467bd', '#8c564b', '#e377c2'],
  ['#17becf', '#bcbd22', '#aec7e8', '#ff9896', '#98df8a', '#c5b0d5', '#c49c94', '#f7b6d2'],
];
/** Throttling (leaf-wave's 429s) has a colour of its own, apart from the errors' red. */
const THROTTLED = ['#e6a100', '#ffd966'];

interface Series {
  readonly label: string;
  readonly color: string;
  /** What the legend says beside the label without hovering: a mean, a max, a percentile. */
  readonly legend: string;
  readonly dashed?: boolean;
  readonly points: readonly (readonly [number, number])[];
}

interface Chart {
  readonly id: string;
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  /** 'time' (seconds), 'percentile' (log of 1/(1-p)), 'ms' (linear, or log when `xLog`). */
  readonly x: 'time' | 'percentile' | 'ms';
  readonly xLog?: boolean;
  readonly yLog?: boolean;
  /** Counts (throughput, errors): the y axis starts at zero, so a dip is not drawn as a fall. */
  readonly yZero?: boolean;
  readonly stepped?: boolean;
  readonly series: readonly Series[];
  /** Moments drawn as vertical lines (time charts): intention changes, rotations. */
  readonly markers: readonly { readonly label: string; readonly t: number }[];
}

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
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}
table{border-collapse:collapse;margin:12px 0}td,th{border-bottom:1px solid #ddd;padding:4px 10px;text-align:left;vertical-align:top;white-space:nowrap}
td.n{text-align:right;font-variant-numeric:tabular-nums}.tables{overflow-x:auto}h2.t{font-size:16px;margin:18px 0 0}
th{background:#f5f5f5}.chart{margin:24px 0}.chart h2{font-size:16px;margin:0 0 6px}.note{color:#666}
.warning{background:#fde8e8;border:1px solid #d62728;padding:6px 10px;font-weight:bold}
.keys{display:flex;flex-wrap:wrap;gap:4px 16px;margin:4px 0 0 8px}.key{white-space:nowrap}
.key i{display:inline-block;width:14px;height:3px;vertical-align:middle;margin-right:6px}
</style></head><body>
${warning === undefined ? '' : `<p class="warning">${escapeHtml(warning)}</p>\n`}<h1>${escapeHtml(title)}</h1>
<div class="tables">${summaryTable(results, names)}
${settingsTable(results, names)}
${results.map((r, i) => stagesTable(r, names[i]!)).join('\n')}
${results.map((r, i) => ladderTable(r, names[i]!)).join('\n')}</div>
${charts.map((c) => `<div class="chart" id="${c.id}" data-chart><h2>${escapeHtml(c.title)}</h2></div>`).join('\n')}
<p class="note">Latencies from HDR histograms (microsecond resolution; in open loop measured from when each request was due). Schema ${escapeHtml(results[0]!.schema)}.</p>
<script>${script}</script>
<script type="application/json" id="charts">${jsonForScript(charts)}</script>
<script>${DRAW}</script>
</body></html>
`;
}

const num = (n: number): string => n.toLocaleString('en-US', { maximumFractionDigits: 2 });
const max = (xs: readonly number[]): number => xs.reduce((a, b) => Math.max(a, b), 0);

function chartsOf(results: readonly LoadtestResult[], names: readonly string[]): Chart[] {
  const each = (pick: (r: LoadtestResult, palette: readonly string[], name: string, i: number) => Series[]): Series[] =>
    results.flatMap((r, i) => pick(r, PALETTES[i % 2]!, names[i]!, i));
  const ms = (us: number): number => us / 1000;
  const markers = results.flatMap((r, i) => r.markers.map((m) => ({ label: `${names[i]}${m.label}`, t: m.t })));
  // A rate line's legend is the run's figure from the summary (the same windows: rates.ts), and the highest window.
  const perSecond = (
    label: string,
    color: string,
    points: [number, number][],
    overall: string,
    dashed = false,
  ): Series => ({
    label,
    color,
    dashed,
    legend: `${overall}, max ${num(max(points.map((p) => p[1])))}/s`,
    points,
  });
  const latencyLine = (label: string, color: string, points: [number, number][], overall: string): Series => ({
    label,
    color,
    legend: overall,
    points,
  });
  const charts: Chart[] = [
    {
      id: 'throughput',
      title: 'Throughput over time: achieved, asked, dropped',
      xLabel: 'seconds',
      yLabel: results[0]!.unit,
      x: 'time',
      yZero: true,
      markers,
      series: each((r, p, n) => {
        const outcomes = Object.keys(r.summary.outcomes)
          .filter((k) => k !== 'throttled')
          .sort();
        const s = r.summary;
        return [
          perSecond(
            `${n}achieved`,
            p[0]!,
            r.series.map((w) => [w.t, w.achievedRps]),
            `${num(s.achievedRps)} ${r.unit} over the run`,
          ),
          ...(s.askedRps === null
            ? []
            : [
                perSecond(
                  `${n}asked`,
                  p[2]!,
                  r.series.map((w) => [w.t, w.askedRps ?? 0]),
                  `${num(s.askedRps)}/s over the run`,
                  true,
                ),
              ]),
          ...outcomes.map((k, j) =>
            perSecond(
              `${n}${k}`,
              p[4 + (j % 4)]!,
              r.series.map((w) => [w.t, pointRate(w.outcomes[k] ?? 0, w)]),
              `${num(s.outcomes[k]?.rps ?? 0)}/s over the run`,
            ),
          ),
          ...(s.dropped === 0
            ? []
            : [
                perSecond(
                  `${n}dropped`,
                  p[3]!,
                  r.series.map((w) => [w.t, pointRate(w.dropped, w)]),
                  `${num(s.dropped)} in all`,
                ),
              ]),
        ];
      }),
    },
    {
      id: 'latency',
      title: 'Latency percentiles over time',
      xLabel: 'seconds',
      yLabel: 'ms',
      x: 'time',
      markers,
      series: each((r, p, n) => [
        latencyLine(
          `${n}p50`,
          p[0]!,
          r.series.map((s) => [s.t, ms(s.p50Us)]),
          `${msText(r.summary.latencyUs.p50)} ms over the run`,
        ),
        latencyLine(
          `${n}p99`,
          p[1]!,
          r.series.map((s) => [s.t, ms(s.p99Us)]),
          `${msText(r.summary.latencyUs.p99)} ms over the run`,
        ),
        latencyLine(
          `${n}max`,
          p[3]!,
          r.series.map((s) => [s.t, ms(s.maxUs)]),
          `${msText(r.summary.latencyUs.max)} ms over the run`,
        ),
      ]),
    },
    {
      id: 'distribution',
      title: 'Latency by percentile (HDR plot, log scales)',
      xLabel: 'percentile',
      yLabel: 'ms',
      x: 'percentile',
      yLog: true,
      markers: [],
      series: each((r, p, n) => [
        {
          label: `${n}latency`,
          color: p[0]!,
          legend: `p50 ${num(ms(r.summary.latencyUs.p50))} ms, p99 ${num(ms(r.summary.latencyUs.p99))} ms`,
          // Below a microsecond is no latency a network call has: left out, so the axis starts at the first real one.
          points: r.distribution
            .filter(([q, us]) => q < 100 && us > 1)
            .map(([q, us]) => [1 / (1 - q / 100), ms(us)] as const),
        },
      ]),
    },
    {
      id: 'errors',
      title: 'Errors and throttling over time',
      xLabel: 'seconds',
      yLabel: 'per second',
      x: 'time',
      yZero: true,
      markers,
      series: each((r, p, n, i) => [
        perSecond(
          `${n}errors`,
          p[3]!,
          r.series.map((w) => [w.t, pointRate(w.errors, w)]),
          `${num(Object.values(r.summary.errors).reduce((x, y) => x + y, 0))} in all`,
        ),
        ...(r.summary.outcomes.throttled === undefined
          ? []
          : [
              perSecond(
                `${n}throttled (429)`,
                THROTTLED[i % 2]!,
                r.series.map((w) => [w.t, pointRate(w.outcomes.throttled ?? 0, w)]),
                `${num(r.summary.outcomes.throttled.rps)}/s over the run`,
              ),
            ]),
      ]),
    },
  ];
  if (results.some((r) => r.findMax !== null)) {
    const steps = (r: LoadtestResult) => r.findMax?.steps ?? [];
    charts.push(
      {
        id: 'find-max-rates',
        title: 'Find-max: asked and achieved per step',
        xLabel: 'step',
        yLabel: '/s',
        x: 'ms',
        yZero: true,
        markers: [],
        series: each((r, p, n) => [
          {
            label: `${n}asked`,
            color: p[2]!,
            dashed: true,
            legend: r.findMax?.highestHeldRps == null ? 'none held' : `${num(r.findMax.highestHeldRps)}/s confirmed`,
            points: steps(r).map((s, k) => [k + 1, s.askedRps] as const),
          },
          {
            label: `${n}achieved`,
            color: p[0]!,
            legend:
              r.findMax?.confirmed == null ? 'none confirmed' : `${num(r.findMax.confirmed.achievedRps)}/s confirmed`,
            points: steps(r).map((s, k) => [k + 1, s.achievedRps] as const),
          },
        ]),
      },
      {
        id: 'find-max-p99',
        title: 'Find-max: p99 latency per step',
        xLabel: 'step',
        yLabel: 'ms',
        x: 'ms',
        markers: [],
        series: each((r, p, n) => [
          {
            label: `${n}p99`,
            color: p[1]!,
            legend:
              r.findMax?.confirmed == null ? 'none confirmed' : `${num(ms(r.findMax.confirmed.p99Us))} ms confirmed`,
            points: steps(r).map((s, k) => [k + 1, ms(s.p99Us)] as const),
          },
        ]),
      },
    );
  }
  if (results.some((r) => r.propagation.length > 0)) {
    const all = results.flatMap((r) => r.propagation.flatMap((p) => p.samplesMs)).filter((v) => v > 0);
    charts.push({
      id: 'propagation',
      title: 'Propagation: share of parties that saw each change, by time since it was written (CDF)',
      xLabel: 'ms',
      yLabel: 'share seen',
      x: 'ms',
      // Millisecond curves beside a 30 s one: a log axis, so both read.
      xLog: all.length > 0 && max(all) / Math.min(...all) > 100,
      stepped: true,
      markers: [],
      series: each((r, p, n) =>
        r.propagation.map((prop, k) => {
          const parties = prop.seen + prop.missing;
          return {
            label: `${n}${prop.name}`,
            color: p[k % p.length]!,
            legend:
              prop.seen === 0 ? 'seen by none' : `p50 ${num(prop.ms.p50 ?? 0)} ms, max ${num(prop.ms.max ?? 0)} ms`,
            points: prop.samplesMs.filter((v) => v > 0).map((v, i) => [v, (i + 1) / Math.max(1, parties)] as const),
          };
        }),
      ),
    });
  }
  return charts;
}

const int = (n: number): string => n.toLocaleString('en-US');

/** The run side by side (or alone): short cells, numbers with separators, a B/A ratio for compare. */
function summaryTable(results: readonly LoadtestResult[], names: readonly string[]): string {
  type Row = [string, (r: LoadtestResult) => string, ((r: LoadtestResult) => number) | undefined];
  const rows: Row[] = [
    ['scenario', (r) => r.scenario, undefined],
    ['targets', (r) => r.targets.join(', '), undefined],
    ['started', (r) => r.startedAt ?? '', undefined],
    ['measured', (r) => secondsText(r.summary.elapsedMs), undefined],
    ['achieved', (r) => `${int(r.summary.achievedRps)} ${r.unit}`, (r) => r.summary.achievedRps],
    ['asked', (r) => (r.summary.askedRps === null ? 'none (closed loop)' : `${int(r.summary.askedRps)}/s`), undefined],
    ['late, dropped', (r) => `${int(r.summary.late)} late, ${int(r.summary.dropped)} dropped`, undefined],
    [
      'drain',
      (r) => `${int(r.summary.drain.requests)} answered in ${int(r.summary.drain.ms)} ms after the end`,
      undefined,
    ],
    ['requests', (r) => int(r.summary.requests), (r) => r.summary.requests],
    ['latency p50', (r) => `${ms(r.summary.latencyUs.p50)} ms`, (r) => r.summary.latencyUs.p50],
    ['latency p99', (r) => `${ms(r.summary.latencyUs.p99)} ms`, (r) => r.summary.latencyUs.p99],
    ['latency p99.9', (r) => `${ms(r.summary.latencyUs.p999)} ms`, (r) => r.summary.latencyUs.p999],
    ['latency max', (r) => `${ms(r.summary.latencyUs.max)} ms`, (r) => r.summary.latencyUs.max],
    ['errors', (r) => errorsText(r.summary.errors), undefined],
    ['limited by', (r) => r.limitedBy, undefined],
    [
      'client cpu',
      (r) => `${r.client.cpuPct}% of one core (${r.client.machinePct}% of ${r.client.cores} cores)`,
      undefined,
    ],
    ['generator counted', (r) => (r.crossCheck === null ? 'n/a' : int(r.crossCheck.generatorCounted)), undefined],
    [
      'target counted',
      (r) =>
        r.crossCheck === null || r.crossCheck.targetCounted === null
          ? 'n/a'
          : `${int(r.crossCheck.targetCounted)}: ${r.crossCheck.agrees ? 'agrees' : 'DIFFERS'}`,
      undefined,
    ],
  ];
  const thresholdCount = Math.max(0, ...results.map((r) => r.thresholds.length));
  for (let k = 0; k < thresholdCount; k++)
    rows.push([
      `threshold ${k + 1}`,
      (r) => {
        const t = r.thresholds[k];
        return t === undefined ? '' : thresholdText(t);
      },
      undefined,
    ]);
  if (results.some((r) => r.findMax !== null)) {
    rows.push(
      [
        'highest rate held',
        (r) => (r.findMax?.highestHeldRps == null ? 'none confirmed' : `${int(r.findMax.highestHeldRps)}/s`),
        (r) => r.findMax?.highestHeldRps ?? 0,
      ],
      [
        'confirmed by',
        (r) => {
          const c = r.findMax?.confirmed;
          return c == null ? '' : `${secondsText(c.durationMs)}: ${int(c.achievedRps)}/s, p99 ${ms(c.p99Us)} ms`;
        },
        undefined,
      ],
      [
        'steps near it',
        (r) => {
          const sp = r.findMax?.spread;
          return sp == null ? '' : `${sp.steps} achieved ${int(sp.lowRps)}-${int(sp.highRps)}/s`;
        },
        undefined,
      ],
      ['criteria', (r) => r.findMax?.criteria.join(', ') ?? '', undefined],
    );
  }
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
        return fact === undefined || fact === null ? '' : typeof fact === 'number' ? int(fact) : fact;
      },
      undefined,
    ]);
  }
  const ratio = results.length === 2;
  const head = `<tr><th></th>${names.map((n) => `<th>${escapeHtml(n.replace(/: $/, '') || 'run')}</th>`).join('')}${ratio ? '<th>B / A</th>' : ''}</tr>`;
  const body = rows
    .map(([label, text, value]) => {
      const cells = results.map((r) => `<td>${escapeHtml(text(r))}</td>`).join('');
      const a = value?.(results[0]!);
      const b = ratio ? value?.(results[1]!) : undefined;
      const ratioCell = ratio
        ? `<td class="n">${a !== undefined && b !== undefined && a > 0 ? `${(b / a).toFixed(2)}x` : ''}</td>`
        : '';
      return `<tr><th>${escapeHtml(label)}</th>${cells}${ratioCell}</tr>`;
    })
    .join('\n');
  return `<table id="summary">${head}\n${body}</table>`;
}

/** Each setting on its own row, the runs side by side. */
function settingsTable(results: readonly LoadtestResult[], names: readonly string[]): string {
  const valueOf = (r: LoadtestResult, k: string): string => {
    const v = (r.settings as Record<string, unknown>)[k];
    if (v === undefined || v === null || v === false) return '';
    if (k === 'stages')
      return r.settings
        .stages!.map((s) => `${s.ms / 1000}s:${s.rate}${s.to === undefined ? '' : `-${s.to}`}`)
        .join(',');
    return typeof v === 'number' ? int(v) : Array.isArray(v) ? v.join(', ') : String(v);
  };
  const keys = [...new Set(results.flatMap((r) => Object.keys(r.settings)))].filter((k) =>
    results.some((r) => valueOf(r, k) !== ''),
  );
  const head = `<tr><th>setting</th>${names.map((n) => `<th>${escapeHtml(n.replace(/: $/, '') || 'run')}</th>`).join('')}</tr>`;
  const body = keys
    .map(
      (k) =>
        `<tr><th>${escapeHtml(k)}</th>${results.map((r) => `<td>${escapeHtml(valueOf(r, k))}</td>`).join('')}</tr>`,
    )
    .join('\n');
  return `<table id="settings">${head}\n${body}</table>`;
}

/** A run's stages, a row each: what it asked and got over its own window (a pause says so). */
function stagesTable(r: LoadtestResult, name: string): string {
  if (r.stages.length === 0) return '';
  const head =
    '<tr><th>stage</th><th>kind</th><th>for</th><th>asked</th><th>achieved</th><th>p50</th><th>p99</th><th>dropped</th></tr>';
  const body = r.stages
    .map(
      (s, k) =>
        `<tr><th>${k + 1}</th><td>${s.kind === 'ramp' ? `ramp ${int(s.rate)}-${int(s.to)}/s` : s.kind}</td><td class="n">${secondsText(s.durationMs)}</td><td class="n">${int(s.askedRps)}/s</td><td class="n">${int(s.achievedRps)}/s</td><td class="n">${ms(s.latencyUs.p50)} ms</td><td class="n">${ms(s.latencyUs.p99)} ms</td><td class="n">${int(s.dropped)}</td></tr>`,
    )
    .join('\n');
  return `<h2 class="t">${escapeHtml(name)}stages</h2><table class="stages">${head}\n${body}</table>`;
}

/** -find-max's ladder, a row per step. */
function ladderTable(r: LoadtestResult, name: string): string {
  if (r.findMax === null) return '';
  const head =
    '<tr><th>step</th><th>asked</th><th>for</th><th>achieved</th><th>p99</th><th>dropped</th><th>verdict</th></tr>';
  const body = r.findMax.steps
    .map(
      (s, k) =>
        `<tr><th>${k + 1}</th><td class="n">${int(s.askedRps)}/s</td><td class="n">${secondsText(s.durationMs)}</td><td class="n">${int(s.achievedRps)}/s</td><td class="n">${ms(s.p99Us)} ms</td><td class="n">${int(s.dropped)}</td><td>${s.confirm ? 'confirm: ' : ''}${s.held ? 'held' : `not held (${escapeHtml(s.failed.join(', '))})`}${s.clientBusy ? ', client busy' : ''}</td></tr>`,
    )
    .join('\n');
  return `<h2 class="t">${escapeHtml(name)}find-max steps</h2><table class="ladder">${head}\n${body}</table>`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** JSON inside a script element: no `</script>` or `<!--` can end it early. */
function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c');
}

// Runs in the page: each chart's series put on one shared x axis (uPlot's aligned data), gaps
// spanned; as wide as the page (redrawn when the window changes); a legend with each series' value
// (not uPlot's `--` until hovered); markers as dashed vertical lines on the timelines; the y axis as
// wide as its longest tick, so its label never overlaps one.
const DRAW = `
(function () {
  var charts = JSON.parse(document.getElementById('charts').textContent);
  var plots = [];
  function fmt(v) {
    if (v == null) return '';
    var a = Math.abs(v);
    return a >= 1000 ? Math.round(v).toLocaleString('en-US') : a >= 10 ? String(Math.round(v * 10) / 10) : String(Math.round(v * 1000) / 1000);
  }
  function widthOf(el) { return Math.max(300, el.clientWidth); }
  charts.forEach(function (c) {
    var el = document.getElementById(c.id);
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
    var logX = c.x === 'percentile' || c.xLog;
    var xScale = logX ? { time: false, distr: 3, log: 10 } : { time: false };
    var xAxis = { label: c.xLabel, labelGap: 4 };
    if (c.x === 'percentile') {
      // One tick per decade of 1/(1-p), labelled 0%, 90%, 99%, 99.9% ...
      xAxis.splits = function (u, axis, min, max) { var out = []; for (var v = 1; v <= max * 1.0001; v *= 10) if (v >= min / 1.0001) out.push(v); return out; };
      xAxis.values = function (u, splits) { return splits.map(function (v) { return v === 1 ? '0%' : String(Math.round((100 - 100 / v) * 1e6) / 1e6) + '%'; }); };
    } else if (c.x === 'time') {
      // Per-second data: ticks on whole seconds only.
      xAxis.incrs = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600];
      xAxis.values = function (u, splits) { return splits.map(function (v) { return v + 's'; }); };
    } else {
      xAxis.values = function (u, splits) { return splits.map(fmt); };
    }
    var yAxis = {
      label: c.yLabel,
      labelGap: 8,
      values: function (u, splits) { return splits.map(fmt); },
      size: function (u, values) {
        var longest = (values || []).reduce(function (n, v) { return Math.max(n, String(v).length); }, 1);
        return 16 + longest * 8;
      },
    };
    var markerHook = function (u) {
      if (!c.markers.length) return;
      var ctx = u.ctx;
      ctx.save();
      ctx.setLineDash([5, 4]);
      ctx.strokeStyle = '#444';
      ctx.fillStyle = '#444';
      ctx.lineWidth = 1;
      ctx.font = (11 * devicePixelRatio) + 'px system-ui, sans-serif';
      c.markers.forEach(function (m, i) {
        var x = Math.round(u.valToPos(m.t, 'x', true));
        if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
        ctx.beginPath();
        ctx.moveTo(x, u.bbox.top);
        ctx.lineTo(x, u.bbox.top + u.bbox.height);
        ctx.stroke();
        ctx.fillText(m.label, x + 4, u.bbox.top + (12 + (i % 3) * 13) * devicePixelRatio);
      });
      ctx.restore();
    };
    var opts = {
      width: widthOf(el),
      height: 300,
      legend: { show: false },
      scales: { x: xScale, y: c.yLog ? { distr: 3 } : c.yZero ? { range: function (u, min, max) { return [0, max > 0 ? max * 1.05 : 1]; } } : {} },
      axes: [xAxis, yAxis],
      hooks: { draw: [markerHook] },
      series: [{ label: c.xLabel }].concat(c.series.map(function (s) {
        return { label: s.label, stroke: s.color, width: 2, spanGaps: true, dash: s.dashed ? [6, 4] : undefined, paths: c.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined };
      })),
    };
    plots.push({ el: el, plot: new uPlot(opts, data, el) });
    var keys = document.createElement('div');
    keys.className = 'keys';
    c.series.forEach(function (s) {
      var key = document.createElement('span');
      key.className = 'key';
      var swatch = document.createElement('i');
      swatch.style.background = s.color;
      key.appendChild(swatch);
      key.appendChild(document.createTextNode(s.label + ': ' + s.legend));
      keys.appendChild(key);
    });
    el.appendChild(keys);
  });
  var pending = 0;
  window.addEventListener('resize', function () {
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(function () {
      plots.forEach(function (p) { p.plot.setSize({ width: widthOf(p.el), height: 300 }); });
    });
  });
})();
`;
