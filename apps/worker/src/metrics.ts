import { Registry, collectDefaultMetrics } from 'prom-client';
import { createStoreErrorMetrics, metricsOn } from '@flashsale/runtime';
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
  const { counter, gauge, histogram } = metricsOn(registry);
  const written = counter('flashsale_worker_orders_written_total', 'Orders this worker wrote to MySQL.');
  const replayed = counter(
    'flashsale_worker_entries_replayed_total',
    'Redelivered entries that were already orders (acknowledged, nothing written).',
  );
  const deadLettered = counter('flashsale_worker_dead_letters_total', 'Entries set aside in a dead-letter stream, by reason.', ['reason']);
  for (const reason of DEAD_LETTER_REASONS) deadLettered.inc({ reason }, 0);
  const writeFailures = counter(
    'flashsale_worker_write_failures_total',
    'Batch writes MySQL failed for a passing reason (connection, lock wait, deadlock, timeout); each is retried.',
  );
  // By sale: the sales index holds the published sales only, and an operator needs to know which to
  // repair. stage and kind are a few fixed words (see sale-backoff.ts).
  const saleErrors = counter(
    'flashsale_worker_sale_errors_total',
    "Steps that failed for one sale's own keys (e.g. a key of the wrong type), by sale, stage (read, claim, batch) and kind; that sale is retried with backoff, the others go on.",
    ['sale_id', 'stage', 'kind'],
  );
  const batchSeconds = histogram(
    'flashsale_worker_batch_duration_seconds',
    'Time to write one batch to MySQL, retries included.',
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  );
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
  const expired = counter('flashsale_worker_orders_expired_total', 'Unpaid orders this worker expired past their payBy.');
  const unitsReturned = counter('flashsale_worker_units_returned_total', 'Units of closed orders this worker put back on sale.');
  const returnsWaiting = counter(
    'flashsale_worker_returns_waiting_total',
    "Returns left for a rebuild because the sale's Redis state was lost or is another generation (counted per pass).",
  );
  const expiryFailures = counter(
    'flashsale_worker_expiry_failures_total',
    'Expiry passes that failed (MySQL or Redis away); the next pass retries.',
  );
  const expirySeconds = histogram(
    'flashsale_worker_expiry_pass_duration_seconds',
    'Time of one expiry pass (expire the orders due, give their units back, settle returns owed).',
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  );
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
      gauge(
        'flashsale_worker_sales_backed_off',
        'Sales this worker skips for now because their own keys refused its last try; each is retried with backoff.',
        [],
        function () {
          this.set(worker.salesBackedOff());
        },
      );
      gauge(
        'flashsale_worker_entries_held',
        'Stream entries this worker holds: read and not yet acknowledged or set aside.',
        [],
        function () {
          this.set(worker.heldEntries());
        },
      );
    },
  };
}
