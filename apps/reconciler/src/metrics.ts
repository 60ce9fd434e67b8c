import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';

/** The reconciler's Prometheus metrics, served with /healthz on RECONCILER_PORT (serveMetrics). */
export function createReconcilerMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'flashsale_reconciler_' });
  return {
    registry,
    drift: new Gauge({
      name: 'flashsale_audit_drift_units',
      help: 'Units by which a sale ledger does not balance (remaining + in flight + dead-lettered + in MySQL - stock), confirmed drift only.',
      labelNames: ['sale_id'] as const,
      registers: [registry],
    }),
    reconciliations: new Counter({ name: 'flashsale_reconciliations_total', help: 'Reconciliations completed.', registers: [registry] }),
    lostReservations: new Counter({
      name: 'flashsale_lost_reservations_total',
      help: 'Reservations answered 202 but lost together with Redis data (a floor), as counted by reconciliations.',
      registers: [registry],
    }),
    saleErrors: new Counter({
      name: 'flashsale_reconciler_sale_errors_total',
      help: 'Times one sale could not be watched, audited, retired or settled on its own (the log names the sale); the other sales went on.',
      registers: [registry],
    }),
  };
}
