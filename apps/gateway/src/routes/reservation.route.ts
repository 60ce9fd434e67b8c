import { Router } from 'express';
import { AppError, saleIdOfReservation } from '@flashsale/domain';
import { findBuyerReservation, findDeadLetter } from '@flashsale/redis-store';
import { findOrderByReservation } from '@flashsale/order-store';
import type { GatewayDeps } from '../deps.ts';
import { createBuyerAuthenticator } from '../auth.ts';
import { createRequestLimits } from '../request-limits.ts';

/**
 * GET /api/reservations/:reservationId: `pending` until the worker has written the order, then the
 * order's status; `rejected` (with the reason) if the workers set it aside instead, so a buyer is not
 * left polling a reservation that will never become an order. Only the buyer who owns it sees it;
 * anyone else gets the same 404 as for an unknown id, so reservation ids cannot be probed.
 *
 * Rate-limited like purchases (per address, then per buyer, with budgets of its own), and bounded in
 * work: one indexed MySQL read, then at most two Redis HGETs (the rejected hash, the buyers hash).
 *
 * `orderId` is not the MySQL row id: that is an auto-increment shared by every sale, and two lookups a
 * minute apart would tell anyone how many orders were taken in between. There is one order per
 * reservation (orders.reservation_id is unique), so the order is named by its reservation's id: random,
 * unique, already the buyer's, stable across a Redis loss and a rebuild, and an order is found from it
 * with the unique index. Null while there is no order yet.
 */
export function reservationRouter({ config, redis, prisma, now }: GatewayDeps): Router {
  const router = Router();
  const authenticate = createBuyerAuthenticator(config.AUTH_SECRET, config.AUTH_CLOCK_TOLERANCE_SECONDS);
  const limits = createRequestLimits(config, now);
  router.get('/api/reservations/:reservationId', async (req, res) => {
    limits.checkAddress(req);
    const userId = authenticate(req.headers.authorization);
    limits.checkBuyer(userId);
    const reservationId = req.params.reservationId;
    const saleId = saleIdOfReservation(reservationId);
    const notFound = new AppError('RESERVATION_NOT_FOUND', 'no such reservation for this buyer');
    if (saleId === null) throw notFound;

    const order = await findOrderByReservation(prisma, reservationId);
    if (order) {
      if (order.userId !== userId) throw notFound;
      res.json({ reservationId, saleId, quantity: order.quantity, status: order.status, orderId: reservationId });
      return;
    }
    const rejected = await findDeadLetter(redis, config.REDIS_PREFIX, saleId, reservationId);
    if (rejected) {
      if (rejected.userId !== userId) throw notFound;
      res.json({ reservationId, saleId, quantity: rejected.quantity, status: 'rejected', orderId: null, reason: rejected.reason });
      return;
    }
    const held = await findBuyerReservation(redis, config.REDIS_PREFIX, saleId, userId);
    if (!held || held.reservationId !== reservationId) throw notFound;
    res.json({ reservationId, saleId, quantity: held.quantity, status: 'pending', orderId: null });
  });
  return router;
}
