import { Counter, Histogram, type Registry } from 'prom-client';
import type { OrderExpiryObserver } from './order-expiry.ts';

/** The expiry's metrics, on the worker's registry: orders expired, units given back, passes that failed. */
export function createExpiryMetrics(registry: Registry): OrderExpiryObserver {
  const expired = new Counter({ name: 'flashsale_worker_orders_expired_total', help: 'Unpaid orders this worker expired past their payBy.', registers: [registry] });
  const returnedUnits = new Counter({
    name: 'flashsale_worker_units_returned_total',
    help: 'Units of cancelled or expired orders this worker gave back to Redis (each unit once).',
    registers: [registry],
  });
  const waiting = new Counter({
    name: 'flashsale_worker_returns_waiting_total',
    help: 'Returns left for a rebuild because the sale\'s Redis state was lost or is another generation (counted per pass).',
    registers: [registry],
  });
  const failures = new Counter({ name: 'flashsale_worker_expiry_failures_total', help: 'Expiry passes that failed (MySQL or Redis away); the next pass retries.', registers: [registry] });
  const seconds = new Histogram({
    name: 'flashsale_worker_expiry_pass_duration_seconds',
    help: 'Time of one expiry pass.',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  return {
    passed: (result, s) => {
      expired.inc(result.expired);
      returnedUnits.inc(result.units);
      waiting.inc(result.waiting);
      seconds.observe(s);
    },
    failed: () => failures.inc(),
  };
}
