import { describe, expect, it } from 'vitest';
import { AggregatorRegistry, Counter, Histogram, Registry } from 'prom-client';
import { HotPathCounter, HotPathHistogram } from './hot-path-metrics.ts';

const BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];
// On a bound, between bounds, under the first, over the last, zero and negative.
const OBSERVATIONS = [0.0005, 0.0007, 0.001, 0.0015, 0.003, 0.02, 0.04, 0.3, 1, 2.5, 0, -0.1, 0.25, 0.0001, 7];

describe('HotPathHistogram', () => {
  it('is scraped as the same text as prom-client’s Histogram of the same observations', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const hot = new HotPathHistogram('x_duration_seconds', 'Time of x.', BUCKETS, [ours]);
    const reference = new Histogram({ name: 'x_duration_seconds', help: 'Time of x.', buckets: BUCKETS, registers: [theirs] });
    for (const value of OBSERVATIONS) {
      hot.observe(value);
      reference.observe(value);
    }

    expect(await ours.metrics()).toBe(await theirs.metrics());
    // What a reader of get() uses (the dashboard's traffic sampler): every series' name, labels and value.
    const series = ({ values }: { values: { metricName?: string; labels: object; value: number }[] }) =>
      values.map(({ metricName, labels, value }) => ({ metricName, labels, value }));
    expect(series(await hot.get())).toEqual(series(await reference.get()));
  });

  it('sums across cluster processes as prom-client’s does', async () => {
    const ours = [new Registry(), new Registry()];
    const theirs = [new Registry(), new Registry()];
    for (const [i, registry] of ours.entries()) {
      const hot = new HotPathHistogram('y_seconds', 'Time of y.', BUCKETS, [registry]);
      for (const value of OBSERVATIONS.slice(i * 5)) hot.observe(value);
    }
    for (const [i, registry] of theirs.entries()) {
      const reference = new Histogram({ name: 'y_seconds', help: 'Time of y.', buckets: BUCKETS, registers: [registry] });
      for (const value of OBSERVATIONS.slice(i * 5)) reference.observe(value);
    }
    const aggregate = async (registries: Registry[]) =>
      AggregatorRegistry.aggregate(await Promise.all(registries.map((r) => r.getMetricsAsJSON()))).metrics();

    expect(await aggregate(ours)).toBe(await aggregate(theirs));
  });

  it('refuses a value that is not a finite number and buckets that are out of order', () => {
    const hot = new HotPathHistogram('z_seconds', 'z', BUCKETS, []);
    expect(() => hot.observe(Number.NaN)).toThrow(TypeError);
    expect(() => hot.observe(Infinity)).toThrow(TypeError);
    expect(() => new HotPathHistogram('w_seconds', 'w', [0.1, 0.05], [])).toThrow(/increasing order/);
    expect(() => new HotPathHistogram('w_seconds', 'w', [], [])).toThrow(/increasing order/);
  });

  it('starts again from zero when its registry resets its metrics', async () => {
    const registry = new Registry();
    const hot = new HotPathHistogram('r_seconds', 'r', BUCKETS, [registry]);
    hot.observe(0.003);
    registry.resetMetrics();
    expect((await hot.get()).values.every((value) => value.value === 0)).toBe(true);
  });
});

describe('HotPathCounter', () => {
  it('is scraped as the same text as prom-client’s Counter counted the same, read after read', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const hot = new HotPathCounter({ name: 'p_total', help: 'P by outcome.', labelName: 'outcome', registers: [ours] });
    const reference = new Counter({ name: 'p_total', help: 'P by outcome.', labelNames: ['outcome'], registers: [theirs] });
    const count = (outcome: string, n: number) => {
      for (let i = 0; i < n; i += 1) {
        hot.inc(outcome);
        reference.labels(outcome).inc();
      }
    };
    count('reserved', 5);
    count('SOLD_OUT', 2);
    expect(await ours.metrics()).toBe(await theirs.metrics());

    count('reserved', 3);
    count('RATE_LIMITED', 1);
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await hot.get()).toEqual(await reference.get());
  });
});
