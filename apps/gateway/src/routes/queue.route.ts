import { Router, type Response } from 'express';
import type { Door, QueueReply } from '@flashsale/sales';
import type { GatewayDeps } from '../deps.ts';
import type { BuyerGate } from '../buyer-gate.ts';
import { createRequestLimits } from '../request-limits.ts';
import { saleIdParam } from '../validation.ts';

/**
 * The waiting room of a queued sale (packages/sales: the door):
 *   POST /api/sales/:saleId/queue   join (idempotent: the same place again)
 *   GET  /api/sales/:saleId/queue   where the buyer stands, with Retry-After
 * Both answer the buyer's state and a signed ticket; a client sends the ticket back in the
 * `Queue-Ticket` header, and a waiting buyer's poll is then answered without Redis. Rate-limited like
 * purchases, with budgets of their own. A ticket of a door Redis lost puts its buyer back at their
 * place, on either route.
 */
export function queueRouter({ config, now }: GatewayDeps, buyerOf: BuyerGate, door: Door): Router {
  const router = Router();
  const limits = createRequestLimits(config, now);
  const send = (res: Response, { saleId, answer, ticket }: QueueReply) => {
    res.set('Retry-After', String(answer.retryAfterSeconds));
    res.set('Cache-Control', 'no-store');
    res.json({
      saleId,
      state: answer.state,
      position: answer.position,
      ahead: answer.ahead,
      etaSeconds: answer.etaSeconds,
      admittedUntil: answer.admittedUntil === null ? null : new Date(answer.admittedUntil).toISOString(),
      ticket,
    });
  };
  router.post('/api/sales/:saleId/queue', async (req, res) => {
    const userId = buyerOf(req, limits);
    const ticket = req.headers['queue-ticket'];
    send(res, await door.join(saleIdParam(req.params.saleId), userId, typeof ticket === 'string' ? ticket : undefined));
  });
  router.get('/api/sales/:saleId/queue', async (req, res) => {
    const userId = buyerOf(req, limits);
    const ticket = req.headers['queue-ticket'];
    send(res, await door.status(saleIdParam(req.params.saleId), userId, typeof ticket === 'string' ? ticket : undefined));
  });
  return router;
}
