/**
 * The soak's arithmetic, pure: the gateway's Prometheus text read into counters and a histogram, quantiles
 * of a histogram's increase over an interval, least-squares slopes, a log-bucketed latency histogram for
 * the Node pacer, and the per-interval series the report draws from the raw samples.
 */
import type { GatewayCounters, Sample } from './sample.ts';

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})?\s+(\S+)/;

function labelsOf(text: string | undefined): Record<string, string> {
  const labels: Record<string, string> = {};
  if (!text) return labels;
  for (const match of text.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[match[1]!] = match[2]!;
  return labels;
}

/** The purchase counters and latency histogram of a gateway's `/metrics` answer (Prometheus text format). */
export function parseGatewayMetrics(text: string): GatewayCounters {
  const outcomes: Record<string, number> = {};
  const buckets: [number, number][] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = LINE.exec(line);
    if (!match) continue;
    const [, name, labelText, value] = match;
    const labels = labelsOf(labelText);
    if (name === 'flashsale_purchases_total' && labels.outcome !== undefined) outcomes[labels.outcome] = Number(value);
    else if (name === 'flashsale_purchase_duration_seconds_bucket' && labels.le !== undefined) {
      buckets.push([labels.le === '+Inf' ? Number.POSITIVE_INFINITY : Number(labels.le), Number(value)]);
    }
  }
  buckets.sort((a, b) => a[0] - b[0]);
  return { outcomes, latency: { bounds: buckets.map((b) => b[0]), counts: buckets.map((b) => b[1]) } };
}

/**
 * The q-quantile (0..1) of the observations a cumulative histogram gained between two readings, as
 * Prometheus's histogram_quantile estimates it: linear within the bucket it falls in (from 0 for the
 * first), the largest finite bound when it falls in +Inf. Null when nothing was observed.
 */
export function histogramQuantile(
  q: number,
  bounds: readonly number[],
  before: readonly number[],
  after: readonly number[],
): number | null {
  const counts = after.map((count, i) => count - (before[i] ?? 0));
  const total = counts.at(-1) ?? 0;
  if (!(total > 0)) return null;
  const rank = q * total;
  for (let i = 0; i < bounds.length; i += 1) {
    if (counts[i]! >= rank) {
      const upper = bounds[i]!;
      if (upper === Number.POSITIVE_INFINITY) return bounds[i - 1] ?? null;
      const lower = i === 0 ? 0 : bounds[i - 1]!;
      const below = i === 0 ? 0 : counts[i - 1]!;
      const inBucket = counts[i]! - below;
      return inBucket > 0 ? lower + ((upper - lower) * (rank - below)) / inBucket : upper;
    }
  }
  return null;
}

/** Least-squares slope of y over x (points with a null y are left out); null with fewer than two points. */
export function leastSquaresSlope(points: readonly (readonly [number, number | null])[]): number | null {
  const kept = points.filter((p): p is readonly [number, number] => p[1] !== null && Number.isFinite(p[1]));
  if (kept.length < 2) return null;
  const meanX = kept.reduce((s, p) => s + p[0], 0) / kept.length;
  const meanY = kept.reduce((s, p) => s + p[1], 0) / kept.length;
  let sxy = 0;
  let sxx = 0;
  for (const [x, y] of kept) {
    sxy += (x - meanX) * (y - meanY);
    sxx += (x - meanX) ** 2;
  }
  return sxx === 0 ? null : sxy / sxx;
}

/**
 * A latency histogram of fixed memory: buckets 1 % wide on a log scale from 1 us, so a percentile read
 * from it is within 1 % of the exact one whatever the number of requests (the pacer counts millions).
 */
export class LogHistogram {
  private static readonly GROWTH = Math.log(1.01);
  private readonly counts = new Map<number, number>();
  count = 0;

  record(ms: number): void {
    const bucket = Math.max(0, Math.ceil(Math.log(Math.max(ms, 0.001) / 0.001) / LogHistogram.GROWTH));
    this.counts.set(bucket, (this.counts.get(bucket) ?? 0) + 1);
    this.count += 1;
  }

  /** The p-th percentile (0-100) in ms, the upper edge of its bucket; null when empty. */
  percentile(p: number): number | null {
    if (this.count === 0) return null;
    const rank = Math.max(1, Math.ceil((p / 100) * this.count));
    let seen = 0;
    for (const bucket of [...this.counts.keys()].sort((a, b) => a - b)) {
      seen += this.counts.get(bucket)!;
      if (seen >= rank) return 0.001 * Math.exp(bucket * LogHistogram.GROWTH);
    }
    return null;
  }
}

/** A series as the charts draw it: [seconds since the load started, value or null for a gap]. */
export type Point = [number, number | null];

/** The series of a run, derived from its raw samples: rates and percentiles over each interval between two samples. */
export interface SoakSeries {
  acceptsPerSecond: Point[];
  refusalsPerSecond: Point[];
  ordersWrittenPerSecond: Point[];
  gatewayP50Ms: Point[];
  gatewayP99Ms: Point[];
  clientP50Ms: Point[];
  clientP99Ms: Point[];
  rssMiB: Record<string, Point[]>;
  cpuPercent: Record<string, Point[]>;
  redisUsedMiB: Point[];
  redisSaleKeysMiB: Point[];
  streamLength: Point[];
  streamLag: Point[];
  streamPending: Point[];
}

/** The order processes are listed and drawn in; others follow in the order first seen. */
const PROCESS_ORDER = ['gateway', 'worker-1', 'worker-2', 'reconciler', 'load generator', 'redis', 'mariadb'];

/** The process names of a run's samples, in PROCESS_ORDER. */
export function processNames(samples: readonly Sample[]): string[] {
  const rank = (name: string) => (PROCESS_ORDER.includes(name) ? PROCESS_ORDER.indexOf(name) : PROCESS_ORDER.length);
  return [...new Set(samples.flatMap((s) => Object.keys(s.processes)))].sort((a, b) => rank(a) - rank(b));
}

/**
 * The sample an interval ending at samples[i] starts from: the latest one at least `minSeconds` earlier,
 * so that an extra sample taken just after a regular one (when the load stops) does not make an interval
 * of a few milliseconds, whose rates are noise.
 */
function intervalStart(samples: readonly Sample[], i: number, minSeconds: number): Sample | undefined {
  for (let j = i - 1; j >= 0; j -= 1) if (samples[i]!.t - samples[j]!.t >= minSeconds) return samples[j];
  return undefined;
}

/** Intervals shorter than this are not drawn (see intervalStart). */
const MIN_INTERVAL_SECONDS = 0.5;

const sumValues = (record: Record<string, number>, skip?: string) =>
  Object.entries(record).reduce((sum, [key, value]) => (key === skip ? sum : sum + value), 0);

/** The per-interval series of a run (each point at the end of its interval) and the per-sample ones. */
export function seriesOf(samples: readonly Sample[]): SoakSeries {
  const series: SoakSeries = {
    acceptsPerSecond: [],
    refusalsPerSecond: [],
    ordersWrittenPerSecond: [],
    gatewayP50Ms: [],
    gatewayP99Ms: [],
    clientP50Ms: [],
    clientP99Ms: [],
    rssMiB: {},
    cpuPercent: {},
    redisUsedMiB: [],
    redisSaleKeysMiB: [],
    streamLength: [],
    streamLag: [],
    streamPending: [],
  };
  const names = processNames(samples);
  for (const name of names) {
    series.rssMiB[name] = [];
    series.cpuPercent[name] = [];
  }
  samples.forEach((sample, i) => {
    const t = sample.t;
    for (const name of names) series.rssMiB[name]!.push([t, sample.processes[name]?.rssMiB ?? null]);
    series.redisUsedMiB.push([t, sample.redis?.usedMiB ?? null]);
    series.redisSaleKeysMiB.push([t, sample.redis?.saleKeysMiB ?? null]);
    series.streamLength.push([t, sample.stream?.length ?? null]);
    series.streamLag.push([t, sample.stream?.lag ?? null]);
    series.streamPending.push([t, sample.stream?.pending ?? null]);
    const previous = intervalStart(samples, i, MIN_INTERVAL_SECONDS);
    if (!previous) return;
    const dt = sample.t - previous.t;
    const rate = (now: number | undefined, before: number | undefined): number | null =>
      now === undefined || before === undefined ? null : (now - before) / dt;
    const gw = sample.gateway;
    const gwBefore = previous.gateway;
    series.acceptsPerSecond.push([t, rate(gw?.outcomes.reserved ?? 0, gwBefore?.outcomes.reserved ?? 0)]);
    series.refusalsPerSecond.push([
      t,
      gw && gwBefore ? rate(sumValues(gw.outcomes, 'reserved'), sumValues(gwBefore.outcomes, 'reserved')) : null,
    ]);
    series.ordersWrittenPerSecond.push([t, rate(sample.unitsWritten ?? undefined, previous.unitsWritten ?? undefined)]);
    const quantile = (q: number) => {
      if (!gw || !gwBefore) return null;
      const seconds = histogramQuantile(q, gw.latency.bounds, gwBefore.latency.counts, gw.latency.counts);
      return seconds === null ? null : seconds * 1000;
    };
    series.gatewayP50Ms.push([t, quantile(0.5)]);
    series.gatewayP99Ms.push([t, quantile(0.99)]);
    series.clientP50Ms.push([t, sample.client?.p50Ms ?? null]);
    series.clientP99Ms.push([t, sample.client?.p99Ms ?? null]);
    for (const name of names) {
      const now = sample.processes[name]?.cpuSeconds;
      const before = previous.processes[name]?.cpuSeconds;
      series.cpuPercent[name]!.push([t, now === undefined || before === undefined ? null : Math.max(0, ((now - before) / dt) * 100)]);
    }
  });
  return series;
}

/** Per process: RSS slope after warm-up and CPU over the load window. */
export interface ProcessSummary {
  name: string;
  rssStartMiB: number | null;
  rssEndMiB: number | null;
  rssPeakMiB: number | null;
  /** Least-squares slope of RSS in MiB per minute over the load window's samples after the first 20 %. */
  rssSlopeMiBPerMin: number | null;
  /** CPU seconds used over the load window. */
  cpuSeconds: number | null;
  /** Mean CPU over the load window, % of one core. */
  cpuPercent: number | null;
}

/** The fraction of the load window treated as warm-up: the RSS slope is taken over the samples after it. */
export const WARM_UP_FRACTION = 0.2;

/**
 * Each process's summary over the load window [0, loadSeconds]: RSS at its start and end, peak, slope
 * after warm-up (samples at t >= WARM_UP_FRACTION x loadSeconds), CPU seconds and mean CPU.
 */
export function processSummaries(samples: readonly Sample[], loadSeconds: number): ProcessSummary[] {
  const window = samples.filter((s) => s.t <= loadSeconds + 1e-6);
  const names = processNames(samples);
  return names.map((name) => {
    const rss = window.map((s) => [s.t, s.processes[name]?.rssMiB ?? null] as [number, number | null]);
    const known = rss.filter((p): p is [number, number] => p[1] !== null);
    const slope = leastSquaresSlope(rss.filter(([t]) => t >= WARM_UP_FRACTION * loadSeconds).map(([t, v]) => [t / 60, v] as const));
    // CPU summed over the intervals, each increase on its own: a process of a group that ends (wrk's
    // feed writer at the end of the load) takes its CPU out of the group's total, which is no negative CPU.
    let cpuSeconds: number | null = null;
    let span = 0;
    let previous: Sample | undefined;
    for (const sample of window) {
      const now = sample.processes[name]?.cpuSeconds;
      if (now === undefined) continue;
      const before = previous?.processes[name]?.cpuSeconds;
      if (previous && before !== undefined) {
        cpuSeconds = (cpuSeconds ?? 0) + Math.max(0, now - before);
        span += sample.t - previous.t;
      }
      previous = sample;
    }
    return {
      name,
      rssStartMiB: known[0]?.[1] ?? null,
      rssEndMiB: known.at(-1)?.[1] ?? null,
      rssPeakMiB: known.length > 0 ? Math.max(...known.map((p) => p[1])) : null,
      rssSlopeMiBPerMin: slope,
      cpuSeconds,
      cpuPercent: cpuSeconds !== null && span > 0 ? (cpuSeconds / span) * 100 : null,
    };
  });
}

/** The figures of a run's header, over its load window. */
export interface RunTotals {
  /** 202s counted by the gateway over the load window. */
  accepted: number;
  acceptsPerSecond: number;
  /** Other purchase answers counted by the gateway, by code. */
  refusals: Record<string, number>;
  /** Over the whole load window, from the gateway's histogram (ms). */
  gatewayP50Ms: number | null;
  gatewayP99Ms: number | null;
  /** Units written to MySQL by the end of the run. */
  unitsWritten: number | null;
  processes: ProcessSummary[];
  /** The reconciler's CPU seconds over the gateway's, over the load window. */
  reconcilerToGatewayCpu: number | null;
}

export function runTotals(samples: readonly Sample[], loadEndT: number): RunTotals {
  const window = samples.filter((s) => s.t <= loadEndT + 1e-6);
  const first = window.find((s) => s.gateway);
  const last = window.findLast((s) => s.gateway);
  const outcomes: Record<string, number> = {};
  if (first?.gateway && last?.gateway) {
    for (const [code, count] of Object.entries(last.gateway.outcomes)) {
      const delta = count - (first.gateway.outcomes[code] ?? 0);
      if (delta > 0) outcomes[code] = delta;
    }
  }
  const accepted = outcomes.reserved ?? 0;
  delete outcomes.reserved;
  const span = first && last ? last.t - first.t : 0;
  const quantile = (q: number) => {
    if (!first?.gateway || !last?.gateway) return null;
    const seconds = histogramQuantile(q, last.gateway.latency.bounds, first.gateway.latency.counts, last.gateway.latency.counts);
    return seconds === null ? null : seconds * 1000;
  };
  const processes = processSummaries(samples, loadEndT);
  const cpuOf = (name: string) => processes.find((p) => p.name === name)?.cpuSeconds ?? null;
  const reconciler = cpuOf('reconciler');
  const gateway = cpuOf('gateway');
  return {
    accepted,
    acceptsPerSecond: span > 0 ? accepted / span : 0,
    refusals: outcomes,
    gatewayP50Ms: quantile(0.5),
    gatewayP99Ms: quantile(0.99),
    unitsWritten: samples.findLast((s) => s.unitsWritten !== undefined)?.unitsWritten ?? null,
    processes,
    reconcilerToGatewayCpu: reconciler !== null && gateway ? reconciler / gateway : null,
  };
}
