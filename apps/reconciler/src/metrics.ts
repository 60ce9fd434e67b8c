import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { createStoreErrorMetrics } from '@flashsale/runtime';
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
  const perSale = (name: string, help: string) => new Gauge({ name, help, labelNames: ['sale_id'] as const, registers: [registry] });
  const drift = perSale(
    'flashsale_audit_drift_units',
    "Units by which a live sale's ledger does not balance (remaining + in flight + dead-lettered + in MySQL - stock), confirmed drift only; 0 when it balances.",
  );
  const paused = perSale(
    'flashsale_sale_paused',
    '1 while a live sale refuses buyers with SALE_PAUSED (paused by an operator or a reconciliation, or its Redis state lost), else 0.',
  );
  const remaining = perSale('flashsale_sale_remaining_units', 'Units a live sale has left to sell, as Redis holds them.');
  const stock = perSale('flashsale_sale_stock_units', 'Units a live sale sells in all.');
  const lag = perSale(
    'flashsale_stream_lag_entries',
    "Reservations in a live sale's stream not yet delivered to any worker (XINFO GROUPS lag).",
  );
  const pending = perSale(
    'flashsale_stream_pending_entries',
    'Reservations delivered to a worker and not yet acknowledged (written to MySQL or set aside).',
  );
  const doorWaiting = perSale('flashsale_door_waiting', "Buyers in a queued sale's waiting room the frontier has not reached.");
  const doorUnused = perSale('flashsale_door_admitted_unused', 'Admitted buyers of a queued sale whose turn runs and who have not bought.');
  const doorFront = perSale(
    'flashsale_door_front',
    "A queued sale's frontier: places given a turn so far (its rate of change is the admission rate achieved).",
  );
  const doorAbandoned = perSale(
    'flashsale_door_abandoned_turns',
    'Turns of a queued sale that ended without a purchase (counted by the door as it moves on).',
  );
  const doorRoom = perSale(
    'flashsale_door_room',
    'Admissions the stock bound allows a queued sale now: floor(remaining x no-show factor) - admitted and unused, a turn in its show-up window counted (1 - no-show rate).',
  );
  const doorAwaiting = perSale(
    'flashsale_door_awaiting_show_up',
    'Admitted buyers of a queued sale whose turn is still in its show-up window (they have neither called .../queue/here nor tried to buy).',
  );
  const doorNoShows = perSale(
    'flashsale_door_no_show_rate',
    "The share of a queued sale's recent turns whose show-up window lapsed, as the door measured it (0..0.9); the door admits ahead of it.",
  );
  const doorRate = perSale('flashsale_door_admit_per_second', "A queued sale's admission rate, as the operator set it.");
  const doorOpen = perSale(
    'flashsale_door_open',
    "1 while a queued sale's door may admit (started, not ended, neither it nor the sale paused, not restoring after a loss), else 0.",
  );
  const doorGauges = [doorWaiting, doorUnused, doorFront, doorAbandoned, doorRoom, doorAwaiting, doorNoShows, doorRate, doorOpen];
  const gauges = [drift, paused, remaining, stock, lag, pending, ...doorGauges];
  const live = new Set<number>();

  const reconciliations = new Counter({
    name: 'flashsale_reconciliations_total',
    help: 'Reconciliations completed, by why they ran (operator, lost, stale, interrupted, drift, mysql_changed).',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const reconcileSeconds = new Histogram({
    name: 'flashsale_reconciliation_duration_seconds',
    help: 'Time of a completed reconciliation: pause, drain, rebuild from MySQL, resume.',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [registry],
  });
  const reconcileFailures = new Counter({
    name: 'flashsale_reconcile_failures_total',
    help: 'Reconciliation attempts that failed (retried by BullMQ, the sale kept paused), by cause: drain_timeout (the stream did not drain within RECONCILE_DRAIN_TIMEOUT_MS; the log says why), sale_lock_busy, error.',
    labelNames: ['cause'] as const,
    registers: [registry],
  });
  const lostReservations = new Counter({
    name: 'flashsale_lost_reservations_total',
    help: 'Reservations answered 202 but lost together with Redis data (a floor), as counted by reconciliations.',
    registers: [registry],
  });
  const namedLosses = new Counter({
    name: 'flashsale_lost_reservations_named_total',
    help: 'Of flashsale_lost_reservations_total, the reservations named (MySQL lost their orders and could not take them back): listed by GET /api/admin/sales/:id/losses.',
    registers: [registry],
  });
  return {
    registry,
    reconciliations,
    reconcileSeconds,
    lostReservations,
    watchOverdue: new Counter({
      name: 'flashsale_reconciler_watch_overdue_total',
      help: 'Steps of the watch (a look at a sale, the list of sales, ...) passed over for not finishing within RECONCILER_WATCH_STEP_TIMEOUT_MS, by step; the log names the sale. Redis or MySQL hanging, mostly.',
      labelNames: ['step'] as const,
      registers: [registry],
    }),
    saleErrors: new Counter({
      name: 'flashsale_reconciler_sale_errors_total',
      help: 'Times one sale could not be watched, audited, retired or settled on its own (the log names the sale); the other sales went on.',
      registers: [registry],
    }),
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
      doorWaiting.set(labels, door.waiting);
      doorUnused.set(labels, door.unused);
      doorFront.set(labels, door.front);
      doorAbandoned.set(labels, door.abandoned);
      doorRoom.set(labels, door.room);
      doorAwaiting.set(labels, door.awaitingShowUp);
      doorNoShows.set(labels, door.noShowRate);
      doorRate.set(labels, door.admitPerSecond);
      doorOpen.set(labels, door.open ? 1 : 0);
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
  const used = new Gauge({
    name: 'flashsale_redis_used_memory_bytes',
    help: 'Memory Redis uses (INFO used_memory); past maxmemory, writes are refused.',
    labelNames: ['node'] as const,
    registers: [registry],
    collect: refresh,
  });
  const maxmemory = new Gauge({
    name: 'flashsale_redis_maxmemory_bytes',
    help: "Redis's maxmemory (0: no limit).",
    labelNames: ['node'] as const,
    registers: [registry],
    collect: refresh,
  });
  const evicted = new Counter({
    name: 'flashsale_redis_evicted_keys_total',
    help: 'Keys Redis evicted to make room (any is an incident: the system requires maxmemory-policy noeviction).',
    labelNames: ['node'] as const,
    registers: [registry],
    collect: refresh,
  });
}
