import express, { type Express } from 'express';
import type { GatewayDeps } from './deps.ts';
import { createGatewayMetrics, type GatewayMetrics } from './metrics.ts';
import { errorHandler, notFound } from './problem.ts';
import { purchaseRouter } from './routes/purchase.route.ts';
import { saleRouter } from './routes/sale.route.ts';
import { reservationRouter } from './routes/reservation.route.ts';
import { adminRouter } from './routes/admin.route.ts';
import { healthRouter } from './routes/health.route.ts';

/** Builds the gateway without listening; `main.ts` boots it, tests use it directly. */
export function createApp(deps: GatewayDeps, metrics: GatewayMetrics = createGatewayMetrics()): Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('trust proxy', false);
  // The purchase route first: it is the hot path and should not pass through anything it does not need.
  app.use(purchaseRouter(deps, metrics));
  app.use(saleRouter(deps));
  app.use(reservationRouter(deps));
  app.use(adminRouter(deps));
  app.use(healthRouter(deps, metrics));
  app.use(notFound);
  app.use(errorHandler(deps.logger));
  return app;
}
