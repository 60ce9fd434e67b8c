import express, { Router } from 'express';
import { z } from 'zod';
import { AppError, checkPaymentSignature, saleIdOfReservation } from '@flashsale/domain';
import { summarisedLog } from '@flashsale/runtime';
import { clientAddress } from '../client-address.ts';
import type { Door, PaymentEventInput } from '@flashsale/sales';
import type { GatewayDeps } from '../deps.ts';
import { parseOrThrow, jsonBodyOnly } from '../validation.ts';

/**
 * An id is well-formed Unicode: a lone surrogate has no UTF-8 form, and MySQL would store it as U+FFFD,
 * making two different ids one (the second payment answered as the first and never recorded).
 */
const wellFormedId = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .refine((id) => id.isWellFormed(), 'must be well-formed Unicode (no lone surrogates)');

const paymentEvent = z.object({
  id: wellFormedId(255),
  type: z.literal('payment.succeeded'),
  reservationId: wellFormedId(64),
  amountCents: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
});

/**
 * POST /api/payments/events: the payment provider tells us a reservation was paid. Authenticated by the
 * event's signature (PAYMENT_WEBHOOK_SECRET, see payment-signature.ts), checked on the raw bytes before
 * anything is parsed; then the use case (packages/sales/src/payment-intake.ts) records its arrival,
 * applies it and tells the sale's door. Each event id is processed once (payment_events) and tied to its contents: a replay,
 * concurrent or a day later, answers what the first delivery answered and changes nothing; the same id
 * with another reservation or amount is refused.
 *
 *   200 { status: "paid" }        the order was awaiting payment and is paid now (or by this event before)
 *   200 { status: "refund_due" }  the order had expired or been cancelled, or was paid by another event,
 *                                 or the reservation was set aside: the money is recorded as owed back
 *   409 ORDER_NOT_READY           no order yet while reservations of its sale are on their way to MySQL
 *                                 (Retry-After): providers retry
 *   404 RESERVATION_NOT_FOUND     no order, and nothing of its sale in flight: it never will be one
 *   422 PAYMENT_EVENT_REUSED      the event id came before with another reservation or amount
 *   503 SERVICE_UNAVAILABLE       MySQL could not take it now; its arrival is recorded, a retry answers
 *                                 what it came to (paid, if it arrived before payBy)
 */
export function paymentsRouter({ config, sales, logger }: GatewayDeps, door: Door): Router {
  const router = Router();
  // Refusals summed up (the first at once, then counts every 10 s): an unsigned flood is no log flood.
  const refusals = summarisedLog<string>(logger, 'payment events refused: bad signature', 'refused');
  router.post(
    '/api/payments/events',
    jsonBodyOnly,
    // The raw bytes: the signature is over them, not over a re-serialisation of the parsed JSON.
    express.raw({ type: () => true, limit: config.HTTP_MAX_BODY_BYTES }),
    async (req, res) => {
      const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const problem = checkPaymentSignature(
        req.headers['payment-signature'] as string | undefined,
        raw,
        config.PAYMENT_WEBHOOK_SECRET,
        Math.floor(Date.now() / 1000),
      );
      if (problem) {
        // The address as TRUST_PROXY gives it (the summary's lastAddress): whom to block, as operations.md says.
        refusals(problem, { lastAddress: clientAddress(req, config.TRUST_PROXY) });
        throw new AppError('UNAUTHORIZED', { because: `signature_${problem}` });
      }
      let body: unknown;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        throw new AppError('INVALID_REQUEST', { because: 'not_json' });
      }
      const parsed = parseOrThrow(paymentEvent, body);
      const saleId = saleIdOfReservation(parsed.reservationId);
      if (saleId === null) throw new AppError('RESERVATION_NOT_FOUND', { because: 'unknown' });
      const event: PaymentEventInput = { eventId: parsed.id, reservationId: parsed.reservationId, saleId, amountCents: parsed.amountCents };
      const status = await sales.payReservation(event, door);
      logger.info({ eventId: event.eventId, reservationId: event.reservationId, amountCents: event.amountCents, status }, 'payment event');
      res.json({ status });
    },
  );
  return router;
}
