import { Router } from 'express';
import { AppError, saleStatus } from '@flashsale/domain';
import { readSaleState, redisNow, saleKeys } from '@flashsale/redis-store';
import { findSale } from '@flashsale/order-store';
import type { GatewayDeps } from '../deps.ts';
import { saleIdParam } from '../validation.ts';
import { admissionView, saleView } from './sale-view.ts';

/** GET /api/sales/:saleId: the sale as buyers see it, with live stock and status from Redis. */
export function saleRouter({ redis, prisma, config }: GatewayDeps): Router {
  const router = Router();
  router.get('/api/sales/:saleId', async (req, res) => {
    const saleId = saleIdParam(req.params.saleId);
    // Status is judged on Redis's clock, the one the reserve script uses, so this page and the purchase
    // endpoint never disagree about whether the sale has started.
    const [state, now] = await Promise.all([readSaleState(redis, config.REDIS_PREFIX, saleId), redisNow(redis, saleKeys(config.REDIS_PREFIX, saleId).meta)]);
    if (state) {
      // Paused for buyers whoever paused it: the reconciler or an operator (the reserve script refuses either).
      const view = saleView(state, { remaining: state.remaining, status: saleStatus({ ...state, paused: state.paused || state.operatorPaused }, now) });
      res.json(state.admission ? { ...view, admission: admissionView(state.admission) } : view);
      return;
    }
    // Not in Redis: either no such sale, or Redis lost it and intake is stopped until it is rebuilt.
    const record = await findSale(prisma, saleId);
    if (!record) throw new AppError('SALE_NOT_FOUND', `no sale has the id ${saleId}`);
    const remaining = record.stock - record.soldUnits;
    res.json(saleView(record, { remaining, status: saleStatus({ ...record, remaining, paused: true }, now) }));
  });
  return router;
}
