import type { Prisma, PrismaClient } from './generated/prisma/client.ts';

/**
 * A sale's orders and units by status, kept by the transactions that change them, so reading them costs
 * the same at ten orders as at a million (the GROUP BY it replaces took 364-659 ms at 300,000 orders).
 * Written orders are never deleted and only ever leave `created` (for paid, cancelled or expired), so:
 *
 *   - on the sale row, raised by statements the transactions already run on it: `orders_written` and
 *     `units_written` by the order writer's guarded UPDATE of sold_units (one per batch, order-writer.ts),
 *     `cancelled_*` and `expired_*` by the UPDATE that lowers sold_units as orders close
 *     (order-lifecycle.ts);
 *   - paid orders in `sale_paid_counts`, one statement per payment transaction (countPaid): a payment
 *     locks the order row only, never the sale row the batches hold, so its count cannot live there; it
 *     is spread over PAID_COUNT_SLOTS rows (the order id modulo), which payments of one sale do not queue
 *     on, taken last in the transaction (after the order rows), so no lock cycle can form;
 *   - created = written - paid - cancelled - expired.
 */

/** Rows a sale's paid count is spread over. */
export const PAID_COUNT_SLOTS = 16;

/**
 * Adds paid orders to the sale's count, in the caller's transaction, as its last statement (see above).
 * `orderId` picks the slot.
 */
export async function countPaid(
  tx: Prisma.TransactionClient,
  saleId: number,
  orderId: bigint,
  orders: number,
  units: number,
): Promise<void> {
  if (orders === 0) return;
  const slot = Number(orderId % BigInt(PAID_COUNT_SLOTS));
  await tx.$executeRaw`
    INSERT INTO sale_paid_counts (sale_id, slot, orders, units) VALUES (${saleId}, ${slot}, ${orders}, ${units})
    ON DUPLICATE KEY UPDATE orders = orders + VALUES(orders), units = units + VALUES(units)`;
}

export const ORDER_STATUSES = ['created', 'paid', 'cancelled', 'expired'] as const;

/** A sale's orders as MySQL records them: by status, what closed orders gave back, and payments owed back. */
export interface SaleOrderLedger {
  /** Orders and units in live orders (created or paid). */
  live: { orders: number; units: number };
  byStatus: Record<(typeof ORDER_STATUSES)[number], { orders: number; units: number }>;
  /** Units of cancelled and expired orders back in Redis (or counted back by a rebuild). */
  unitsReturned: number;
  /** Units of cancelled and expired orders not back in Redis yet. */
  unitsAwaitingReturn: number;
  /** Payments recorded for orders that had expired or were cancelled (or paid twice): owed back. */
  refundsDue: { count: number; amountCents: number };
}

interface LedgerRow {
  orders_written: number;
  units_written: bigint | number;
  cancelled_orders: bigint | number;
  cancelled_units: bigint | number;
  expired_orders: bigint | number;
  expired_units: bigint | number;
  paid_orders: unknown;
  paid_units: unknown;
  pending_units: unknown;
  refunds: bigint | number;
  refund_cents: unknown;
}

/**
 * Reads a sale's order ledger in one statement (one consistent view): the sale row's counters, at most
 * PAID_COUNT_SLOTS paid rows, the returns still pending (a handful but while Redis is away: the
 * (sale_id, state) index) and the refunds due (the (sale_id, outcome) index: as many as there are
 * refunds, never the sale's orders). Every closed order owes its units once (its stock_returns row), so
 * what came back is what closed less what is pending.
 */
export async function saleOrderLedger(prisma: PrismaClient, saleId: number): Promise<SaleOrderLedger> {
  const [row] = await prisma.$queryRaw<LedgerRow[]>`
    SELECT s.orders_written, s.units_written, s.cancelled_orders, s.cancelled_units, s.expired_orders, s.expired_units,
      (SELECT COALESCE(SUM(p.orders), 0) FROM sale_paid_counts p WHERE p.sale_id = s.id) AS paid_orders,
      (SELECT COALESCE(SUM(p.units), 0) FROM sale_paid_counts p WHERE p.sale_id = s.id) AS paid_units,
      (SELECT COALESCE(SUM(r.quantity), 0) FROM stock_returns r WHERE r.sale_id = s.id AND r.state = 'pending') AS pending_units,
      (SELECT COUNT(*) FROM payment_events e WHERE e.sale_id = s.id AND e.outcome = 'refund_due') AS refunds,
      (SELECT COALESCE(SUM(e.amount_cents), 0) FROM payment_events e WHERE e.sale_id = s.id AND e.outcome = 'refund_due') AS refund_cents
    FROM sales s WHERE s.id = ${saleId}`;
  const n = (value: unknown) => Number(value ?? 0);
  const paid = { orders: n(row?.paid_orders), units: n(row?.paid_units) };
  const cancelled = { orders: n(row?.cancelled_orders), units: n(row?.cancelled_units) };
  const expired = { orders: n(row?.expired_orders), units: n(row?.expired_units) };
  const created = {
    orders: n(row?.orders_written) - paid.orders - cancelled.orders - expired.orders,
    units: n(row?.units_written) - paid.units - cancelled.units - expired.units,
  };
  const unitsAwaitingReturn = n(row?.pending_units);
  return {
    live: { orders: created.orders + paid.orders, units: created.units + paid.units },
    byStatus: { created, paid, cancelled, expired },
    unitsReturned: cancelled.units + expired.units - unitsAwaitingReturn,
    unitsAwaitingReturn,
    refundsDue: { count: n(row?.refunds), amountCents: n(row?.refund_cents) },
  };
}
