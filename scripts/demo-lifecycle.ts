import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  createHttpClient,
  mapConcurrently,
  paymentEventRequest,
  signBuyerTokens,
  type HttpClient,
  type HttpResult,
} from '@flashsale/harness';
import type { SaleStore } from '@flashsale/redis-store';

/**
 * The demo's second act: what happens to the orders after the flash crowd. Most winners pay, some
 * cancel, the rest let the payment window run out; the cancelled and expired units go back on sale and a
 * second crowd buys them; a few payments arrive after their order expired and are recorded as refunds
 * due. The sale ends with exactly its stock paid for.
 */
export interface LifecycleInput {
  gatewayUrl: string;
  /** The demo's Redis, bound to its prefix. */
  store: SaleStore;
  saleId: number;
  stock: number;
  adminToken: string;
  webhookSecret: string;
  /** The orders of the first crowd: reservation id -> buyer. */
  orders: Map<string, { userId: string; quantity: number }>;
  /** The sale's payment window: the expiry is waited for at most this and a minute. */
  paymentWindowSeconds: number;
  step(text: string): void;
}

/** Pays `PAY_SHARE` of the orders, cancels `CANCEL_SHARE`, lets the rest expire. */
const PAY_SHARE = 0.6;
const CANCEL_SHARE = 0.1;
/** Payments that arrive after their order expired: recorded as refunds due, never lost. */
const LATE_PAYMENTS = 5;

export async function runLifecycle(input: LifecycleInput): Promise<{ failed: boolean }> {
  const http = createHttpClient(input.gatewayUrl, 16);
  const admin = { authorization: `Bearer ${input.adminToken}` };
  const pay = paymentSender(http, input.webhookSecret);
  const stats = async () => (await http.send('GET', `/api/admin/sales/${input.saleId}/stats`, { headers: admin })).body as unknown as Stats;

  const orders = [...input.orders];
  const paying = orders.slice(0, Math.floor(orders.length * PAY_SHARE));
  const cancelling = orders.slice(paying.length, paying.length + Math.floor(orders.length * CANCEL_SHARE));
  const expiring = orders.slice(paying.length + cancelling.length);

  input.step(
    `payments: ${paying.length} winners pay (signed provider events), ${cancelling.length} cancel, ${expiring.length} let the window run out`,
  );
  const cancelTokens = signBuyerTokens(cancelling.map(([, { userId }]) => userId));
  const paid = await mapConcurrently(paying, 16, ([reservationId]) => pay(reservationId));
  const cancelled = await mapConcurrently(
    cancelling.map(([reservationId], i) => ({ reservationId, token: cancelTokens[i]! })),
    16,
    ({ reservationId, token }) =>
      http.send('POST', `/api/reservations/${reservationId}/cancel`, { headers: { authorization: `Bearer ${token}` } }),
  );
  console.log(`payment events sent: ${paying.length}, answered ${tally(paid)}`);
  console.log(`cancels sent: ${cancelling.length}, answered ${tally(cancelled)}`);
  console.log(`units remaining on sale now: ${(await stats()).remaining} (the cancelled orders' units are back)`);

  input.step('expiry: waiting for the unpaid orders to pass their payBy (the workers expire them and give their units back)');
  const started = performance.now();
  let now = await stats();
  while (now.ordersByStatus.created.orders > 0 || now.unitsAwaitingReturn > 0) {
    if (performance.now() - started > (input.paymentWindowSeconds + 60) * 1000)
      throw new Error(`orders still awaiting payment past their window and a minute: ${JSON.stringify(now.ordersByStatus)}`);
    await sleep(500);
    now = await stats();
  }
  console.log(
    `orders expired: ${now.ordersByStatus.expired.orders}, after ${((performance.now() - started) / 1000).toFixed(1)} s; units remaining on sale: ${now.remaining}`,
  );
  const late = await mapConcurrently(expiring.slice(0, LATE_PAYMENTS), 4, ([reservationId]) => pay(reservationId));
  console.log(`payment events for ${LATE_PAYMENTS} expired orders, answered ${tally(late)}`);

  const returned = now.remaining;
  input.step(`re-sale: ${(returned ?? 0) + 100} new buyers for the ${returned} units that came back; every winner pays`);
  const resaleTokens = signBuyerTokens(Array.from({ length: (returned ?? 0) + 100 }, (_, i) => `resale-buyer-${i}`));
  const crowd = await mapConcurrently(resaleTokens, 32, (token) =>
    http.send('POST', `/api/sales/${input.saleId}/purchase`, { headers: { authorization: `Bearer ${token}` } }),
  );
  console.log(`re-sale purchases sent: ${crowd.length}, answered ${tally(crowd)}`);
  await input.store.sale(input.saleId).waitForDrain(60_000);
  const resold = crowd.filter((r) => r.status === 202).map((r) => r.body.reservationId as string);
  const resalePaid = await mapConcurrently(resold, 16, (reservationId) => pay(reservationId));
  console.log(`re-sale payment events sent: ${resalePaid.length}, answered ${tally(resalePaid)}`);

  const final = await stats();
  const paidUnits = final.ordersByStatus.paid.units;
  // A payment that reached the gateway after its order's payBy (on a busy machine, some of the first
  // 400 do) is refused as refund_due, and its units go back on sale: the system working, not failing.
  const refusedAsLate = [...paid, ...late, ...resalePaid].filter((r) => r.body.status === 'refund_due').length;
  input.step('the final ledger, by status');
  console.table(Object.fromEntries(Object.entries(final.ordersByStatus).map(([status, { orders, units }]) => [status, { orders, units }])));
  console.table({
    'units paid for': { value: paidUnits },
    'units returned (cancelled + expired)': { value: final.unitsReturned },
    'units awaiting return': { value: final.unitsAwaitingReturn },
    'refunds due': { value: `${final.refundsDue.count} (${(final.refundsDue.amountCents / 100).toFixed(2)})` },
    'remaining in Redis': { value: final.remaining },
    'paid + remaining (= stock?)': { value: `${paidUnits + (final.remaining ?? 0)} / ${input.stock}` },
    consistent: { value: final.consistent },
  });
  http.close();
  // The invariants, whatever the machine's speed: live units and remaining make the stock, every unit
  // owed back was given back, every payment answered refund_due is recorded as a refund due.
  const failed =
    final.unitsInDb !== paidUnits ||
    paidUnits + (final.remaining ?? 0) !== input.stock ||
    final.unitsAwaitingReturn !== 0 ||
    final.refundsDue.count !== refusedAsLate ||
    !final.consistent;
  if (refusedAsLate > LATE_PAYMENTS)
    console.log(
      `${refusedAsLate - LATE_PAYMENTS} payments reached the gateway after their order's payBy on this machine: answered refund_due, their units back on sale`,
    );
  console.log(
    failed
      ? '\nLIFECYCLE INVARIANT BROKEN: see the ledger above'
      : `\nThe sale balances: ${paidUnits} units paid for + ${final.remaining} remaining = ${input.stock}; ${final.unitsReturned} units were sold again after a cancel or an expiry; ${refusedAsLate} payments owed back, all recorded.`,
  );
  return { failed };
}

interface Stats {
  remaining: number | null;
  unitsInDb: number;
  consistent: boolean;
  ordersByStatus: Record<'created' | 'paid' | 'cancelled' | 'expired', { orders: number; units: number }>;
  unitsReturned: number;
  unitsAwaitingReturn: number;
  refundsDue: { count: number; amountCents: number };
}

/** Pays a reservation as a provider sends the event: the same one again, after Retry-After, while the answer is 503. */
/**
 * As a provider sends an event: the same one again, after Retry-After, while the answer is 503 or 429
 * (the gateway's per-address budget for payment events, PAYMENT_EVENTS_PER_ADDRESS_PER_SECOND).
 */
export function paymentSender(http: HttpClient, webhookSecret: string): (reservationId: string) => Promise<HttpResult> {
  return async (reservationId) => {
    const event = paymentEventRequest(webhookSecret, { id: `evt_${randomUUID()}`, reservationId, amountCents: 4999 });
    for (let attempt = 1; ; attempt++) {
      const res = await http.send('POST', '/api/payments/events', event);
      if ((res.status !== 503 && res.status !== 429) || attempt === 10) return res;
      await sleep(Number(res.headers['retry-after'] ?? 1) * 1000);
    }
  };
}

/**
 * The answers counted by what they said: `400 paid (HTTP 200)`, `120 accepted (HTTP 202), 100 refused
 * SOLD_OUT (HTTP 410)`: the count first, then the outcome, the HTTP status last.
 */
export function tally(results: HttpResult[]): string {
  const counts = new Map<string, number>();
  for (const r of results) {
    const word = (value: unknown) => (typeof value === 'string' ? value : '');
    const outcome = r.status === 202 ? 'accepted' : r.status < 300 ? word(r.body.status) || 'ok' : `refused ${word(r.body.code)}`.trim();
    const label = `${outcome} (HTTP ${r.status})`;
    counts.set(label, (counts.get(label) ?? 0) + 1);
  }
  return [...counts].map(([label, n]) => `${n} ${label}`).join(', ') || 'nothing';
}
