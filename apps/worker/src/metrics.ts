import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { createStoreErrorMetrics } from '@flashsale/runtime';
import { DEAD_LETTER_REASONS } from '@flashsale/domain';
import { storeFailures } from '@flashsale/sales';
import type { OrderWorker, OrderWorkerObserver } from './order-worker.ts';
import type { OrderExpiryObserver } from './order-expiry.ts';

/**
 * The worker's Prometheus metrics (served on WORKER_PORT): what it wrote, replayed and set aside, how
 * long batches take, how often MySQL failed a write that is being retried, how many entries it holds,
 * and the sales it skips because their own keys refuse it.
 * The stream's own backlog (lag, pending) is Redis's to tell: the reconciler reads it there at its
 * looks, for every worker at once, and exports it per live sale (apps/reconciler/src/metrics.ts).
 * The one place that names the worker's metrics; docs/operations.md#metrics says what each answers.
 */
export function createWorkerMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'flashsale_worker_' });
  const written = new Counter({
    name: 'flashsale_worker_orders_written_total',
    help: 'Orders this worker wrote to MySQL.',
    registers: [registry],
  });
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
  for (const reason of DEAD_LETTER_REASONS) deadLettered.inc({ reason }, 0);
  const writeFailures = new Counter({
    name: 'flashsale_worker_write_failures_total',
    help: 'Batch writes MySQL failed for a passing reason (connection, lock wait, deadlock, timeout); each is retried.',
    registers: [registry],
  });
  // By sale: the sales index holds the published sales only, and an operator needs to know which to
  // repair. stage and kind are a few fixed words (see sale-backoff.ts).
  const saleErrors = new Counter({
    name: 'flashsale_worker_sale_errors_total',
    help: "Steps that failed for one sale's own keys (e.g. a key of the wrong type), by sale, stage (read, claim, batch) and kind; that sale is retried with backoff, the others go on.",
    labelNames: ['sale_id', 'stage', 'kind'] as const,
    registers: [registry],
  });
  const batchSeconds = new Histogram({
    name: 'flashsale_worker_batch_duration_seconds',
    help: 'Time to write one batch to MySQL, retries included.',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  const storeErrors = createStoreErrorMetrics(registry, storeFailures);
  const observer: OrderWorkerObserver = {
    batchWritten: (outcome, seconds) => {
      written.inc(outcome.written);
      replayed.inc(outcome.replayed);
      batchSeconds.observe(seconds);
    },
    deadLettered: (reason) => deadLettered.inc({ reason }),
    // Every failed batch write that is retried is MySQL's (a refusal of the data is not retried).
    writeFailed: () => {
      writeFailures.inc();
      storeErrors.mysql.inc();
    },
    roundFailed: (error) => storeErrors.count(error),
    saleFailed: (saleId, stage, kind) => saleErrors.inc({ sale_id: String(saleId), stage, kind }),
  };
  const expired = new Counter({
    name: 'flashsale_worker_orders_expired_total',
    help: 'Unpaid orders this worker expired past their payBy.',
    registers: [registry],
  });
  const unitsReturned = new Counter({
    name: 'flashsale_worker_units_returned_total',
    help: 'Units of cancelled or expired orders this worker gave back to Redis (each unit once).',
    registers: [registry],
  });
  const returnsWaiting = new Counter({
    name: 'flashsale_worker_returns_waiting_total',
    help: "Returns left for a rebuild because the sale's Redis state was lost or is another generation (counted per pass).",
    registers: [registry],
  });
  const expiryFailures = new Counter({
    name: 'flashsale_worker_expiry_failures_total',
    help: 'Expiry passes that failed (MySQL or Redis away); the next pass retries.',
    registers: [registry],
  });
  const expirySeconds = new Histogram({
    name: 'flashsale_worker_expiry_pass_duration_seconds',
    help: 'Time of one expiry pass (expire the orders due, give their units back, settle returns owed).',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const expiryObserver: OrderExpiryObserver = {
    passed: (result, seconds) => {
      expired.inc(result.expired);
      unitsReturned.inc(result.units);
      returnsWaiting.inc(result.waiting);
      expirySeconds.observe(seconds);
    },
    failed: (error) => {
      expiryFailures.inc();
      storeErrors.count(error);
    },
  };
  return {
    registry,
    observer,
    expiryObserver,
    storeErrors,
    /** Reports the entries `worker` holds and the sales it skips, at each scrape. */
    watch(worker: OrderWorker): void {
      new Gauge({
        name: 'flashsale_worker_sales_backed_off',
        help: 'Sales this worker skips for now because their own keys refused its last try; each is retried with backoff.',
        registers: [registry],
        collect() {
          this.set(worker.salesBackedOff());
        },
      });
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
