import type { IncomingMessage, ServerResponse } from 'node:http';
import { summarisedLog } from '@flashsale/runtime';
import { AppError, newReservationId } from '@flashsale/domain';
import type { ReserveOutcome, UnreplicatedOutcome } from '@flashsale/sales';
import type { GatewayDeps } from '../deps.ts';
import type { GatewayMetrics } from '../metrics.ts';
import type { RequestLimits } from '../request-limits.ts';
import type { BuyerGate } from '../buyer-gate.ts';
import { requireJsonBody, saleIdParam } from '../validation.ts';
import { problemFor, renderProblem, type Problem } from '../problem.ts';
import { sendAfterReads } from '../answer-batch.ts';
import { createPurchaseBodyReader, quantityOf } from './purchase-body.ts';
import { createAcceptedAnswer, createDuplicateAnswer } from './purchase-answers.ts';
import type { SaleVerdictCache } from './sale-verdict-cache.ts';
import type { LiveSaleDirectory } from './live-sale-directory.ts';

/** Handles POST /api/sales/:saleId/purchase on Node's own request and response objects. */
export type PurchaseHandler = (req: IncomingMessage, res: ServerResponse, rawSaleId: string) => void;

/** The refusal a client sees for each outcome of the reserve script (plain data: no Error to build). */
export function refusalOf(outcome: Exclude<ReserveOutcome, { kind: 'reserved' }>, saleId: number, retryAfterSeconds: number): Problem {
  switch (outcome.kind) {
    case 'sale_not_found':
      return { code: 'SALE_NOT_FOUND' };
    case 'sale_ended':
      return { code: 'SALE_ENDED' };
    case 'sale_paused':
      return { code: 'SALE_PAUSED', headers: { 'Retry-After': String(retryAfterSeconds) } };
    case 'sale_not_started':
      return { code: 'SALE_NOT_STARTED' };
    case 'above_limit':
      return problemFor('INVALID_REQUEST', { because: 'above_limit', perUserLimit: outcome.limit }, { perUserLimit: outcome.limit });
    case 'already_purchased':
      return { code: 'ALREADY_PURCHASED', extra: { reservationId: outcome.reservationId } };
    case 'sold_out':
      return { code: 'SOLD_OUT' };
    case 'insufficient_stock':
      return problemFor('INSUFFICIENT_STOCK', { remaining: outcome.remaining }, { remaining: outcome.remaining });
    case 'not_admitted':
      return problemFor('NOT_ADMITTED', { saleId });
    case 'rebuy_cooldown': {
      const seconds = Math.ceil(outcome.waitMs / 1000);
      return problemFor(
        'REBUY_COOLDOWN',
        { retryAfterSeconds: seconds },
        { retryAfterSeconds: seconds },
        { 'Retry-After': String(seconds) },
      );
    }
    case 'order_limit_reached':
      return problemFor('ORDER_LIMIT_REACHED', { maxOrdersPerBuyer: outcome.maxOrders }, { maxOrdersPerBuyer: outcome.maxOrders });
  }
}

export interface PurchaseHandlerParts {
  verdicts: SaleVerdictCache;
  liveSales: LiveSaleDirectory;
  /** The buyers' and addresses' purchase budgets, shared with the cancel route (gateway.ts). */
  limits: RequestLimits;
  /** The gateway's one buyer authentication (buyer-gate.ts). */
  buyerOf: BuyerGate;
}

/**
 * The hot path: authenticate, rate-limit, read and validate the body, then one EVALSHA, or none when the
 * sale is known to be sold out or over. Written against Node's request and response: the purchase route
 * calls it ahead of Express (routes/crowd-routes.ts), whose request and response objects the profile
 * showed costing on every call.
 */
export function createPurchaseHandler(
  { config, sales, logger }: GatewayDeps,
  metrics: GatewayMetrics,
  { verdicts, liveSales, limits, buyerOf }: PurchaseHandlerParts,
): PurchaseHandler {
  const readPurchaseBody = createPurchaseBodyReader(config.HTTP_MAX_BODY_BYTES);
  // Tells the workers a sale has work (a debounced PUBLISH, off the answer's path): they read it at once
  // rather than polling every live sale.
  const workSignal = sales.workSignaller();
  const count = (outcome: string) => metrics.purchases.inc(outcome);
  const refuse = (res: ServerResponse, problem: Problem | AppError) => {
    count(problem.code);
    sendAfterReads(res, renderProblem(problem));
  };
  // Redis away fails every purchase: a line per request would turn an outage (and the crowd's retries
  // during it) into a flood of the log. The first failure is logged at once, then counts at most every 10 s.
  const replicaWait =
    config.REDIS_WAIT_REPLICAS > 0 ? { replicas: config.REDIS_WAIT_REPLICAS, timeoutMs: config.REDIS_WAIT_TIMEOUT_MS } : undefined;
  const reserveFailures = summarisedLog<'failed'>(logger, 'reserve script failed', 'requests');
  const acceptedAnswer = createAcceptedAnswer();
  const duplicateAnswer = createDuplicateAnswer();
  const answerDuplicate = (res: ServerResponse, reservationId: string) => {
    count('ALREADY_PURCHASED');
    sendAfterReads(res, duplicateAnswer(reservationId));
  };
  // The answers given without asking Redis, rendered once.
  const verdictAnswers = { SOLD_OUT: renderProblem({ code: 'SOLD_OUT' }), SALE_ENDED: renderProblem({ code: 'SALE_ENDED' }) };
  // Every answer is counted under its code, the refusals before the script (401, 429, 415, a bad body)
  // too: an outcome missing from the counter is a flood nobody sees on the dashboard.
  const fail = (res: ServerResponse, error: unknown) => {
    if (error instanceof AppError) return refuse(res, error);
    logger.error({ err: error }, 'purchase failed');
    refuse(res, problemFor('INTERNAL_ERROR'));
  };

  // A crowd sends one sale's id in every path: parsed again only when it changes.
  let lastRawSaleId: string | undefined;
  let lastSaleId = 0;
  const saleIdOf = (raw: string): number => {
    if (raw !== lastRawSaleId) {
      lastSaleId = saleIdParam(raw);
      lastRawSaleId = raw;
    }
    return lastSaleId;
  };

  /** Answers the purchase whatever happens: it never rejects, so its caller attaches no handler to it. */
  async function decide(res: ServerResponse, rawSaleId: string, userId: string, body: unknown, started: number): Promise<void> {
    try {
      const saleId = saleIdOf(rawSaleId);
      const quantity = quantityOf(body);
      const known = verdicts.get(saleId);
      if (known !== undefined) {
        metrics.purchaseSeconds.observe((performance.now() - started) / 1000);
        const held = known.holders.get(userId);
        // A holder's retry gets what the script would answer: their reservation, not the sale's verdict.
        if (held !== undefined) return answerDuplicate(res, held);
        count(known.verdict);
        return sendAfterReads(res, verdictAnswers[known.verdict]);
      }
      const ticket = verdicts.ticket();
      const reservationId = newReservationId(saleId);
      let outcome: ReserveOutcome | UnreplicatedOutcome;
      const called = performance.now();
      let returned: number;
      try {
        outcome = await sales.reserve({ saleId, userId, quantity, reservationId }, replicaWait);
        returned = performance.now();
        metrics.reserveScriptSeconds.observe((returned - called) / 1000);
      } catch (error) {
        // A failed call is timed too: a Redis that times out shows in the latency, not only in the errors.
        metrics.reserveScriptSeconds.observe((performance.now() - called) / 1000);
        metrics.storeErrors.count(error);
        // The script may or may not have run; a retry by the buyer is safe either way (it is refused as
        // ALREADY_PURCHASED with the reservation id if the first one went through).
        reserveFailures('failed', { err: error, saleId });
        return refuse(res, problemFor('SERVICE_UNAVAILABLE', { because: 'sale_unreachable' }, {}, { 'Retry-After': '1' }));
      }
      metrics.purchaseSeconds.observe((returned - started) / 1000);
      if (outcome.kind === 'reserved') {
        workSignal.reserved(saleId);
        if (outcome.remaining === 0) verdicts.learn(saleId, 'SOLD_OUT', ticket);
        count('reserved');
        return sendAfterReads(res, acceptedAnswer(reservationId, saleId, quantity));
      }
      if (outcome.kind === 'unreplicated') {
        // Taken on the primary, not yet on enough replicas: it becomes an order unless a failover loses it
        // first, so it is not answered 202. The buyer's retry gets 409 with it, or a new reservation.
        workSignal.reserved(saleId);
        count('unreplicated');
        return sendAfterReads(
          res,
          renderProblem(problemFor('SERVICE_UNAVAILABLE', { because: 'unreplicated' }, {}, { 'Retry-After': '1' })),
        );
      }
      if (outcome.kind === 'already_purchased') return answerDuplicate(res, outcome.reservationId);
      if (outcome.kind === 'sold_out') verdicts.learn(saleId, 'SOLD_OUT', ticket);
      else if (outcome.kind === 'sale_ended') verdicts.learn(saleId, 'SALE_ENDED', ticket);
      else if (outcome.kind === 'sale_not_found' && liveSales.isLive(saleId)) {
        // MySQL has this sale and it is running: Redis lost it, and the reconciler rebuilds it from MySQL.
        return refuse(res, refusalOf({ kind: 'sale_paused' }, saleId, config.PAUSED_RETRY_AFTER_SECONDS));
      }
      refuse(res, refusalOf(outcome, saleId, config.PAUSED_RETRY_AFTER_SECONDS));
    } catch (failure) {
      fail(res, failure);
    }
  }

  return (req, res, rawSaleId) => {
    const started = performance.now();
    let userId: string;
    try {
      // The rate limits and authentication come before the body is read: the cheapest refusals first.
      userId = buyerOf(req, limits);
      requireJsonBody(req.headers['content-type'], req.headers['content-length'], req.headers['transfer-encoding'] !== undefined);
    } catch (error) {
      return fail(res, error);
    }
    readPurchaseBody(req, res, (error, body) => {
      if (error) return fail(res, error);
      void decide(res, rawSaleId, userId, body, started);
    });
  };
}
