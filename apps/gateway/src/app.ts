import express, { type Express } from 'express';
import type { Door, SaleMisses } from '@flashsale/sales';
import type { GatewayDeps } from './deps.ts';
import { errorHandler, notFound, sendProblem, type FailureAnswer } from './problem.ts';
import { requestDeadline } from './deadline.ts';
import { saleRouter } from './routes/sale.route.ts';
import { queueRouter } from './routes/queue.route.ts';
import { admissionRouter } from './routes/admission.route.ts';
import { reservationRouter } from './routes/reservation.route.ts';
import { paymentsRouter } from './routes/payments.route.ts';
import { adminRouter } from './routes/admin.route.ts';
import { saleControlsRouter } from './routes/sale-controls.route.ts';
import { adminAuthentication } from './dashboard/admin-auth.ts';
import { createAdminGuard } from './dashboard/admin-guard.ts';
import { dashboardRouter, type DashboardParts } from './dashboard/dashboard.route.ts';
import { healthRouter } from './routes/health.route.ts';
import { openApiRouter } from './routes/openapi.route.ts';
import { buyerPageRouter } from './buyer-page/buyer-page.route.ts';
import type { BuyerGate } from './buyer-gate.ts';
import type { GatewayMetrics } from './metrics.ts';
import { addressBudget, type AddressBudget, type RequestLimits } from './request-limits.ts';

/** What the buyer routes share with the routes ahead of the app (routes/crowd-routes.ts), made once in `createGateway`. */
export interface BuyerParts {
  /** The gateway's one buyer authentication (buyer-gate.ts). */
  buyerOf: BuyerGate;
  /** The purchase budgets, which a cancel spends too. */
  buyingLimits: RequestLimits;
  /** The waiting room's budgets: a join and a status poll spend them alike. */
  queueLimits: RequestLimits;
  /** The budgets of joins, on top of the queue's (request-limits.ts). */
  joinLimits: RequestLimits;
  /** The door's use cases (packages/sales). */
  door: Door;
  /**
   * The gateway's one failure answer (problem.ts), shared with the routes ahead of the app: one count of
   * the stores' errors and one summarised log line for a store away, whichever route met it.
   */
  fail: FailureAnswer;
  /** Ids MySQL holds no sale of, remembered briefly (GET /api/sales/:id, the queue's). */
  misses?: SaleMisses;
  /**
   * The budget of reads anyone may make without a token, per address (a miss costs MySQL a query),
   * which the crowd routes also look at; made here when not given.
   */
  publicReads?: AddressBudget;
}

/**
 * The gateway's Express app, every route but the purchase's and the queue status poll's
 * (routes/crowd-routes.ts, ahead of this app), around the buyer parts and the dashboard's live parts (feed,
 * views, streams) `createGateway` built: the one construction of the gateway, for `main.ts` and the tests alike.
 */
export function createApp(
  deps: GatewayDeps,
  { buyerOf, buyingLimits, queueLimits, joinLimits, door, fail, misses, publicReads = publicReadBudget(deps) }: BuyerParts,
  metrics: GatewayMetrics,
  dashboard: DashboardParts,
): Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('trust proxy', false);
  // Every other request is answered within the deadline, whatever Redis or MySQL do meanwhile.
  app.use(requestDeadline(deps.config.REQUEST_DEADLINE_MS, sendProblem));
  app.use(saleRouter(deps, publicReads, misses));
  app.use(queueRouter(buyerOf, queueLimits, joinLimits, door, deps.config.HTTP_MAX_BODY_BYTES));
  app.use(reservationRouter(deps, buyerOf, buyingLimits));
  // The payment provider's door, open to the internet: a budget per address before any signature is checked.
  app.use('/api/payments', addressBudget(deps.config.PAYMENT_EVENTS_PER_ADDRESS_PER_SECOND, deps.config.TRUST_PROXY, deps.now));
  app.use(paymentsRouter(deps, door));
  // The admin surface answers only for the hosts the operator allowed, and its token is guessed slowly.
  const adminGuard = createAdminGuard(deps.config, deps.logger, metrics, deps.now);
  app.use(['/api/admin', '/admin'], adminGuard.allowedHost);
  // Every /api/admin route, whichever router holds it, behind one authentication (token or dashboard session).
  app.use('/api/admin', adminAuthentication(deps, adminGuard));
  app.use(adminRouter(deps));
  app.use(saleControlsRouter(deps));
  app.use(admissionRouter(door, deps.config.HTTP_MAX_BODY_BYTES));
  app.use(dashboardRouter(deps, dashboard, adminGuard));
  app.use(healthRouter(deps, publicReads));
  app.use(openApiRouter());
  app.use(buyerPageRouter(deps, buyerOf, buyingLimits, door));
  app.use(notFound);
  app.use(errorHandler(fail));
  return app;
}

/** Reads anyone may make without a token: a budget per address, as a miss costs MySQL a query. */
export function publicReadBudget(deps: GatewayDeps): AddressBudget {
  return addressBudget(deps.config.PUBLIC_READS_PER_ADDRESS_PER_SECOND, deps.config.TRUST_PROXY, deps.now);
}
