import express, { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import type { Door } from '@flashsale/sales';
import type { BuyerGate } from '../buyer-gate.ts';
import type { RequestLimits } from '../request-limits.ts';
import { sendRendered } from '../problem.ts';
import { jsonBodyOnly, parseOrThrow, saleIdParam } from '../validation.ts';
import { tokenClaims } from '../auth.ts';
import { renderQueueReply } from './queue-status.ts';

// A join's body, optional: the ALTCHA payload solving the sale's challenge (base64 of a small JSON object).
const joinBody = z.strictObject({ solution: z.string().min(1).max(2048).optional() });

/**
 * The waiting room of a queued sale (packages/sales: the door):
 *   POST /api/sales/:saleId/queue   join (idempotent: the same place again), here; body { solution? }
 *   GET  /api/sales/:saleId/queue/challenge   a proof-of-work challenge for this buyer and sale
 *   POST /api/sales/:saleId/queue/here   the buyer shows up for their turn (Queue-Ticket)
 *   GET  /api/sales/:saleId/queue   where the buyer stands, with Retry-After: answered ahead of
 *                                   Express (routes/queue-status.ts); here for HEAD, and for the
 *                                   methods Express lists to OPTIONS
 * Both answer the buyer's state and a signed ticket; a client sends the ticket back in the
 * `Queue-Ticket` header, and a waiting buyer's poll is then answered without Redis. Rate-limited like
 * purchases, with budgets of their own (`limits`, shared by both). A ticket of a door Redis lost puts its
 * buyer back at their place, on either route.
 */
export function queueRouter(
  buyerOf: BuyerGate,
  limits: RequestLimits,
  joinLimits: RequestLimits,
  door: Door,
  maxBodyBytes: number,
): Router {
  const router = Router();
  // Showing up and asking where one stands: the door's answer for the buyer, the sale and the ticket the page holds.
  const answer = (ask: 'here' | 'status') => async (req: Request<{ saleId: string }>, res: Response) => {
    const userId = buyerOf(req, limits);
    const ticket = req.headers['queue-ticket'];
    sendRendered(
      res,
      renderQueueReply(await door[ask](saleIdParam(req.params.saleId), userId, typeof ticket === 'string' ? ticket : undefined)),
    );
  };
  router.post('/api/sales/:saleId/queue', jsonBodyOnly, express.json({ limit: maxBodyBytes, strict: true }), async (req, res) => {
    // A join costs a Redis call and makes a place: its own budgets first (the address's before the token).
    joinLimits.checkAddress(req);
    const userId = buyerOf(req, limits);
    const saleId = saleIdParam(req.params.saleId);
    try {
      joinLimits.checkBuyer(userId);
    } catch (error) {
      // An account joining again and again past its budget: set aside after a few strikes (the shadow queue).
      const shadowed = await door.flooded(saleId, userId);
      if (!shadowed) throw error;
      return sendRendered(res, renderQueueReply(shadowed));
    }
    const { solution } = parseOrThrow(joinBody, req.body ?? {});
    const ticket = req.headers['queue-ticket'];
    const joined = await door.join(saleId, userId, {
      ...(typeof ticket === 'string' && { ticket }),
      ...(solution !== undefined && { solution }),
      claims: tokenClaims(req.headers.authorization),
    });
    sendRendered(res, renderQueueReply(joined));
  });
  router.post('/api/sales/:saleId/queue/here', answer('here'));
  router.get('/api/sales/:saleId/queue/challenge', async (req, res) => {
    const userId = buyerOf(req, limits);
    const challenge = await door.challenge(saleIdParam(req.params.saleId), userId);
    res.set('Cache-Control', 'no-store').json(challenge);
  });
  router.get('/api/sales/:saleId/queue', answer('status'));
  return router;
}
