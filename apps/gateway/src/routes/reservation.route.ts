import { Router, type Request } from 'express';
import { AppError, saleIdOfReservation } from '@flashsale/domain';
import { findBuyerReservation, findDeadLetter } from '@flashsale/redis-store';
import { cancelOrder, findLostReservation, findOrderByReservation } from '@flashsale/order-store';
import { settleReturns } from '@flashsale/lifecycle';
import type { GatewayDeps } from '../deps.ts';
import type { BuyerGate } from '../buyer-gate.ts';
import { createRequestLimits, type RequestLimits } from '../request-limits.ts';
import { requireJsonBodyOf } from '../validation.ts';

/**
 * GET /api/reservations/:reservationId: `pending` until the worker has written the order, then the
 * order's status; `rejected` (with the reason) if the workers set it aside instead, so a buyer is not
 * left polling a reservation that will never become an order. Only the buyer who owns it sees it;
 * anyone else gets the same 404 as for an unknown id, so reservation ids cannot be probed.
 *
 * `lost` (with the reason) for a reservation no store holds any more that a reconciliation named
 * (lost_reservations: MySQL lost its order and could not take it back): never `pending` forever.
 *
 * Rate-limited like purchases (per address, then per buyer, with budgets of its own), and bounded in
 * work: one indexed MySQL read, then at most two Redis HGETs (the rejected hash, the buyers hash), and
 * only for an id neither knows, one more MySQL primary-key read (lost_reservations).
 *
 * `orderId` is not the MySQL row id: that is an auto-increment shared by every sale, and two lookups a
 * minute apart would tell anyone how many orders were taken in between. There is one order per
 * reservation (orders.reservation_id is unique), so the order is named by its reservation's id: random,
 * unique, already the buyer's, stable across a Redis loss and a rebuild, and an order is found from it
 * with the unique index. Null while there is no order yet.
 */
export function reservationRouter({ config, redis, prisma, logger, now }: GatewayDeps, buyerOf: BuyerGate, buyingLimits: RequestLimits): Router {
  const router = Router();
  const notFound = () => new AppError('RESERVATION_NOT_FOUND', 'no such reservation for this buyer');
  /** The calling buyer and the reservation the path names, within `limits`' budgets; 404 for an id that names no sale. */
  const buyerAndReservation = (req: Request<{ reservationId: string }>, limits: RequestLimits) => {
    const userId = buyerOf(req, limits);
    const reservationId = req.params.reservationId;
    const saleId = saleIdOfReservation(reservationId);
    if (saleId === null) throw notFound();
    return { userId, reservationId, saleId };
  };
  const limits = createRequestLimits(config, now);
  router.get('/api/reservations/:reservationId', async (req, res) => {
    const { userId, reservationId, saleId } = buyerAndReservation(req, limits);
    const order = await findOrderByReservation(prisma, reservationId);
    if (order) {
      if (order.userId !== userId) throw notFound();
      res.json({ reservationId, saleId, quantity: order.quantity, status: order.status, orderId: reservationId, payBy: order.payBy.toISOString() });
      return;
    }
    const before = (await reservationBeforeOrder(saleId, reservationId, userId)) ?? (await lostReservation(reservationId, userId));
    if (!before) throw notFound();
    // payBy is known once the order is written: the worker computes it from the sale's window.
    res.json({ ...before, orderId: null, payBy: null });
  });

  /**
   * POST /api/reservations/:reservationId/cancel: the owner gives the order up while it awaits payment.
   * MySQL closes it (and records the units it owes Redis) in one transaction; the units are then given
   * back to Redis before the answer, so the buyer may buy again at once. Should that fail (Redis away),
   * the answer is the same: the order is cancelled, and the workers' expiry pass gives the units back.
   * Idempotent: a cancelled order answers cancelled again, and its units come back once. An order
   * already closed is answered from one read, without the sale's row lock (cancelOrder).
   */
  // The purchase budget, not the lookups': a buyer polling their reservation does not spend their cancel,
  // and cancels count with the purchases they undo (a cancel-and-rebuy loop spends one budget).
  router.post('/api/reservations/:reservationId/cancel', async (req, res) => {
    // No body is read; one that is not JSON is refused (415), as on every other route.
    requireJsonBodyOf(req);
    const { userId, reservationId, saleId } = buyerAndReservation(req, buyingLimits);
    const outcome = await cancelOrder(prisma, reservationId, userId);
    if (!outcome) {
      const before = (await reservationBeforeOrder(saleId, reservationId, userId)) ?? (await lostReservation(reservationId, userId));
      if (!before) throw notFound();
      if (before.status === 'rejected') throw new AppError('ORDER_NOT_CANCELLABLE', 'the reservation was rejected: there is no order to cancel', { orderStatus: 'rejected' });
      if (before.status === 'lost') throw new AppError('ORDER_NOT_CANCELLABLE', 'the reservation was lost: there is no order to cancel', { orderStatus: 'lost', reason: before.reason });
      throw new AppError('ORDER_NOT_READY', 'the reservation is not an order yet; retry shortly', {}, { 'Retry-After': String(config.PAUSED_RETRY_AFTER_SECONDS) });
    }
    if (outcome.kind === 'not-cancellable') {
      // `orderStatus`, not `status`: a problem document's `status` is the HTTP status (RFC 9457).
      throw new AppError('ORDER_NOT_CANCELLABLE', `the order is ${outcome.status}`, { orderStatus: outcome.status });
    }
    if (outcome.owed) {
      try {
        await settleReturns({ redis, prisma, prefix: config.REDIS_PREFIX, logger }, [outcome.owed]);
      } catch (err) {
        logger.warn({ err, reservationId }, 'cancel: units not given back yet; the expiry pass will');
      }
    }
    logger.info({ reservationId, saleId, userId, repeated: outcome.owed === null }, 'order cancelled');
    res.json({ reservationId, status: 'cancelled' });
  });

  /**
   * A reservation of this buyer that is not an order: `rejected` (set aside by the workers) or
   * `pending` (on its way); null when the buyer holds no such reservation (someone else's, or unknown).
   */
  async function reservationBeforeOrder(saleId: number, reservationId: string, userId: string) {
    const rejected = await findDeadLetter(redis, config.REDIS_PREFIX, saleId, reservationId);
    if (rejected) {
      return rejected.userId === userId ? { reservationId, saleId, quantity: rejected.quantity, status: 'rejected' as const, reason: rejected.reason } : null;
    }
    const held = await findBuyerReservation(redis, config.REDIS_PREFIX, saleId, userId);
    return held && held.reservationId === reservationId ? { reservationId, saleId, quantity: held.quantity, status: 'pending' as const } : null;
  }
  /** A named loss of this buyer (see lost_reservations), or null. */
  async function lostReservation(reservationId: string, userId: string) {
    const lost = await findLostReservation(prisma, reservationId);
    return lost && lost.userId === userId ? { reservationId, saleId: lost.saleId, quantity: lost.quantity, status: 'lost' as const, reason: lost.reason } : null;
  }
  return router;
}
