import { AppError } from '@flashsale/domain';
import { settleReturns } from './order-returns.ts';
import { findReservationBeforeOrder } from './reservation-status.ts';
import type { SalesDeps } from './sales-deps.ts';

/**
 * The owner gives an order up while it awaits payment (POST /api/reservations/:id/cancel). Resolves
 * with whether this cancel closed it now (false: cancelled before, answered the same). Throws
 * RESERVATION_NOT_FOUND (not this buyer's), ORDER_NOT_CANCELLABLE (paid, expired, rejected or lost) or
 * ORDER_NOT_READY (still on its way to MySQL; Retry-After `retryAfterSeconds`).
 *
 * Crash points. MySQL first: the order closes and the units it owes Redis are recorded (stock_returns) in
 * one transaction under the sale row lock. Then Redis gets the units back before the answer, so the buyer
 * may buy again at once (settleReturns, whose argument covers every crash from here on). Should that fail
 * (Redis away) or the process die in between, the order is cancelled all the same and the workers' expiry
 * pass gives the units back from the pending row. Idempotent: a cancelled order answers cancelled again,
 * and its units come back once. An order already closed is answered from one read, without the lock.
 */
export async function cancelReservation(
  deps: SalesDeps,
  saleId: number,
  reservationId: string,
  userId: string,
  retryAfterSeconds: number,
): Promise<{ repeated: boolean }> {
  const outcome = await deps.mysql.cancelOrder(reservationId, userId);
  if (!outcome) {
    const before = await findReservationBeforeOrder(deps, saleId, reservationId, userId);
    if (!before) throw new AppError('RESERVATION_NOT_FOUND');
    if (before.status === 'rejected')
      throw new AppError('ORDER_NOT_CANCELLABLE', { because: 'no_order', orderStatus: 'rejected' }, { orderStatus: 'rejected' });
    if (before.status === 'lost')
      throw new AppError(
        'ORDER_NOT_CANCELLABLE',
        { because: 'no_order', orderStatus: 'lost' },
        {
          orderStatus: 'lost',
          reason: before.reason,
        },
      );
    throw new AppError('ORDER_NOT_READY', undefined, {}, { 'Retry-After': String(retryAfterSeconds) });
  }
  if (outcome.kind === 'not-cancellable') {
    // `orderStatus`, not `status`: a problem document's `status` is the HTTP status (RFC 9457).
    throw new AppError('ORDER_NOT_CANCELLABLE', { orderStatus: outcome.status }, { orderStatus: outcome.status });
  }
  if (outcome.owed) {
    try {
      await settleReturns(deps, [outcome.owed]);
    } catch (err) {
      deps.logger.warn({ err, reservationId }, 'cancel: units not given back yet; the expiry pass will');
    }
  }
  return { repeated: outcome.owed === null };
}
