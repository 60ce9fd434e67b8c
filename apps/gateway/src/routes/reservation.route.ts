import { Router } from 'express';
import { AppError, saleIdOfReservation } from '@flashsale/domain';
import { findBuyerReservation, findDeadLetter } from '@flashsale/redis-store';
import { findOrderByReservation } from '@flashsale/order-store';
import type { GatewayDeps } from '../deps.ts';
import { createBuyerAuthenticator } from '../auth.ts';

/**
 * GET /api/reservations/:reservationId: `pending` until the worker has written the order, then the
 * order's status; `rejected` (with the reason) if the workers set it aside instead, so a buyer is not
 * left polling a reservation that will never become an order. Only the buyer who owns it sees it;
 * anyone else gets the same 404 as for an unknown id, so reservation ids cannot be probed.
 */
export function reservationRouter({ config, redis, prisma }: GatewayDeps): Router {
  const router = Router();
  const authenticate = createBuyerAuthenticator(config.AUTH_SECRET);
  router.get('/api/reservations/:reservationId', async (req, res) => {
    const userId = await authenticate(req.headers.authorization);
    const reservationId = req.params.reservationId;
    const saleId = saleIdOfReservation(reservationId);
    const notFound = new AppError('RESERVATION_NOT_FOUND', 'no such reservation for this buyer');
    if (saleId === null) throw notFound;

    const order = await findOrderByReservation(prisma, reservationId);
    if (order) {
      if (order.userId !== userId) throw notFound;
      res.json({ reservationId, saleId, quantity: order.quantity, status: order.status, orderId: order.orderId });
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
