import express, { type Express } from 'express';
import type { GatewayDeps } from './deps.ts';
import { createGatewayMetrics, type GatewayMetrics } from './metrics.ts';
import { errorHandler, notFound, sendProblem } from './problem.ts';
import { requestDeadline } from './deadline.ts';
import { purchaseRouter } from './routes/purchase.route.ts';
import { saleRouter } from './routes/sale.route.ts';
import { reservationRouter } from './routes/reservation.route.ts';
import { adminRouter } from './routes/admin.route.ts';
import { healthRouter } from './routes/health.route.ts';
import { openApiRouter } from './routes/openapi.route.ts';
import { createPurchaseHandler, type PurchaseHandler } from './purchase/purchase-handler.ts';
import { SaleVerdictCache } from './purchase/sale-verdict-cache.ts';
import { LiveSaleDirectory } from './purchase/live-sale-directory.ts';

/**
 * Builds the gateway without listening; `main.ts` boots it (through `createGateway`, which also starts
 * the background parts the purchase handler uses), tests use it directly. Without a handler given, the
 * purchase route gets one whose verdict cache never caches (nothing tells it when a verdict goes stale)
 * and whose live-sale directory is empty.
 */
export function createApp(
  deps: GatewayDeps,
  metrics: GatewayMetrics = createGatewayMetrics(),
  handlePurchase: PurchaseHandler = createPurchaseHandler(deps, metrics, {
    verdicts: new SaleVerdictCache(0),
    liveSales: new LiveSaleDirectory(deps.prisma, deps.logger),
  }),
): Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('trust proxy', false);
  // The purchase route first: it is the hot path and should not pass through anything it does not need.
  app.use(purchaseRouter(handlePurchase));
  // Every other request is answered within the deadline, whatever Redis or MySQL do meanwhile.
  app.use(requestDeadline(deps.config.REQUEST_DEADLINE_MS, sendProblem));
  app.use(saleRouter(deps));
  app.use(reservationRouter(deps));
  app.use(adminRouter(deps));
  app.use(healthRouter(deps));
  app.use(openApiRouter());
  app.use(notFound);
  app.use(errorHandler(deps.logger));
  return app;
}
