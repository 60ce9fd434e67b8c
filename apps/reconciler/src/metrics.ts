import { Registry, collectDefaultMetrics, type Gauge } from 'prom-client';
import { createStoreErrorMetrics, metricsOn } from '@flashsale/runtime';
import {
  storeFailures,
  type DoorGauges,
  type ReconcileReason,
  type ReconcileResult,
  type RedisMemory,
  type SaleSnapshot,
} from '@flashsale/sales';
import { Failure } from '@flashsale/domain';

/**
 * The reconciler's Prometheus metrics, served with /healthz on RECONCILER_PORT (serveMetricsPort). The one
 * place that names them; docs/operations.md#metrics says what each answers.
 *
 * The per-sale gauges (labelled `sale_id`) come from the reconciler because it already looks at every
 * live sale at a bounded rate (the watch) and audits them: exporting them costs one more command in the
 * look's MULTI, not a command per sale per scrape. Only live sales have series: a sale's are removed once
 * it retires (ended RECONCILER_RETIRE_AFTER_END_MS ago and drained, the rule that takes it off the
 * workers' list) or is no longer watched, so the number of series follows the live sales, not every
 * sale ever run.
 */
export function createReconcilerMetrics(readRedisMemory?: () => Promise<RedisMemory[]>) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'flashsale_reconciler_' });
  if (readRedisMemory) exportRedisMemory(registry, readRedisMemory);
  const { counter, gauge, histogram } = metricsOn(registry);
  const perSale = (name: string, help: string) => gauge(name, help, ['sale_id']);
  const drift = perSale(
    'flashsale_audit_drift_units',
    "Units by which a live sale's ledger does not balance (remaining + in flight + dead-lettered + in MySQL - stock), confirmed drift only; 0 when it balances.",
  );
  const paused = perSale('flashsale_sale_paused', '1 while a live sale refuses buyers with SALE_PAUSED (paused, or its Redis state lost).');
  const remaining = perSale('flashsale_sale_remaining_units', 'Units a live sale has left to sell, as Redis holds them.');
  const stock = perSale('flashsale_sale_stock_units', 'Units a live sale sells in all.');
  const lag = perSale('flashsale_stream_lag_entries', "Reservations in a live sale's stream no worker has read yet (XINFO GROUPS lag).");
  const pending = perSale('flashsale_stream_pending_entries', 'Reservations read by a worker, not yet written to MySQL or set aside.');
  // A queued sale's door, one gauge per figure of its look (DoorGauges; `open` as 1 or 0).
  const doorGauges = {
    waiting: perSale('flashsale_door_waiting', "Buyers in a queued sale's waiting room the frontier has not reached."),
    unused: perSale('flashsale_door_admitted_unused', 'Admitted buyers of a queued sale whose turn runs and who have not bought.'),
    front: perSale(
      'flashsale_door_front',
      "A queued sale's frontier: places given a turn so far (its rate of change is the admission rate achieved).",
    ),
    abandoned: perSale('flashsale_door_abandoned_turns', 'Turns of a queued sale that ended without a purchase.'),
    room: perSale(
      'flashsale_door_room',
      'Admissions the stock bound allows a queued sale now: floor(remaining x no-show factor) - admitted and unused, a turn in its show-up window counted (1 - no-show rate).',
    ),
    awaitingShowUp: perSale(
      'flashsale_door_awaiting_show_up',
      'Admitted buyers of a queued sale whose turn is still in its show-up window (they have neither called .../queue/here nor tried to buy).',
    ),
    noShowRate: perSale(
      'flashsale_door_no_show_rate',
      "The share of a queued sale's recent turns whose show-up window lapsed, as the door measured it (0..0.9); the door admits ahead of it.",
    ),
    admitPerSecond: perSale('flashsale_door_admit_per_second', "A queued sale's admission rate, as the operator set it."),
    open: perSale(
      'flashsale_door_open',
      "1 while a queued sale's door may admit (started, not ended, neither it nor the sale paused, not restoring after a loss), else 0.",
    ),
  } satisfies Partial<Record<keyof DoorGauges, Gauge<'sale_id'>>>;
  const gauges = [drift, paused, remaining, stock, lag, pending, ...Object.values(doorGauges)];
  const live = new Set<number>();

  const reconciliations = counter(
    'flashsale_reconciliations_total',
    'Reconciliations completed, by why they ran (operator, lost, stale, interrupted, drift, mysql_changed).',
    ['reason'],
  );
  const reconcileSeconds = histogram(
    'flashsale_reconciliation_duration_seconds',
    'Time of a completed reconciliation: pause, drain, rebuild from MySQL, resume.',
    [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
  );
  const reconcileFailures = counter(
    'flashsale_reconcile_failures_total',
    'Reconciliation attempts that failed (retried by BullMQ, the sale kept paused), by cause: drain_timeout (the stream did not drain within RECONCILE_DRAIN_TIMEOUT_MS; the log says why), sale_lock_busy, error.',
    ['cause'],
  );
  const lostReservations = counter(
    'flashsale_lost_reservations_total',
    'Reservations answered 202 but lost together with Redis data (a floor), as counted by reconciliations.',
  );
  const namedLosses = counter(
    'flashsale_lost_reservations_named_total',
    'Of flashsale_lost_reservations_total, the reservations named (MySQL lost their orders and could not take them back): listed by GET /api/admin/sales/:id/losses.',
  );
  return {
    registry,
    reconciliations,
    reconcileSeconds,
    lostReservations,
    watchOverdue: counter(
      'flashsale_reconciler_watch_overdue_total',
      'Steps of the watch (a look at a sale, the list of sales, ...) passed over for not finishing within RECONCILER_WATCH_STEP_TIMEOUT_MS, by step; the log names the sale. Redis or MySQL hanging, mostly.',
      ['step'],
    ),
    saleErrors: counter(
      'flashsale_reconciler_sale_errors_total',
      'Times one sale could not be watched, audited, retired or settled on its own (the log names the sale); the other sales went on.',
    ),
    storeErrors: createStoreErrorMetrics(registry, storeFailures),
    reconcileFailed(error: unknown): void {
      reconcileFailures.inc({ cause: error instanceof Failure ? error.code.toLowerCase() : 'error' });
    },
    reconciled(result: ReconcileResult, reason: ReconcileReason): void {
      reconciliations.inc({ reason });
      reconcileSeconds.observe(result.tookMs / 1000);
      lostReservations.inc(result.lost.reservations);
      namedLosses.inc(result.named?.reservations ?? 0);
    },
    /** A look at a live sale: its gauges as Redis showed them. */
    saleSeen(saleId: number, snapshot: SaleSnapshot): void {
      const labels = { sale_id: String(saleId) };
      if (!live.has(saleId)) {
        live.add(saleId);
        // Drift is the audit's to report; 0 until it has, so the series exists for every live sale.
        drift.set(labels, 0);
      }
      // A state Redis lost refuses buyers as paused until it is rebuilt (see the gateway's purchase handler).
      paused.set(labels, snapshot.paused || snapshot.operatorPaused || !snapshot.present ? 1 : 0);
      if (snapshot.present) {
        remaining.set(labels, snapshot.remaining);
        stock.set(labels, snapshot.stock);
      }
      if (snapshot.backlog?.lag != null) lag.set(labels, snapshot.backlog.lag);
      else lag.remove(labels);
      pending.set(labels, snapshot.backlog?.pending ?? 0);
    },
    /** A look at a live queued sale's door. */
    doorSeen(saleId: number, door: DoorGauges): void {
      if (!live.has(saleId)) return;
      const labels = { sale_id: String(saleId) };
      for (const [figure, gauge] of Object.entries(doorGauges)) gauge.set(labels, Number(door[figure as keyof typeof doorGauges]));
    },
    /** An audit's verdict, for a sale that has series (an audit of a retired sale adds none). */
    saleAudited(saleId: number, confirmedDrift: number): void {
      if (live.has(saleId)) drift.set({ sale_id: String(saleId) }, confirmedDrift);
    },
    /** The sale retired or is no longer watched: its series go. */
    saleGone(saleId: number): void {
      if (!live.delete(saleId)) return;
      for (const gauge of gauges) gauge.remove({ sale_id: String(saleId) });
    },
  };
}

export type ReconcilerMetrics = ReturnType<typeof createReconcilerMetrics>;

/**
 * Redis's memory and evictions, read from INFO at each scrape (a cluster: each master, `node` label),
 * by the reconciler only: one process exports them, not every gateway and worker. `evicted_keys` is
 * Redis's own counter; it is followed here as a counter (increased by what Redis's grew since the last
 * scrape, by its whole value after a Redis restart), so `increase()` works across restarts of either.
 * A scrape while Redis is away leaves the last values.
 */
function exportRedisMemory(registry: Registry, read: () => Promise<RedisMemory[]>): void {
  const seen = new Map<string, number>();
  // A scrape collects every metric at once: the three share one read of INFO.
  let reading: Promise<void> | undefined;
  const refresh = () =>
    (reading ??= (async () => {
      // Never held by a Redis that does not answer: the scrape goes on with the last values.
      const servers = await Promise.race([
        read().catch(() => []),
        new Promise<RedisMemory[]>((resolve) => setTimeout(() => resolve([]), 1000).unref()),
      ]);
      for (const server of servers) {
        const labels = { node: server.node };
        used.set(labels, server.usedMemoryBytes);
        maxmemory.set(labels, server.maxmemoryBytes);
        const before = seen.get(server.node) ?? 0;
        evicted.inc(labels, server.evictedKeys >= before ? server.evictedKeys - before : server.evictedKeys);
        seen.set(server.node, server.evictedKeys);
      }
    })().finally(() => (reading = undefined)));
  const { counter, gauge } = metricsOn(registry);
  const used = gauge(
    'flashsale_redis_used_memory_bytes',
    'Memory Redis uses (INFO used_memory); past maxmemory, writes are refused.',
    ['node'],
    refresh,
  );
  const maxmemory = gauge('flashsale_redis_maxmemory_bytes', "Redis's maxmemory (0: no limit).", ['node'], refresh);
  const evicted = counter(
    'flashsale_redis_evicted_keys_total',
    'Keys Redis evicted to make room (any is an incident: the system requires maxmemory-policy noeviction).',
    ['node'],
    refresh,
  );
}
