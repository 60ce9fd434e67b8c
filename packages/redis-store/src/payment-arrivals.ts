import type { SaleRef, StoreRef } from './store-ref.ts';
import { saleKeys } from './keys.ts';

/** A payment event as the provider sent it. */
export interface PaymentContents {
  eventId: string;
  reservationId: string;
  saleId: number;
  amountCents: number;
}

/** What recording an arrival came to. */
export type PaymentArrival =
  /** Recorded (now, or by an earlier delivery of the same event): the first arrival, on Redis's clock. */
  | { kind: 'arrived'; receivedAtMs: number }
  /** The event id was recorded with another reservation or amount: nothing written. */
  | { kind: 'reused'; reservationId: string; amountCents: number };

/**
 * Records, at Redis's TIME, that a payment event reached the system (receive-payment-1.lua), before
 * MySQL is asked: while the record is there, the expiry will not expire the order under a payment that
 * arrived before its payBy, however long MySQL takes (heldPayments).
 */
export async function recordPaymentArrival({ redis, prefix }: StoreRef, event: PaymentContents): Promise<PaymentArrival> {
  const [code, value] = await redis.receivePayment(
    saleKeys(prefix, event.saleId).payments,
    event.eventId,
    event.reservationId,
    event.amountCents,
  );
  if (Number(code) === 0) {
    const held = parseRecord(String(value));
    return { kind: 'reused', reservationId: held.reservationId, amountCents: held.amountCents };
  }
  return { kind: 'arrived', receivedAtMs: Number(value) };
}

/** A payment recorded on arrival and not in MySQL yet. */
export interface HeldPayment {
  eventId: string;
  reservationId: string;
  amountCents: number;
  receivedAtMs: number;
}

/** Redis's clock now, and the payments of a sale recorded on arrival and not yet in MySQL (held-payments-1.lua). */
export async function heldPayments({ redis, keys }: SaleRef): Promise<{ nowMs: number; payments: HeldPayment[] }> {
  const [now, ...fields] = await redis.heldPayments(keys.payments);
  const payments: HeldPayment[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) payments.push({ eventId: String(fields[i]), ...parseRecord(String(fields[i + 1])) });
  return { nowMs: Number(now), payments };
}

/** Drops the arrival records of payments MySQL now holds (or refused for good): a record is only needed until then. */
export async function forgetPaymentArrivals({ redis, keys }: SaleRef, eventIds: string[]): Promise<void> {
  if (eventIds.length > 0) await redis.hdel(keys.payments, ...eventIds);
}

function parseRecord(record: string): Omit<HeldPayment, 'eventId'> {
  // The reservation id holds no '|' (reservation-id.ts), the two numbers none either.
  const [reservationId, amountCents, receivedAtMs] = record.split('|');
  return { reservationId: reservationId!, amountCents: Number(amountCents), receivedAtMs: Number(receivedAtMs) };
}
