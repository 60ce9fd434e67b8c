import { Router, type RequestHandler } from 'express';
import { AppError, saleStatus } from '@flashsale/domain';
import type { SaleMisses } from '@flashsale/sales';
import type { GatewayDeps } from '../deps.ts';
import { saleIdParam } from '../validation.ts';
import { admissionView, saleView } from './sale-view.ts';

/** GET /api/sales/:saleId: the sale as buyers see it, with live stock and status from Redis. */
export function saleRouter({ sales }: GatewayDeps, budget: RequestHandler, misses?: SaleMisses): Router {
  const router = Router();
  router.get('/api/sales/:saleId', budget, async (req, res) => {
    const saleId = saleIdParam(req.params.saleId);
    const found = await sales.readBuyerSale(saleId, misses);
    if (!found) throw new AppError('SALE_NOT_FOUND', { saleId });
    const { now, writesRefused } = found;
    if ('state' in found) {
      const { state } = found;
      // Paused for buyers whatever paused it: the reconciler or an operator (the reserve script refuses
      // either), or Redis over its memory limit (it refuses the reserve script: every purchase answers 503).
      const view = saleView(state, {
        remaining: state.remaining,
        status: saleStatus({ ...state, paused: state.paused || state.operatorPaused || writesRefused }, now),
      });
      res.json(state.admission ? { ...view, admission: admissionView(state.admission) } : view);
      return;
    }
    // Not in Redis: Redis lost it, and intake is stopped until it is rebuilt.
    const { record } = found;
    const remaining = record.stock - record.soldUnits;
    res.json(saleView(record, { remaining, status: saleStatus({ ...record, remaining, paused: true }, now) }));
  });
  return router;
}
