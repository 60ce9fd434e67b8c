import express, { Router } from 'express';
import { z } from 'zod';
import { AppError, newReservationId } from '@flashsale/domain';
import { reservePurchase, type ReserveOutcome } from '@flashsale/redis-store';
import type { GatewayDeps } from '../deps.ts';
import type { GatewayMetrics } from '../metrics.ts';
import { RateLimiter } from '../rate-limiter.ts';
import { createBuyerAuthenticator } from '../auth.ts';
import { parseOrThrow, requireJsonBody, saleIdParam } from '../validation.ts';

const purchaseBody = z.strictObject({
  // The sale's own per-user limit is checked by the reserve script; this bound only keeps the value sane.
  quantity: z.number().int().min(1).max(1_000_000).optional(),
});

/** The refusal a client sees for each outcome of the reserve script. */
export function refusalOf(outcome: Exclude<ReserveOutcome, { kind: 'reserved' }>, retryAfterSeconds: number): AppError {
  switch (outcome.kind) {
    case 'sale_not_found':
      return new AppError('SALE_NOT_FOUND');
    case 'sale_ended':
      return new AppError('SALE_ENDED');
    case 'sale_paused':
      return new AppError('SALE_PAUSED', undefined, {}, { 'Retry-After': String(retryAfterSeconds) });
    case 'sale_not_started':
      return new AppError('SALE_NOT_STARTED');
    case 'above_limit':
      return new AppError('INVALID_REQUEST', `quantity must be at most ${outcome.limit} for this sale`, { perUserLimit: outcome.limit });
    case 'already_purchased':
      return new AppError('ALREADY_PURCHASED', undefined, { reservationId: outcome.reservationId });
    case 'sold_out':
      return new AppError('SOLD_OUT');
    case 'insufficient_stock':
      return new AppError('INSUFFICIENT_STOCK', `only ${outcome.remaining} left`, { remaining: outcome.remaining });
  }
}

/**
 * POST /api/sales/:saleId/purchase: authenticate, validate, one EVALSHA, answer. No MySQL here: the
 * reservation reaches MySQL through the stream the script wrote it to.
 */
export function purchaseRouter({ config, redis, logger }: GatewayDeps, metrics: GatewayMetrics): Router {
  const router = Router();
  const authenticate = createBuyerAuthenticator(config.AUTH_SECRET);
  const limiter = new RateLimiter(config.RATE_LIMIT_PER_SECOND);
  const parseJson = express.json({ limit: '1kb', strict: true });

  router.post(
    '/api/sales/:saleId/purchase',
    // Authentication and the rate limit come before the body is read: the cheapest refusals first.
    async (req, res, next) => {
      const userId = await authenticate(req.headers.authorization);
      res.locals.userId = userId;
      if (!limiter.take(userId)) throw new AppError('RATE_LIMITED', undefined, {}, { 'Retry-After': '1' });
      requireJsonBody(req.headers['content-type'], req.headers['content-length'], req.headers['transfer-encoding'] !== undefined);
      next();
    },
    parseJson,
    async (req, res) => {
      const started = process.hrtime.bigint();
      const saleId = saleIdParam(req.params.saleId);
      const { quantity = 1 } = parseOrThrow(purchaseBody, req.body ?? {});
      const reservationId = newReservationId(saleId);
      let outcome: ReserveOutcome;
      try {
        outcome = await reservePurchase(redis, config.REDIS_PREFIX, { saleId, userId: res.locals.userId as string, quantity, reservationId });
      } catch (error) {
        // The script may or may not have run; a retry by the buyer is safe either way (it is refused as
        // ALREADY_PURCHASED with the reservation id if the first one went through).
        logger.error({ err: error, saleId }, 'reserve script failed');
        metrics.purchases.inc({ outcome: 'SERVICE_UNAVAILABLE' });
        throw new AppError('SERVICE_UNAVAILABLE', 'the sale cannot be reached right now, retry shortly', {}, { 'Retry-After': '1' });
      }
      metrics.purchaseSeconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
      if (outcome.kind !== 'reserved') {
        const refusal = refusalOf(outcome, config.PAUSED_RETRY_AFTER_SECONDS);
        metrics.purchases.inc({ outcome: refusal.code });
        throw refusal;
      }
      metrics.purchases.inc({ outcome: 'reserved' });
      res.status(202).json({ reservationId, saleId, quantity, status: 'pending' });
    },
  );
  return router;
}
