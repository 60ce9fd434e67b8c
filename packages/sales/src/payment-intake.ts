import type { Logger } from '@flashsale/runtime';
import { AppError } from '@flashsale/domain';
import type { PaymentEventInput, PaymentOutcome, PaymentRecord } from '@flashsale/order-store';
import type { Door } from './door.ts';
import type { SalesDeps } from './sales-deps.ts';

/** Seconds a provider is asked to wait before it delivers an event for a reservation still pending. */
const NOT_READY_RETRY_AFTER_SECONDS = '2';

/**
 * A payment provider's event, taken in: what `POST /api/payments/events` does once the signature and
 * the body hold.
 *
 * 1. **Its arrival is recorded in Redis first**, at Redis's TIME (receive-payment-1.lua), in the sale's
 *    payments hash. That instant, not the moment MySQL gets to it, decides against payBy: while the
 *    record is there the expiry pays the order from it rather than expire it (expireDueOrders), so a
 *    payment that arrived in time stands however long MySQL was locked or away. The event id is tied to
 *    its contents there already: another reservation or amount under a recorded id is refused.
 * 2. **Then MySQL**: the order is paid, or a refund is recorded, and the event stored with its
 *    outcome (recordPayment). MySQL refusing or timing out answers the provider 503 (it retries): the
 *    record stays and keeps the payment's place. The retry answers what the event came to, whoever
 *    applied it (this request's retry or an expiry pass): one outcome per event id.
 * 3. **The record is dropped** once MySQL has the final word (paid, refund due, reused, unknown). A record
 *    that outlives that (the process died in between) is found settled by the next expiry of the sale.
 *
 * Redis away: the arrival cannot be recorded, MySQL is asked all the same (it alone decides then, as it
 * did before this record existed); the payment is answered as MySQL allows. Only a payment the provider
 * was answered 200 for is one the system owes: those are in MySQL's payment_events, never only in Redis.
 */
export async function receivePayment(deps: SalesDeps, event: PaymentEventInput): Promise<PaymentOutcome> {
  const inRedis = deps.redis.sale(event.saleId);
  const arrival = await inRedis.recordPaymentArrival(event).catch((error: unknown) => {
    deps.logger.warn({ err: error, eventId: event.eventId }, 'payment arrival not recorded in Redis; MySQL alone decides');
    return null;
  });
  if (arrival?.kind === 'reused') throw reusedEventId(deps.logger, event, arrival);
  const settle = async (record: PaymentRecord): Promise<PaymentOutcome> => {
    await inRedis.forgetPaymentArrivals([event.eventId]).catch(() => undefined);
    if (typeof record === 'object') throw reusedEventId(deps.logger, event, record.reused);
    return record;
  };
  const recorded = await deps.mysql.recordPayment(event);
  if (recorded) return settle(recorded);
  if (await inRedis.deadLetterOf(event.reservationId)) return settle(await deps.mysql.recordOrderlessPayment(event));
  // A named loss never becomes an order: the money is owed back, at once.
  if (await deps.mysql.findLostReservation(event.reservationId)) return settle(await deps.mysql.recordOrderlessPayment(event));
  // Pending or unknown: the event names no buyer, so which of the two is told by the sale's backlog,
  // read after MySQL said "no order". While anything is on its way, this may be one of them (the
  // arrival record stays, so an order written later and falling due is paid by it); once nothing is,
  // MySQL is asked again (the order may have landed between the two reads), and an order still missing
  // never will be.
  const backlog = await inRedis.backlog();
  if (backlog.lag + backlog.pending > 0) {
    throw new AppError('ORDER_NOT_READY', { because: 'payment_early' }, {}, { 'Retry-After': NOT_READY_RETRY_AFTER_SECONDS });
  }
  const again = await deps.mysql.recordPayment(event);
  if (again) return settle(again);
  // No store knows it. If the sale lost reservations it cannot name, this may be one of them: its ids
  // are known only to their buyers (and so to the provider), so the payment is kept, `unmatched`, for
  // the operator (GET /api/admin/sales/:id/losses) rather than answered 404 and dropped.
  if (await hasUnnamedLosses(deps.mysql, event.saleId)) return settle(await deps.mysql.recordOrderlessPayment(event, 'unmatched'));
  await inRedis.forgetPaymentArrivals([event.eventId]).catch(() => undefined);
  throw new AppError('RESERVATION_NOT_FOUND', { because: 'unknown' });
}

/**
 * A payment event taken in (receivePayment), then, once its order is paid, told to the sale's door: a
 * queued sale's door learns that these units can never come back (and, with nothing else that can, tells
 * its crowd sold_out). Replays do it again (idempotent). The payment stands whatever happens to the door:
 * a failure only leaves the door believing the units may come back, so its crowd waits instead of hearing
 * sold_out; nobody is admitted for it.
 */
export async function payReservation(deps: SalesDeps & { door: Pick<Door, 'paid'> }, event: PaymentEventInput): Promise<PaymentOutcome> {
  const status = await receivePayment(deps, event);
  if (status === 'paid') {
    await deps.door.paid(event.saleId, event.reservationId).catch((error: unknown) => {
      deps.logger.warn({ err: error, reservationId: event.reservationId }, "a paid order could not be recorded in its sale's door");
    });
  }
  return status;
}

async function hasUnnamedLosses(mysql: SalesDeps['mysql'], saleId: number): Promise<boolean> {
  const sale = await mysql.sale(saleId).find();
  if (!sale || sale.lostReservations === 0) return false;
  return sale.lostReservations > (await mysql.sale(saleId).countLostReservations()).reservations;
}

function reusedEventId(logger: Logger, event: PaymentEventInput, stored: { reservationId: string; amountCents: number }): AppError {
  logger.warn(
    { eventId: event.eventId, reservationId: event.reservationId, amountCents: event.amountCents, stored },
    'payment event refused: its id was received before for another payment',
  );
  return new AppError('PAYMENT_EVENT_REUSED');
}
