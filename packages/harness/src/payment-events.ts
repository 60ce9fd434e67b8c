import { signPaymentEvent } from '@flashsale/domain';

/** A payment provider's `payment.succeeded` event. */
export interface PaymentSucceeded {
  id: string;
  reservationId: string;
  amountCents: number;
}

/**
 * The request a payment provider sends for `event`: its JSON body and the Payment-Signature over exactly
 * those bytes (the HTTP client serialises the body with JSON.stringify, as here), signed `at` (unix s).
 */
export function paymentEventRequest(
  secret: string,
  event: PaymentSucceeded,
  at = Math.floor(Date.now() / 1000),
): { headers: Record<string, string>; body: Record<string, unknown> } {
  const body = { id: event.id, type: 'payment.succeeded', reservationId: event.reservationId, amountCents: event.amountCents };
  return { headers: { 'payment-signature': signPaymentEvent(secret, at, JSON.stringify(body)) }, body };
}
