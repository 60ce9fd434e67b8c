import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The gateway's Prometheus metrics, on a registry of its own so several apps can live in one process. */
export function createGatewayMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'flashsale_gateway_' });
  return {
    registry,
    purchases: new Counter({
      name: 'flashsale_purchases_total',
      help: 'Purchase requests by outcome (reserved, or the error code).',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    purchaseSeconds: new Histogram({
      name: 'flashsale_purchase_duration_seconds',
      help: 'Time from request to answer of purchase requests.',
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers: [registry],
    }),
  };
}

export type GatewayMetrics = ReturnType<typeof createGatewayMetrics>;
