import type { GatewayMetrics } from '../metrics.ts';

/** Purchases per second by outcome, and the purchase latency's p50 and p99, between two samples. */
export interface Traffic {
  /** Seconds the figures cover (since the previous sample). */
  seconds: number;
  perSecond: Record<string, number>;
  /** Latency of the purchases answered in the window, all outcomes, in ms; null when none was. */
  p50Ms: number | null;
  p99Ms: number | null;
}

type Sample = { at: number; outcomes: Map<string, number>; buckets: { le: number; count: number }[] };

/**
 * Reads this gateway process's purchase metrics (the counters and histogram /metrics serves) and turns
 * the difference between two reads into rates and percentiles. What one process saw: with
 * GATEWAY_WORKERS > 1 or several hosts, a dashboard shows the process that serves its stream (the
 * sale's accepted units per second, read from Redis, count every gateway's).
 */
export class TrafficSampler {
  private last: Sample | undefined;

  constructor(
    private readonly metrics: GatewayMetrics,
    private readonly now: () => number = () => performance.now(),
  ) {}

  async sample(): Promise<Traffic | null> {
    const current = await this.read();
    const previous = this.last;
    this.last = current;
    if (!previous) return null;
    const seconds = Math.max((current.at - previous.at) / 1000, 0.001);
    const perSecond: Record<string, number> = {};
    for (const [outcome, total] of current.outcomes) {
      const added = total - (previous.outcomes.get(outcome) ?? 0);
      if (added > 0) perSecond[outcome] = Math.round((added / seconds) * 10) / 10;
    }
    const window = current.buckets.map((bucket, i) => ({ le: bucket.le, count: bucket.count - (previous.buckets[i]?.count ?? 0) }));
    return { seconds: Math.round(seconds * 1000) / 1000, perSecond, p50Ms: quantileMs(window, 0.5), p99Ms: quantileMs(window, 0.99) };
  }

  private async read(): Promise<Sample> {
    const [purchases, latency] = await Promise.all([this.metrics.purchases.get(), this.metrics.purchaseSeconds.get()]);
    const outcomes = new Map(purchases.values.map((value) => [String(value.labels.outcome), value.value]));
    const buckets = latency.values
      .filter((value) => value.metricName?.endsWith('_bucket'))
      .map((value) => ({ le: value.labels.le === '+Inf' ? Infinity : Number(value.labels.le), count: value.value }));
    return { at: this.now(), outcomes, buckets };
  }
}

/**
 * The q-quantile of cumulative histogram buckets, in ms, interpolated linearly inside its bucket as
 * Prometheus's histogram_quantile does (the top bucket answers its lower bound). Null for no observation.
 */
export function quantileMs(buckets: { le: number; count: number }[], q: number): number | null {
  const total = buckets.at(-1)?.count ?? 0;
  if (total <= 0) return null;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const { le, count } of buckets) {
    if (count >= rank) {
      if (le === Infinity) return lower * 1000;
      const inBucket = count - below;
      const fraction = inBucket > 0 ? (rank - below) / inBucket : 1;
      return Math.round((lower + (le - lower) * fraction) * 1000 * 100) / 100;
    }
    lower = le;
    below = count;
  }
  return lower * 1000;
}
