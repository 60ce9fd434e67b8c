import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** What a metric reports at each scrape, read then rather than kept up to date. */
export type Collect<M> = (this: M) => void | Promise<void>;

/**
 * prom-client's metrics on one registry, each defined in one call: its name, its help, then its labels
 * (and a histogram's buckets; a counter's or gauge's `collect`, run at each scrape). Every process's metrics module defines its own
 * through these, so a definition says what the metric is and nothing else.
 */
export function metricsOn(registry: Registry) {
  const registers = [registry];
  return {
    counter<L extends string = never>(
      name: string,
      help: string,
      labelNames: readonly L[] = [],
      collect?: Collect<Counter<L>>,
    ): Counter<L> {
      return new Counter<L>({ name, help, labelNames, registers, ...(collect && { collect }) });
    },
    gauge<L extends string = never>(name: string, help: string, labelNames: readonly L[] = [], collect?: Collect<Gauge<L>>): Gauge<L> {
      return new Gauge<L>({ name, help, labelNames, registers, ...(collect && { collect }) });
    },
    histogram<L extends string = never>(name: string, help: string, buckets: number[], labelNames: readonly L[] = []): Histogram<L> {
      return new Histogram<L>({ name, help, buckets, labelNames, registers });
    },
  };
}
