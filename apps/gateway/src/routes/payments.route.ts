import express, { Router } from 'express';
import { z } from 'zod';
import { AppError, checkPaymentSignature, saleIdOfReservation } from '@flashsale/domain';
import { findDeadLetter, streamBacklog } from '@flashsale/redis-store';
import { recordOrderlessPayment, recordPayment, type PaymentEventInput, type PaymentOutcome } from '@flashsale/order-store';
import type { Door } from '@flashsale/sales';
import type { GatewayDeps } from '../deps.ts';
import { parseOrThrow, jsonBodyOnly } from '../validation.ts';

/** Seconds a provider is asked to wait before it delivers an event for a reservation still pending. */
const NOT_READY_RETRY_AFTER_SECONDS = '2';

const paymentEvent = z.object({
  id: z.string().min(1).max(255),
  type: z.literal('payment.succeeded'),
  reservationId: z.string().min(1).max(64),
  amountCents: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
});

/**
 * POST /api/payments/events: the payment provider tells us a reservation was paid. Authenticated by the
 * event's signature (PAYMENT_WEBHOOK_SECRET, see payment-signature.ts), checked on the raw bytes before
 * anything is parsed. Each event id is processed once (payment_events): a replay, concurrent or a day
 * later, answers what the first delivery answered and changes nothing.
 *
 *   200 { status: "paid" }        the order was awaiting payment and is paid now (or by this event before)
 *   200 { status: "refund_due" }  the order had expired or been cancelled, or was paid by another event,
 *                                 or the reservation was set aside: the money is recorded as owed back
 *   409 ORDER_NOT_READY           no order yet while reservations of its sale are on their way to MySQL
 *                                 (Retry-After): providers retry
 *   404 RESERVATION_NOT_FOUND     no order, and nothing of its sale in flight: it never will be one
 */
export function paymentsRouter({ config, redis, prisma, logger }: GatewayDeps, door: Door): Router {
  const router = Router();
  router.post(
    '/api/payments/events',
    jsonBodyOnly,
    // The raw bytes: the signature is over them, not over a re-serialisation of the parsed JSON.
    express.raw({ type: () => true, limit: config.HTTP_MAX_BODY_BYTES }),
    async (req, res) => {
      const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const problem = checkPaymentSignature(req.headers['payment-signature'] as string | undefined, raw, config.PAYMENT_WEBHOOK_SECRET, Math.floor(Date.now() / 1000));
      if (problem) {
        logger.warn({ problem }, 'payment event refused: bad signature');
        throw new AppError('UNAUTHORIZED', `the Payment-Signature is ${problem === 'stale' ? 'too old or too far ahead' : problem === 'mismatch' ? 'not valid' : problem}`);
      }
      let body: unknown;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        throw new AppError('INVALID_REQUEST', 'the body is not valid JSON');
      }
      const parsed = parseOrThrow(paymentEvent, body);
      const saleId = saleIdOfReservation(parsed.reservationId);
      if (saleId === null) throw new AppError('RESERVATION_NOT_FOUND', 'no such reservation');
      const event: PaymentEventInput = { eventId: parsed.id, reservationId: parsed.reservationId, saleId, amountCents: parsed.amountCents };
      const status = await settlePayment(event);
      // A queued sale's door learns that these units can never come back (and, with nothing else that
      // can, tells its crowd sold_out). Replays do it again (idempotent). The payment stands whatever
      // happens here: a failure only leaves the door believing the units may come back, so its crowd
      // waits instead of hearing sold_out; nobody is admitted for it.
      if (status === 'paid') {
        await door.paid(event.saleId, event.reservationId).catch((error: unknown) => {
          logger.warn({ err: error, reservationId: event.reservationId }, "a paid order could not be recorded in its sale's door");
        });
      }
      logger.info({ eventId: event.eventId, reservationId: event.reservationId, amountCents: event.amountCents, status }, 'payment event');
      res.json({ status });
    },
  );

  async function settlePayment(event: PaymentEventInput): Promise<PaymentOutcome> {
    const outcome = await recordPayment(prisma, event);
    if (outcome) return outcome;
    if (await findDeadLetter(redis, config.REDIS_PREFIX, event.saleId, event.reservationId)) return recordOrderlessPayment(prisma, event);
    // Pending or unknown: the event names no buyer, so which of the two is told by the sale's backlog,
    // read after MySQL said "no order". While anything is on its way, this may be one of them; once
    // nothing is, MySQL is asked again (the order may have landed between the two reads), and an
    // order still missing never will be.
    const backlog = await streamBacklog(redis, config.REDIS_PREFIX, event.saleId);
    if (backlog.lag + backlog.pending > 0) {
      throw new AppError('ORDER_NOT_READY', 'the reservation is not an order yet; deliver the event again shortly', {}, { 'Retry-After': NOT_READY_RETRY_AFTER_SECONDS });
    }
    const again = await recordPayment(prisma, event);
    if (again) return again;
    throw new AppError('RESERVATION_NOT_FOUND', 'no such reservation');
  }
  return router;
}
