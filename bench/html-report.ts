/**
 * The benchmark's result as one self-contained HTML page (inline SVG, no script, nothing fetched),
 * written beside the JSON: offered against consumed load per step, latency percentiles per phase,
 * machine CPU per message by process, Kafka records per message by topic, and IM latency beside a
 * campaign. Every bar carries its figure in `data-series`, `data-category` and `data-value` (and a
 * tooltip), so test/bench/run.stack.test.ts can check the charts against the JSON.
 */
import type { LatencyFigures } from './analysis.ts';
import type { BenchResult } from './report.ts';

/** One series of a bar chart: a value per category, null where it was not measured. */
interface ChartSeries {
  readonly name: string;
  readonly values: ReadonlyArray<number | null>;
}

interface BarChart {
  readonly title: string;
  readonly unit: string;
  readonly categories: readonly string[];
  readonly series: readonly ChartSeries[];
  /** Stacked: a category's series add up to one bar. Grouped otherwise. */
  readonly stacked?: boolean;
  readonly note?: string;
}

const WIDTH = 760;
const HEIGHT = 300;
const MARGIN = { left: 64, right: 16, top: 16, bottom: 48 };
const COLOURS = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const round = (x: number) => Math.round(x * 1000) / 1000;

/** A round step for about five grid lines up to `max`. */
function gridStep(max: number): number {
  const raw = max / 5;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw)!;
}

function barChartSvg(chart: BarChart): string {
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const totals = chart.categories.map((_, c) =>
    chart.stacked ? chart.series.reduce((sum, s) => sum + (s.values[c] ?? 0), 0) : Math.max(0, ...chart.series.map((s) => s.values[c] ?? 0)),
  );
  const step = gridStep(Math.max(...totals, 1e-9) * 1.05);
  const top = Math.ceil((Math.max(...totals, 1e-9) * 1.05) / step) * step;
  const y = (v: number) => MARGIN.top + plotH - (v / top) * plotH;
  const out: string[] = [];
  for (let v = 0; v <= top + step / 2; v += step) {
    out.push(`<line x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`);
    out.push(`<text x="${MARGIN.left - 6}" y="${y(v) + 4}" text-anchor="end">${round(v)}</text>`);
  }
  const band = plotW / Math.max(1, chart.categories.length);
  const barW = chart.stacked ? band * 0.6 : (band * 0.8) / Math.max(1, chart.series.length);
  chart.categories.forEach((category, c) => {
    const x0 = MARGIN.left + c * band;
    let stackedTop = 0;
    chart.series.forEach((s, i) => {
      const value = s.values[c];
      if (value === null || value === undefined) return;
      const from = chart.stacked ? stackedTop : 0;
      if (chart.stacked) stackedTop += value;
      const x = chart.stacked ? x0 + band * 0.2 : x0 + band * 0.1 + i * barW;
      const label = `${s.name}, ${category}: ${round(value)} ${chart.unit}`;
      out.push(
        `<rect x="${round(x)}" y="${round(y(from + value))}" width="${round(barW)}" height="${round(Math.max(0, y(from) - y(from + value)))}" fill="${COLOURS[i % COLOURS.length]}" data-series="${escape(s.name)}" data-category="${escape(category)}" data-value="${value}"><title>${escape(label)}</title></rect>`,
      );
    });
    out.push(`<text x="${round(x0 + band / 2)}" y="${HEIGHT - MARGIN.bottom + 16}" text-anchor="middle">${escape(category)}</text>`);
  });
  out.push(`<text x="14" y="${MARGIN.top + plotH / 2}" transform="rotate(-90 14 ${MARGIN.top + plotH / 2})" text-anchor="middle">${escape(chart.unit)}</text>`);
  const legend = chart.series
    .map((s, i) => `<span class="key"><span class="swatch" style="background:${COLOURS[i % COLOURS.length]}"></span>${escape(s.name)}</span>`)
    .join(' ');
  return [
    `<figure data-chart="${escape(chart.title)}">`,
    `<figcaption>${escape(chart.title)}</figcaption>`,
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" role="img" aria-label="${escape(chart.title)}">`,
    ...out,
    '</svg>',
    `<div class="legend">${legend}</div>`,
    chart.note ? `<p class="note">${escape(chart.note)}</p>` : '',
    '</figure>',
  ].join('\n');
}

/** The charts of a run; a chart whose phase did not run is left out. */
export function benchCharts(result: BenchResult): BarChart[] {
  const steps = result.steps;
  const labels = steps.map((s) => s.label);
  const charts: BarChart[] = [
    {
      title: 'Offered and consumed load per step',
      unit: 'persisted msgs/s',
      categories: labels,
      series: [
        { name: 'offered', values: steps.map((s) => s.offeredRate) },
        { name: 'generated', values: steps.map((s) => s.generatorRate) },
        { name: 'consumed', values: steps.map((s) => s.consumedRate) },
      ],
      note: 'Where consumed stops following offered, the pipeline no longer keeps up (a step is sustained when its lag stays flat and drains).',
    },
  ];

  const phases: Array<[string, LatencyFigures | null | undefined]> = [
    ['100 msgs/s', result.latencyAt100],
    [result.latency ? `${result.latency.rate} msgs/s` : '', result.latency],
    [result.slowVendorLatency ? `${result.slowVendorLatency.rate} msgs/s, ${result.slowVendorLatency.slowVendor} slow` : '', result.slowVendorLatency],
    ['IM beside a campaign', result.campaign?.imWithCampaign],
  ];
  const ran = phases.flatMap(([name, l]) => (l ? [[name, l] as const] : []));
  if (ran.length > 0)
    charts.push({
      title: 'Persist → vendor latency per phase (leading pushes)',
      unit: 'ms',
      categories: ran.map(([name]) => name),
      series: (['p50Ms', 'p90Ms', 'p99Ms', 'p999Ms'] as const).map((q) => ({
        name: q.replace('Ms', '').replace('p999', 'p99.9'),
        values: ran.map(([, l]) => l[q]),
      })),
    });

  const processes = ['workers', 'bench', 'broker', 'registry', 'mariadb', 'clickhouse', 'other'] as const;
  charts.push({
    title: 'Machine CPU per persisted message, by process',
    unit: 'ms/msg',
    categories: labels,
    stacked: true,
    series: processes.map((p) => ({ name: p, values: steps.map((s) => s.boxCpuMsPerMessage[p]) })),
    note: 'The bar is the whole machine; "bench" is the load generator and the vendor emulators, "other" what no process was charged.',
  });

  const topics = [...new Set(steps.flatMap((s) => Object.keys(s.breakdown?.producedPerMessageByTopic ?? {})))];
  if (topics.length > 0)
    charts.push({
      title: 'Kafka records produced per persisted message, by topic',
      unit: 'records/msg',
      categories: labels,
      stacked: true,
      series: topics.map((t) => ({ name: t, values: steps.map((s) => (s.breakdown ? (s.breakdown.producedPerMessageByTopic[t] ?? 0) : null)) })),
    });

  const c = result.campaign;
  if (c)
    charts.push({
      title: 'IM latency alone and beside a campaign',
      unit: 'ms',
      categories: ['IM alone', 'IM beside the campaign', 'IM alone, after'],
      series: (['p50Ms', 'p99Ms'] as const).map((q) => ({
        name: q.replace('Ms', ''),
        values: [c.imAlone[q], c.imWithCampaign[q], c.imAloneAfter[q]],
      })),
      note: `IM at ${c.imRate} msgs/s; the campaign reached ${c.reached} users at ${c.sendPerSecond}/s (${c.besideSendPerSecond}/s beside IM); p99 increase ${c.imP99IncreasePct ?? 'n/a'} %.`,
    });
  return charts;
}

export function renderHtmlReport(result: BenchResult, table: string): string {
  const e = result.environment;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>offline-push benchmark ${escape(result.startedAt)}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 820px; color: #222; }
figure { margin: 2em 0; }
figcaption { font-weight: 600; margin-bottom: .5em; }
svg text { font-size: 11px; fill: #444; }
.legend { font-size: 12px; }
.key { margin-right: 1em; white-space: nowrap; }
.swatch { display: inline-block; width: .8em; height: .8em; margin-right: .3em; vertical-align: -1px; }
.note { font-size: 12px; color: #666; }
pre { font-size: 11px; overflow-x: auto; background: #f6f6f6; padding: 1em; }
</style>
</head>
<body>
<h1>offline-push benchmark</h1>
<p>${escape(result.startedAt)} – ${escape(result.finishedAt)}, git ${escape(e.gitSha ?? 'unknown')}, ${e.cpus} × ${escape(e.cpuModel)}, Node ${escape(e.node)}, kafkajs ${escape(e.kafkajs)}; ${escape(e.coLocated)}. Load average at start ${e.loadAverageAtStart.join(' / ')}.</p>
<p><code>${escape(result.command)}</code></p>
${benchCharts(result).map(barChartSvg).join('\n')}
<h2>Targets</h2>
<pre>${escape(table)}</pre>
</body>
</html>
`;
}
