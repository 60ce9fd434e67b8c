import { Router } from 'express';
import type { Door } from '@flashsale/sales';
import type { BuyerGate } from '../buyer-gate.ts';
import type { RequestLimits } from '../request-limits.ts';
import { sendRendered } from '../problem.ts';
import { saleIdParam } from '../validation.ts';
import { renderQueueReply } from './queue-status.ts';

/**
 * The waiting room of a queued sale (packages/sales: the door):
 *   POST /api/sales/:saleId/queue   join (idempotent: the same place again), here
 *   GET  /api/sales/:saleId/queue   where the buyer stands, with Retry-After: answered ahead of
 *                                   Express (routes/queue-status.ts); here for HEAD, and for the
 *                                   methods Express lists to OPTIONS
 * Both answer the buyer's state and a signed ticket; a client sends the ticket back in the
 * `Queue-Ticket` header, and a waiting buyer's poll is then answered without Redis. Rate-limited like
 * purchases, with budgets of their own (`limits`, shared by both). A ticket of a door Redis lost puts its
 * buyer back at their place, on either route.
 */
export function queueRouter(buyerOf: BuyerGate, limits: RequestLimits, door: Door): Router {
  const router = Router();
  router.post('/api/sales/:saleId/queue', async (req, res) => {
    const userId = buyerOf(req, limits);
    const ticket = req.headers['queue-ticket'];
    sendRendered(res, renderQueueReply(await door.join(saleIdParam(req.params.saleId), userId, typeof ticket === 'string' ? ticket : undefined)));
  });
  router.get('/api/sales/:saleId/queue', async (req, res) => {
    const userId = buyerOf(req, limits);
    const ticket = req.headers['queue-ticket'];
    sendRendered(res, renderQueueReply(await door.status(saleIdParam(req.params.saleId), userId, typeof ticket === 'string' ? ticket : undefined)));
  });
  return router;
}
