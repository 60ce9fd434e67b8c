import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { OrderWorker, OrderWorkerObserver } from './order-worker.ts';

/**
 * The worker's Prometheus metrics (served on WORKER_PORT): what it wrote, replayed and set aside, how
 * long batches take, how often MySQL failed a write that is being retried, and how many entries it holds.
 * The stream's own backlog (lag, pending) is Redis's to tell: the reconciler's audit and the admin stats
 * read it there, for every worker at once.
 */
export function createWorkerMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'flashsale_worker_' });
  const written = new Counter({ name: 'flashsale_worker_orders_written_total', help: 'Orders this worker wrote to MySQL.', registers: [registry] });
  const replayed = new Counter({
    name: 'flashsale_worker_entries_replayed_total',
    help: 'Redelivered entries that were already orders (acknowledged, nothing written).',
    registers: [registry],
  });
  const deadLettered = new Counter({
    name: 'flashsale_worker_dead_letters_total',
    help: 'Entries set aside in a dead-letter stream, by reason.',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const writeFailures = new Counter({
    name: 'flashsale_worker_write_failures_total',
    help: 'Batch writes MySQL failed for a passing reason (connection, lock wait, deadlock, timeout); each is retried.',
    registers: [registry],
  });
  const batchSeconds = new Histogram({
    name: 'flashsale_worker_batch_duration_seconds',
    help: 'Time to write one batch to MySQL, retries included.',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const observer: OrderWorkerObserver = {
    batchWritten: (outcome, seconds) => {
      written.inc(outcome.written);
      replayed.inc(outcome.replayed);
      batchSeconds.observe(seconds);
    },
    deadLettered: (reason) => deadLettered.inc({ reason }),
    writeFailed: () => writeFailures.inc(),
  };
  return {
    registry,
    observer,
    /** Reports the entries `worker` holds at each scrape. */
    watch(worker: OrderWorker): void {
      new Gauge({
        name: 'flashsale_worker_entries_held',
        help: 'Stream entries this worker holds: read and not yet acknowledged or set aside.',
        registers: [registry],
        collect() {
          this.set(worker.heldEntries());
        },
      });
    },
  };
}
