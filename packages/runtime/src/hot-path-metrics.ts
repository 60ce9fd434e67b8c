import { Counter, type Metric, type MetricValueWithName, type Registry } from 'prom-client';

/**
 * Metrics for a path that runs for every request of a crowd (the gateway's purchase), where prom-client's
 * own `observe` and `inc` are a measurable share of the request: each call builds a labels object,
 * validates it, hashes it and looks the series up by that hash. Here a counter's increment and a
 * histogram's observation are a few array writes; what Prometheus scrapes is the same text.
 */

/**
 * A histogram without labels, exposed exactly as prom-client's `Histogram` of the same name, help and
 * buckets (cumulative `_bucket` series by `le`, then `+Inf`, `_sum` and `_count`; summed across cluster
 * processes), whose `observe` is a bucket search over a typed array and two additions.
 */
export class HotPathHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly bounds: Float64Array;
  /** Observations per bucket, not cumulative; the last slot holds those above every bound. */
  private readonly counts: Float64Array;
  private sum = 0;

  constructor(
    readonly name: string,
    readonly help: string,
    buckets: readonly number[],
    registers: readonly Registry[],
  ) {
    if (buckets.length === 0 || buckets.some((bound, i) => !Number.isFinite(bound) || (i > 0 && bound <= buckets[i - 1]!))) {
      throw new Error(`${name}: the buckets must be finite numbers in increasing order`);
    }
    this.bounds = Float64Array.from(buckets);
    this.counts = new Float64Array(buckets.length + 1);
    // The registry asks a metric for nothing but its name and `get()` (and `reset()` on resetMetrics).
    for (const registry of registers) registry.registerMetric(this as unknown as Metric);
  }

  /** Counts one observation in the first bucket whose bound is at least `value`, as prom-client does. */
  observe(value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`${this.name}: value is not a valid number: ${value}`);
    const bounds = this.bounds;
    let bucket = 0;
    while (bucket < bounds.length && value > bounds[bucket]!) bucket += 1;
    this.counts[bucket]! += 1;
    this.sum += value;
  }

  async get(): Promise<{ name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: MetricValueWithName<string>[] }> {
    const bucketName = `${this.name}_bucket`;
    const values: MetricValueWithName<string>[] = [];
    let cumulative = 0;
    for (let i = 0; i < this.bounds.length; i += 1) {
      cumulative += this.counts[i]!;
      values.push({ labels: { le: this.bounds[i]! }, value: cumulative, metricName: bucketName });
    }
    // Every observation: those within the bounds and those above the last.
    const count = cumulative + this.counts[this.bounds.length]!;
    values.push(
      { labels: { le: '+Inf' }, value: count, metricName: bucketName },
      { labels: {}, value: this.sum, metricName: `${this.name}_sum` },
      { labels: {}, value: count, metricName: `${this.name}_count` },
    );
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.counts.fill(0);
    this.sum = 0;
  }
}

/**
 * A prom-client `Counter` with one label, whose increments wait in a map by label value and are added to the
 * counter (one `inc(n)` per label value) whenever it is read: a scrape, or a `get()`. (A registry's
 * `resetMetrics()` resets the counter, not the increments waiting here; nothing in the project resets.)
 */
export class HotPathCounter<Label extends string> {
  private readonly counter: Counter<Label>;
  private readonly labelName: Label;
  /** Increments not yet added to the counter, by label value. */
  private readonly pending = new Map<string, { n: number }>();

  constructor(config: { name: string; help: string; labelName: Label; registers: Registry[] }) {
    this.labelName = config.labelName;
    const flush = () => this.flush();
    this.counter = new Counter({
      name: config.name,
      help: config.help,
      labelNames: [config.labelName],
      registers: config.registers,
      collect: flush,
    });
  }

  /** Counts one under `labelValue`. */
  inc(labelValue: string): void {
    let waiting = this.pending.get(labelValue);
    if (waiting === undefined) this.pending.set(labelValue, (waiting = { n: 0 }));
    waiting.n += 1;
  }

  /** The counter's series, every increment so far included (prom-client's `Counter.get`). */
  get(): ReturnType<Counter<Label>['get']> {
    return this.counter.get();
  }

  private flush(): void {
    for (const [labelValue, waiting] of this.pending) {
      if (waiting.n === 0) continue;
      this.counter.inc({ [this.labelName]: labelValue } as Partial<Record<Label, string>>, waiting.n);
      waiting.n = 0;
    }
  }
}
