import { Router } from 'express';
import type { PurchaseHandler } from '../purchase/purchase-handler.ts';

/**
 * POST /api/sales/:saleId/purchase: authenticate, validate, one EVALSHA, answer. No MySQL here: the
 * reservation reaches MySQL through the stream the script wrote it to. The handler works on Node's own
 * request and response (purchase/purchase-handler.ts), so the server's front door can also call it
 * without Express's routing; both ways run the same code.
 */
export function purchaseRouter(handlePurchase: PurchaseHandler): Router {
  const router = Router();
  router.post('/api/sales/:saleId/purchase', (req, res) => handlePurchase(req, res, req.params.saleId));
  return router;
}
