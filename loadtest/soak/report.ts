/**
 * The soak's report, pure: line charts drawn as inline SVG (no charting library: axes, a grid, lines and
 * a legend are all a time series needs), a self-contained HTML page (no script, no stylesheet from the
 * network) and one standalone SVG with the main charts stacked, for docs/ and the README.
 */
import { runTotals, seriesOf, WARM_UP_FRACTION, type Point, type RunTotals, type SoakSeries } from './analysis.ts';
import type { SoakRun } from './sample.ts';

export interface ChartSeries {
  name: string;
  color: string;
  points: readonly Point[];
  dashed?: boolean;
}

export interface ChartSpec {
  title: string;
  /** The y axis's unit, shown after the title. */
  unit: string;
  series: ChartSeries[];
}

export interface ChartFrame {
  width: number;
  height: number;
  /** The x axis's extent in seconds (shared by the charts of one report). */
  xMax: number;
  /** Where the load stopped: a dashed vertical line. */
  loadEndT?: number;
}

const FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"';
const MARGIN = { left: 58, right: 16, top: 30, bottom: 26 };

/** Escapes text for XML and HTML content and attribute values. */
export function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** About `count` round tick values covering [min, max] (steps of 1, 2 or 5 x 10^n). */
export function niceTicks(min: number, max: number, count = 5): number[] {
  if (!(max > min)) max = min + 1;
  const raw = (max - min) / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) ?? 10 * magnitude;
  const ticks: number[] = [];
  for (let v = Math.floor(min / step) * step; v <= max + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
  if (ticks.at(-1)! < max) ticks.push(Number((ticks.at(-1)! + step).toPrecision(12)));
  return ticks;
}

/** A number as a tick label or table cell: 1.2k, 3.4M, 0.25, 12. */
export function formatNumber(value: number): string {
  const abs = Math.abs(value);
  if (abs >= 1e6) return `${Number((value / 1e6).toPrecision(3))}M`;
  if (abs >= 1e4) return `${Number((value / 1e3).toPrecision(3))}k`;
  if (abs >= 100 || Number.isInteger(value)) return String(Math.round(value));
  return String(Number(value.toPrecision(3)));
}

/** The line of a series as SVG path data; a null value breaks the line. */
export function pathOf(points: readonly Point[], x: (t: number) => number, y: (v: number) => number): string {
  let path = '';
  let drawing = false;
  for (const [t, v] of points) {
    if (v === null || !Number.isFinite(v)) {
      drawing = false;
      continue;
    }
    path += `${drawing ? 'L' : 'M'}${x(t).toFixed(1)} ${y(v).toFixed(1)}`;
    drawing = true;
  }
  return path;
}

/** One chart as an SVG group at (0, 0) of `frame`'s size: title and unit, legend, grid, axes, lines. */
export function chartGroup(spec: ChartSpec, frame: ChartFrame): string {
  const plotW = frame.width - MARGIN.left - MARGIN.right;
  const plotH = frame.height - MARGIN.top - MARGIN.bottom;
  const values = spec.series.flatMap((s) => s.points.map((p) => p[1])).filter((v): v is number => v !== null && Number.isFinite(v));
  const yTicks = niceTicks(Math.min(0, ...values), Math.max(0, ...values) || 1, 4);
  const yMin = yTicks[0]!;
  const yMax = yTicks.at(-1)!;
  const minutes = frame.xMax > 180;
  const xTicks = niceTicks(0, minutes ? frame.xMax / 60 : frame.xMax, 8).filter(
    (v) => v <= (minutes ? frame.xMax / 60 : frame.xMax) + 1e-9,
  );
  const x = (t: number) => MARGIN.left + (frame.xMax > 0 ? (t / frame.xMax) * plotW : 0);
  const y = (v: number) => MARGIN.top + plotH - ((v - yMin) / (yMax - yMin)) * plotH;
  const parts: string[] = [];
  parts.push(`<rect x="0" y="0" width="${frame.width}" height="${frame.height}" fill="#fff"/>`);
  parts.push(
    `<text x="${MARGIN.left}" y="18" font-size="13" font-weight="600" fill="#222">${escapeXml(spec.title)}<tspan dx="6" font-weight="400" fill="#666">(${escapeXml(spec.unit)})</tspan></text>`,
  );
  // Legend, right-aligned on the title's line.
  let legendX = frame.width - MARGIN.right;
  for (const series of [...spec.series].reverse()) {
    const label = escapeXml(series.name);
    legendX -= 7 * series.name.length + 26;
    parts.push(
      `<g class="legend"><line x1="${legendX}" y1="14" x2="${legendX + 16}" y2="14" stroke="${series.color}" stroke-width="2.5"${series.dashed ? ' stroke-dasharray="4 3"' : ''}/><text x="${legendX + 20}" y="18" font-size="11" fill="#333">${label}</text></g>`,
    );
  }
  for (const tick of yTicks) {
    parts.push(
      `<line x1="${MARGIN.left}" y1="${y(tick).toFixed(1)}" x2="${MARGIN.left + plotW}" y2="${y(tick).toFixed(1)}" stroke="#e5e5e5"/>`,
    );
    parts.push(
      `<text x="${MARGIN.left - 6}" y="${(y(tick) + 4).toFixed(1)}" font-size="10" fill="#555" text-anchor="end">${formatNumber(tick)}</text>`,
    );
  }
  for (const tick of xTicks) {
    const px = x(minutes ? tick * 60 : tick);
    parts.push(
      `<line x1="${px.toFixed(1)}" y1="${MARGIN.top + plotH}" x2="${px.toFixed(1)}" y2="${MARGIN.top + plotH + 4}" stroke="#999"/>`,
    );
    parts.push(
      `<text x="${px.toFixed(1)}" y="${MARGIN.top + plotH + 16}" font-size="10" fill="#555" text-anchor="middle">${formatNumber(tick)}${tick === xTicks.at(-1) ? (minutes ? ' min' : ' s') : ''}</text>`,
    );
  }
  parts.push(`<line x1="${MARGIN.left}" y1="${MARGIN.top + plotH}" x2="${MARGIN.left + plotW}" y2="${MARGIN.top + plotH}" stroke="#999"/>`);
  if (frame.loadEndT !== undefined && frame.loadEndT < frame.xMax) {
    const px = x(frame.loadEndT).toFixed(1);
    parts.push(`<line x1="${px}" y1="${MARGIN.top}" x2="${px}" y2="${MARGIN.top + plotH}" stroke="#888" stroke-dasharray="3 3"/>`);
    // The label on the side of the line with room for it.
    const right = frame.xMax - frame.loadEndT > 0.15 * frame.xMax;
    parts.push(
      `<text x="${Number(px) + (right ? 3 : -3)}" y="${MARGIN.top + 10}" font-size="10" fill="#777" stroke="#fff" stroke-width="3" paint-order="stroke" text-anchor="${right ? 'start' : 'end'}">load stopped</text>`,
    );
  }
  for (const series of spec.series) {
    const d = pathOf(series.points, x, y);
    if (d)
      parts.push(
        `<path class="series" data-series="${escapeXml(series.name)}" d="${d}" fill="none" stroke="${series.color}" stroke-width="1.8" stroke-linejoin="round"${series.dashed ? ' stroke-dasharray="5 3"' : ''}/>`,
      );
    const lone = series.points.filter(
      ([, v], i, all) => v !== null && (all[i - 1]?.[1] ?? null) === null && (all[i + 1]?.[1] ?? null) === null,
    );
    for (const [t, v] of lone) parts.push(`<circle cx="${x(t).toFixed(1)}" cy="${y(v!).toFixed(1)}" r="2.5" fill="${series.color}"/>`);
  }
  return `<g class="chart" ${FONT}>${parts.join('')}</g>`;
}

/** One chart as a standalone SVG element. */
export function chartSvg(spec: ChartSpec, frame: ChartFrame): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${frame.width} ${frame.height}" width="100%" role="img" aria-label="${escapeXml(spec.title)}">${chartGroup(spec, frame)}</svg>`;
}

/** Several charts stacked in one SVG under a title and a line of key figures. */
export function stackedSvg(
  title: string,
  subtitle: string,
  specs: readonly ChartSpec[],
  frame: Omit<ChartFrame, 'height'> & { chartHeight: number },
): string {
  const head = 48;
  const height = head + specs.length * frame.chartHeight;
  const charts = specs.map(
    (spec, i) =>
      `<g transform="translate(0 ${head + i * frame.chartHeight})">${chartGroup(spec, { ...frame, height: frame.chartHeight })}</g>`,
  );
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${frame.width} ${height}" width="${frame.width}" height="${height}">`,
    `<rect width="${frame.width}" height="${height}" fill="#fff"/>`,
    `<text x="${MARGIN.left}" y="20" ${FONT} font-size="15" font-weight="700" fill="#111">${escapeXml(title)}</text>`,
    `<text x="${MARGIN.left}" y="38" ${FONT} font-size="11" fill="#444">${escapeXml(subtitle)}</text>`,
    ...charts,
    '</svg>',
  ].join('');
}

const PROCESS_COLORS: Record<string, string> = {
  gateway: '#1f77b4',
  'worker-1': '#2ca02c',
  'worker-2': '#17becf',
  reconciler: '#d62728',
  'load generator': '#7f7f7f',
  redis: '#9467bd',
  mariadb: '#ff7f0e',
};
const EXTRA_COLORS = ['#8c564b', '#e377c2', '#bcbd22', '#393b79'];
const colorOf = (name: string, i: number) => PROCESS_COLORS[name] ?? EXTRA_COLORS[i % EXTRA_COLORS.length]!;

const perProcess = (record: Record<string, Point[]>, only?: (name: string) => boolean): ChartSeries[] =>
  Object.entries(record)
    .filter(([name]) => !only || only(name))
    .map(([name, points], i) => ({ name, color: colorOf(name, i), points }));

/** The report's charts, in order: throughput, latency, RSS, CPU, Redis memory, the stream's length, its backlog. */
export function chartSpecs(series: SoakSeries): ChartSpec[] {
  const hasClient = series.clientP50Ms.some((p) => p[1] !== null);
  const hasRefusals = series.refusalsPerSecond.some((p) => (p[1] ?? 0) > 0);
  return [
    {
      title: 'Throughput',
      unit: 'per second',
      series: [
        { name: 'accepted (202)', color: '#1f77b4', points: series.acceptsPerSecond },
        { name: 'orders written', color: '#2ca02c', points: series.ordersWrittenPerSecond, dashed: true },
        ...(hasRefusals ? [{ name: 'refused', color: '#d62728', points: series.refusalsPerSecond }] : []),
      ],
    },
    {
      title: 'Accept latency',
      unit: 'ms',
      series: [
        { name: 'p50 gateway', color: '#1f77b4', points: series.gatewayP50Ms },
        { name: 'p99 gateway', color: '#d62728', points: series.gatewayP99Ms },
        ...(hasClient
          ? [
              { name: 'p50 client', color: '#1f77b4', points: series.clientP50Ms, dashed: true },
              { name: 'p99 client', color: '#d62728', points: series.clientP99Ms, dashed: true },
            ]
          : []),
      ],
    },
    { title: 'Resident memory per process', unit: 'MiB', series: perProcess(series.rssMiB, (name) => name !== 'mariadb') },
    { title: 'CPU per process', unit: '% of one core', series: perProcess(series.cpuPercent) },
    {
      title: 'Redis memory',
      unit: 'MiB',
      series: [
        { name: 'used_memory (whole server)', color: '#9467bd', points: series.redisUsedMiB },
        { name: "the sale's buyers + stream", color: '#8c564b', points: series.redisSaleKeysMiB, dashed: true },
      ],
    },
    { title: 'Sale stream', unit: 'entries', series: [{ name: 'length (XLEN)', color: '#1f77b4', points: series.streamLength }] },
    {
      title: "Order writers' backlog",
      unit: 'entries',
      series: [
        { name: 'lag (not delivered)', color: '#d62728', points: series.streamLag },
        { name: 'pending (not acknowledged)', color: '#ff7f0e', points: series.streamPending, dashed: true },
      ],
    },
  ];
}

/** A count in full, with thousands separators. */
const count = (value: number | null) => (value === null ? '–' : value.toLocaleString('en-US'));
const fixed = (value: number | null | undefined, digits = 1) =>
  value === null || value === undefined || !Number.isFinite(value) ? '–' : value.toFixed(digits);
const signed = (value: number | null, digits = 2) => (value === null ? '–' : `${value >= 0 ? '+' : ''}${value.toFixed(digits)}`);

/** The one-line account of a run: rate, latency, ledger. */
export function headline(run: SoakRun, totals: RunTotals): string {
  const { parameters: p, ledger } = run;
  return [
    `${formatNumber(Math.round(totals.acceptsPerSecond))} accepts/s for ${run.loadEndT < 120 ? `${fixed(run.loadEndT, 0)} s` : `${fixed(run.loadEndT / 60, 1)} min`} (${p.mode === 'wrk' ? `wrk -c${p.connections}` : `${p.rate}/s paced`})`,
    `gateway p50 ${fixed(totals.gatewayP50Ms, 2)} ms, p99 ${fixed(totals.gatewayP99Ms, 2)} ms`,
    `ledger ${ledger.passed ? 'PASS' : 'FAIL'}`,
  ].join(' · ');
}

export interface RenderedReport {
  html: string;
  svg: string;
  totals: RunTotals;
}

/** The HTML report and the stacked SVG of a run. */
export function renderReport(run: SoakRun): RenderedReport {
  const series = seriesOf(run.samples);
  const totals = runTotals(run.samples, run.loadEndT);
  const specs = chartSpecs(series);
  const xMax = Math.max(run.loadEndT, ...run.samples.map((s) => s.t));
  const frame = { width: 900, xMax, loadEndT: run.loadEndT };
  const title = `flashsale soak, ${run.parameters.startedAt.slice(0, 16).replace('T', ' ')} UTC`;
  const svg = stackedSvg(title, headline(run, totals), specs, { ...frame, chartHeight: 200 });
  return { html: renderHtml(run, totals, specs, frame), svg, totals };
}

function table(head: string[], rows: (string | number)[][]): string {
  const cells = (row: (string | number)[], tag: string) =>
    row.map((cell) => `<${tag}>${typeof cell === 'number' ? formatNumber(cell) : cell}</${tag}>`).join('');
  return `<table><thead><tr>${cells(head, 'th')}</tr></thead><tbody>${rows.map((row) => `<tr>${cells(row, 'td')}</tr>`).join('')}</tbody></table>`;
}

function renderHtml(run: SoakRun, totals: RunTotals, specs: ChartSpec[], frame: Omit<ChartFrame, 'height'>): string {
  const { parameters: p, client, ledger } = run;
  const e = escapeXml;
  const verdict = ledger.passed
    ? `<p class="pass">Ledger PASS: every unit the reserve script took is an order in MySQL, nothing in flight or dead-lettered, audit drift ${ledger.auditDrift ?? '–'}.</p>`
    : `<p class="fail">Ledger FAIL: ${ledger.failures.map(e).join('; ')}</p>`;
  const warmUp = WARM_UP_FRACTION * run.loadEndT;
  const processRows = totals.processes.map((proc) => [
    e(proc.name),
    fixed(proc.rssStartMiB),
    fixed(proc.rssEndMiB),
    fixed(proc.rssPeakMiB),
    signed(proc.rssSlopeMiBPerMin),
    fixed(proc.cpuSeconds),
    fixed(proc.cpuPercent),
    e(String(run.exits[proc.name] ?? '')),
  ]);
  const refusals =
    Object.entries(totals.refusals)
      .map(([code, n]) => `${e(code)} ${formatNumber(n)}`)
      .join(', ') || 'none';
  const logLines = Object.entries(run.logExcerpts).filter(([, lines]) => lines.length > 0);
  const warnings = run.samples.reduce<Record<string, number>>((sum, s) => {
    for (const [name, n] of Object.entries(s.warnings ?? {})) sum[name] = (sum[name] ?? 0) + n;
    return sum;
  }, {});
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${e(`soak ${p.startedAt}`)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#222;max-width:960px;margin:24px auto;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}
.headline{font-size:15px;color:#333;margin:0 0 12px}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}th,td{border-bottom:1px solid #e3e3e3;padding:3px 10px;text-align:right}th:first-child,td:first-child{text-align:left}
th{background:#f6f6f6;font-weight:600}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 14px;margin:6px 0;font-size:13px}dt{color:#555}dd{margin:0}
.pass,.fail{padding:8px 12px;border-radius:4px;font-weight:600}.pass{background:#e8f5e9;color:#1b5e20}.fail{background:#ffebee;color:#b71c1c}
.chart-box{margin:10px 0 18px;border:1px solid #eee}
.note{color:#555;font-size:12.5px}
pre{font-size:11.5px;background:#f7f7f7;padding:6px;overflow-x:auto}
</style></head><body>
<h1>Soak: ${e(p.startedAt)}</h1>
<p class="headline">${e(headline(run, totals))}</p>
${verdict}
<h2>Run</h2>
<dl>
<dt>load</dt><dd>${e(p.load)}</dd>
<dt>length</dt><dd>${fixed(run.loadEndT, 1)} s of load (asked ${fixed(p.loadSeconds, 0)} s), then the drain; a sample every ${p.sampleSeconds} s (${run.samples.length} samples)</dd>
<dt>system</dt><dd>${e(p.processes)}</dd>
<dt>sale</dt><dd>id ${p.saleId}, stock ${formatNumber(p.stock)}, 1 unit per buyer, every request a new buyer; Redis prefix ${e(p.redisPrefix)}, database ${e(p.database)}</dd>
<dt>commit</dt><dd>${e(p.commit)}</dd>
<dt>machine</dt><dd>${e(p.machine)}; Node ${e(p.node)}; load average ${p.loadAverageAtStart} at the start</dd>
</dl>
<h2>Totals over the load</h2>
<dl>
<dt>accepted (gateway)</dt><dd>${formatNumber(totals.accepted)}, ${formatNumber(Math.round(totals.acceptsPerSecond))}/s on average</dd>
<dt>refused (gateway)</dt><dd>${refusals}</dd>
<dt>load generator</dt><dd>${formatNumber(client.requests)} requests, ${formatNumber(client.ok)} 2xx, ${formatNumber(client.refused)} non-2xx, ${formatNumber(client.errors)} transport errors${client.dropped ? `, ${formatNumber(client.dropped)} dropped` : ''}</dd>
<dt>latency, gateway</dt><dd>p50 ${fixed(totals.gatewayP50Ms, 2)} ms, p99 ${fixed(totals.gatewayP99Ms, 2)} ms (from the gateway's histogram: request read to answer, in-process)</dd>
<dt>latency, client</dt><dd>p50 ${fixed(client.p50Ms, 2)} ms, p99 ${fixed(client.p99Ms, 2)} ms, max ${fixed(client.maxMs, 1)} ms (the load generator's, whole run)</dd>
<dt>orders written</dt><dd>${formatNumber(totals.unitsWritten ?? 0)}; drained ${fixed(ledger.drainSeconds, 1)} s after the load stopped</dd>
<dt>reconciler CPU</dt><dd>${totals.reconcilerToGatewayCpu === null ? '–' : `${(totals.reconcilerToGatewayCpu * 100).toFixed(1)} % of the gateway's`}</dd>
</dl>
<p class="note">Three counts of accepted purchases, each true of what it counts: the load generator's 2xx are the answers it read before it stopped (up to one per connection more were still in flight); the gateway's accepted are its counter between the first and the last sample of the load (not the seconds before the first sample or after the last); the units taken in Redis (the ledger below) are every purchase the reserve script accepted, the in-flight ones included, and are the count held against MySQL.</p>
<h2>Processes over the load</h2>
${table(['process', 'RSS start MiB', 'RSS end MiB', 'RSS peak MiB', `RSS slope MiB/min (after ${fixed(warmUp, 0)} s)`, 'CPU s', 'CPU % of a core', 'exit'], processRows)}
<p class="note">RSS slope: least-squares over the samples after the first ${WARM_UP_FRACTION * 100} % of the load. redis: its own INFO (used_memory_rss, used_cpu_user + sys); mariadb: from /proc when local. Both serve the whole box, not only this run. ${
    Object.keys(warnings).length
      ? `Log lines at warn or above: ${Object.entries(warnings)
          .map(([n, c]) => `${e(n)} ${c}`)
          .join(', ')}.`
      : 'No log line at warn or above.'
  }</p>
<h2>Ledger after the drain</h2>
${table(
  ['stock', 'taken in Redis', 'buyers in Redis', 'orders in MySQL', 'units in MySQL', 'in flight', 'dead-lettered', 'lost', 'audit drift'],
  [
    [
      ledger.stock,
      ledger.takenInRedis,
      ledger.buyersInRedis,
      ledger.ordersInDb,
      ledger.unitsInDb,
      ledger.inFlight,
      ledger.deadLettered,
      ledger.lostReservations,
      ledger.auditDrift,
    ].map(count),
  ],
)}
<p class="note">Audit checked at ${e(ledger.auditCheckedAt ?? 'never')}${ledger.auditAfterDrain ? ' (after the drain)' : ' (before the drain: no audit ran after it in time)'}.</p>
<h2>Charts</h2>
<p class="note">Rates and latencies are over each sampling interval. Accepts and latency come from the gateway's <code>/metrics</code> (counter and histogram deltas; the histogram's buckets are 0.5, 1, 2, 5, 10, 25 ms…, percentiles interpolated within them)${p.mode === 'rate' ? '; the dashed latency lines are the pacer’s own, per interval' : ''}. Orders written: the sale's <code>sold_units</code> in MySQL.</p>
${specs.map((spec) => `<div class="chart-box">${chartSvg(spec, { ...frame, height: 230 })}</div>`).join('\n')}
${run.notes.length ? `<h2>Notes</h2><ul>${run.notes.map((n) => `<li>${e(n)}</li>`).join('')}</ul>` : ''}
${logLines.length ? `<h2>Log excerpts (warn and above)</h2>${logLines.map(([name, lines]) => `<h3>${e(name)}</h3><pre>${lines.map(e).join('\n')}</pre>`).join('')}` : ''}
</body></html>
`;
}
