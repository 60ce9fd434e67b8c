import express, { Router, type RequestHandler } from 'express';
import { z } from 'zod';
import { MAX_STOCK, MAX_SALE_ID, type SaleControl } from '@flashsale/domain';
import type { GatewayDeps } from '../deps.ts';
import type { ControlActor } from '@flashsale/sales';
import { clientAddress } from '../client-address.ts';
import { parseOrThrow, jsonBodyOnly, saleIdParam } from '../validation.ts';

const stockBody = z.strictObject({ add: z.number().int().min(1).max(MAX_STOCK) });

// The cursor is the id the next page starts below; a page holds at most 100 sales.
const listQuery = z.strictObject({
  // Decimal digits only: Number() would also take `0x10`, `1e1` or ` 16`, another spelling of a number.
  limit: z
    .string()
    .regex(/^[1-9][0-9]{0,2}$/, 'must be a whole number from 1 to 100')
    .transform(Number)
    .refine((limit) => limit <= 100, 'must be a whole number from 1 to 100')
    .default(20),
  cursor: z
    .string()
    .regex(/^[1-9][0-9]{0,9}$/, 'must be the nextCursor of a previous page')
    .transform(Number)
    .refine((id) => id <= MAX_SALE_ID + 1, 'must be the nextCursor of a previous page')
    .optional(),
});

/**
 * The operator's controls and the sales list, under `/api/admin` (the admin router's authentication runs
 * first: the bearer token, or the dashboard's session with its CSRF checks). Every control goes through
 * runSaleControl, the path the CLI takes too, and answers the sale.
 */
export function saleControlsRouter(deps: GatewayDeps): Router {
  const { config, sales } = deps;
  const router = Router();
  // The dashboard's requests carry its session; everything else is the admin API's bearer token.
  const actorOf = (res: express.Response): ControlActor => (res.locals.adminSession ? 'dashboard' : 'api');

  const control =
    (toControl: (body: unknown) => SaleControl): RequestHandler =>
    async (req, res) => {
      const saleId = saleIdParam(req.params.saleId);
      res.json(await sales.runSaleControl(saleId, toControl(req.body), actorOf(res), clientAddress(req, config.TRUST_PROXY)));
    };

  router.get('/api/admin/sales', async (req, res) => {
    res.json(await sales.listAdminSales(parseOrThrow(listQuery, req.query)));
  });
  // No body is read, but one that is not JSON is refused as on every other route (415), rather than
  // ignored: a client sending a form or text here is not speaking this API.
  router.post(
    '/api/admin/sales/:saleId/pause',
    jsonBodyOnly,
    control(() => ({ action: 'pause' })),
  );
  router.post(
    '/api/admin/sales/:saleId/resume',
    jsonBodyOnly,
    control(() => ({ action: 'resume' })),
  );
  router.post(
    '/api/admin/sales/:saleId/close',
    jsonBodyOnly,
    control(() => ({ action: 'close' })),
  );
  router.post(
    '/api/admin/sales/:saleId/stock',
    jsonBodyOnly,
    express.json({ limit: config.HTTP_MAX_BODY_BYTES, strict: true }),
    control((body) => ({ action: 'add_stock', units: parseOrThrow(stockBody, body ?? {}).add })),
  );
  return router;
}
