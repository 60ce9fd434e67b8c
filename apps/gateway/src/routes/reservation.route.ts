import { Router, type Request } from 'express';
import { AppError, saleIdOfReservation } from '@flashsale/domain';
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
export function reservationRouter({ config, sales, logger, now }: GatewayDeps, buyerOf: BuyerGate, buyingLimits: RequestLimits): Router {
  const router = Router();
  const notFound = () => new AppError('RESERVATION_NOT_FOUND');
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
    const found = await sales.findReservationStatus(saleId, reservationId, userId);
    if (!found) throw notFound();
    if (found.kind === 'order') {
      res.json({
        reservationId,
        saleId,
        quantity: found.quantity,
        status: found.status,
        orderId: reservationId,
        payBy: found.payBy.toISOString(),
      });
      return;
    }
    // payBy is known once the order is written: the worker computes it from the sale's window.
    res.json({ ...found.reservation, orderId: null, payBy: null });
  });

  /**
   * POST /api/reservations/:reservationId/cancel: the owner gives the order up while it awaits payment
   * (the use case and its crash points: packages/sales/src/order-cancel.ts).
   */
  // The purchase budget, not the lookups': a buyer polling their reservation does not spend their cancel,
  // and cancels count with the purchases they undo (a cancel-and-rebuy loop spends one budget).
  router.post('/api/reservations/:reservationId/cancel', async (req, res) => {
    // No body is read; one that is not JSON is refused (415), as on every other route.
    requireJsonBodyOf(req);
    const { userId, reservationId, saleId } = buyerAndReservation(req, buyingLimits);
    const { repeated } = await sales.cancelReservation(saleId, reservationId, userId, config.PAUSED_RETRY_AFTER_SECONDS);
    logger.info({ reservationId, saleId, userId, repeated }, 'order cancelled');
    res.json({ reservationId, status: 'cancelled' });
  });

  return router;
}
