import { Registry, collectDefaultMetrics } from 'prom-client';
import { createStoreErrorMetrics, HotPathCounter, HotPathHistogram, metricsOn } from '@flashsale/runtime';
import { storeFailures } from '@flashsale/sales';

/**
 * The gateway's Prometheus metrics (served on METRICS_PORT), on a registry of its own so several apps can
 * live in one process. The one place that names them; docs/operations.md#metrics says what each answers.
 */
export function createGatewayMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'flashsale_gateway_' });
  const { counter } = metricsOn(registry);
  return {
    registry,
    // By outcome only, not by sale: every answer is counted, including those for sale ids that do not
    // exist, and a sale label there would let any client add series. The three metrics of every purchase
    // are hot-path ones (@flashsale/runtime): prom-client's own observe and inc cost a share of the request.
    purchases: new HotPathCounter({
      name: 'flashsale_purchases_total',
      help: 'Purchase requests by outcome (reserved, or the error code).',
      labelName: 'outcome',
      registers: [registry],
    }),
    purchaseSeconds: new HotPathHistogram(
      'flashsale_purchase_duration_seconds',
      'Time from request to answer of purchase requests.',
      [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      [registry],
    ),
    reserveScriptSeconds: new HotPathHistogram(
      'flashsale_reserve_script_duration_seconds',
      'Time of the reserve script call alone (one EVALSHA round trip to Redis), answered or failed.',
      [0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      [registry],
    ),
    // By outcome only: a label per address would let a guesser add series.
    adminAuthFailures: counter(
      'flashsale_admin_auth_failures_total',
      'Failed admin authentications (a wrong admin token, as a bearer token or at the dashboard sign-in), by outcome: invalid (checked and wrong), rate_limited (refused unchecked, over the failure budget).',
      ['outcome'],
    ),
    // By reason only (flagged, challenge, flood): a sale label would let a client add series.
    shadowJoins: counter(
      'flashsale_door_shadow_joins_total',
      'Joins answered from the shadow queue (told waiting, never admitted), by why the account was set aside: flagged (the token), challenge (solutions refused again and again), flood (joins past its budget again and again).',
      ['reason'],
    ),
    storeErrors: createStoreErrorMetrics(registry, storeFailures),
  };
}

export type GatewayMetrics = ReturnType<typeof createGatewayMetrics>;
