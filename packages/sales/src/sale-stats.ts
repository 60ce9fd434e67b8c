import { AppError, ledgerConsistent } from '@flashsale/domain';
import type { SalesDeps } from './sales-deps.ts';

/**
 * The ledger of a sale: GET /api/admin/sales/:saleId/stats answers it, and the dashboard's live view
 * pushes it as it is (it reads the members generically, so a member added here shows there).
 */
export async function readSaleStats(deps: Pick<SalesDeps, 'redis' | 'mysql'>, saleId: number) {
  const inRedis = deps.redis.sale(saleId);
  // MySQL first, then Redis: units only move from Redis (remaining, then in flight) to MySQL, so counts
  // of MySQL taken before Redis's can only fall short of the stock while a sale sells, never exceed it.
  // Read the other way round (or side by side, each waiting for its connection), the orders written
  // between the two reads were counted twice, and a selling sale looked oversold.
  const [record, orders] = await Promise.all([deps.mysql.sale(saleId).find(), deps.mysql.sale(saleId).orderLedger()]);
  const [state, backlog, audit] = await Promise.all([inRedis.state(), inRedis.backlog(), inRedis.auditRecord()]);
  if (!record) throw new AppError('SALE_NOT_FOUND', { saleId });
  const inFlight = backlog.lag + backlog.pending;
  const remaining = state ? state.remaining : null;
  const consistent = ledgerConsistent({
    stock: record.stock,
    remaining,
    inFlight,
    unitsInDb: orders.live.units,
    unitsAwaitingReturn: orders.unitsAwaitingReturn,
  });
  return {
    saleId,
    stock: record.stock,
    remaining,
    inFlight,
    // Live orders (created or paid) and their units: what holds stock.
    ordersInDb: orders.live.orders,
    unitsInDb: orders.live.units,
    ordersByStatus: orders.byStatus,
    unitsReturned: orders.unitsReturned,
    unitsAwaitingReturn: orders.unitsAwaitingReturn,
    refundsDue: orders.refundsDue,
    deadLettered: backlog.deadLettered,
    consistent,
    // Reservations answered 202 but lost with Redis data, as the reconciler counted them (a floor).
    lost: { reservations: record.lostReservations, units: record.lostUnits },
    // The reconciler's last audit of the ledger: drift 0 when remaining + in flight + dead-lettered +
    // units in MySQL = stock; null until an audit has run.
    audit: audit && { drift: audit.drift, checkedAt: new Date(audit.checkedAt).toISOString() },
  };
}
