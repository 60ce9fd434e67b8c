import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import {
  buyerToken,
  createHttpClient,
  ledgerOf,
  mergeBursts,
  paymentEventRequest,
  purchaseBurst,
  type HttpResult,
} from '@flashsale/harness';
import { startSystem, type System } from '../support/system.ts';
import { until } from '../support/until.ts';

let system: System | undefined;
afterEach(async () => {
  await system?.stop();
  system = undefined;
});

const buyers = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label}-${i}`);

/** The calls a buyer, the payment provider and an operator make, against one gateway. */
function clientsOf(system: System) {
  const http = createHttpClient(system.gateways[0]!.url, 16);
  const { config } = system.ctx;
  return {
    http,
    /** As a provider sends an event: again, the same event, after Retry-After, while the answer is 503. */
    pay: async (reservationId: string, id = `evt_${randomUUID()}`): Promise<HttpResult> => {
      for (let attempt = 1; ; attempt++) {
        const res = await http.send(
          'POST',
          '/api/payments/events',
          paymentEventRequest(config.PAYMENT_WEBHOOK_SECRET, { id, reservationId, amountCents: 2500 }),
        );
        if (res.status !== 503 || attempt === 10) return res;
        await sleep(Number(res.headers['retry-after'] ?? 1) * 1000);
      }
    },
    cancel: (reservationId: string, buyer: string) =>
      http.send('POST', `/api/reservations/${reservationId}/cancel`, { headers: { authorization: `Bearer ${buyerToken(buyer)}` } }),
    lookup: async (reservationId: string, buyer: string) =>
      (await http.send('GET', `/api/reservations/${reservationId}`, { headers: { authorization: `Bearer ${buyerToken(buyer)}` } }))
        .body as { status: string; payBy: string },
    stats: async (saleId: number) =>
      (await http.send('GET', `/api/admin/sales/${saleId}/stats`, { headers: { authorization: `Bearer ${config.ADMIN_TOKEN}` } }))
        .body as unknown as Stats,
  };
}

interface Stats {
  remaining: number;
  unitsInDb: number;
  consistent: boolean;
  ordersByStatus: Record<'created' | 'paid' | 'cancelled' | 'expired', { orders: number; units: number }>;
  unitsReturned: number;
  unitsAwaitingReturn: number;
  refundsDue: { count: number };
  audit: { drift: number } | null;
}

describe('orders that get paid, cancelled or expire, with real processes', () => {
  it('some pay, some cancel, the rest expire (payments racing the expiry at payBy); the returned units sell again, and the sale sells exactly its stock', async () => {
    system = await startSystem({ workers: 2, env: { EXPIRY_SWEEP_MS: '200' } });
    const { ctx } = system;
    const api = clientsOf(system);
    const saleId = await system.createSale({ stock: 40, paymentWindowSeconds: 10 });

    // 40 buyers take the 40 units.
    const first = await purchaseBurst(system.gateways[0]!.url, saleId, buyers('a', 40));
    expect(first.accepted.size).toBe(40);
    await ctx.store.sale(saleId).waitForDrain(60_000);
    const a = [...first.accepted].map(([reservationId, { userId }]) => ({ reservationId, userId }));

    // Ten pay at once, ten cancel: their units are back on sale before the cancel answers.
    for (const { reservationId } of a.slice(0, 10)) expect((await api.pay(reservationId)).body).toEqual({ status: 'paid' });
    for (const { reservationId, userId } of a.slice(10, 20))
      expect((await api.cancel(reservationId, userId)).body).toEqual({ reservationId, status: 'cancelled' });
    expect((await api.stats(saleId)).remaining).toBe(10);

    // The cancelled units sell again, to new buyers and to two who cancelled; all of them pay.
    const second = await purchaseBurst(system.gateways[0]!.url, saleId, [a[10]!.userId, a[11]!.userId, ...buyers('b', 13)]);
    expect({ accepted: second.accepted.size, soldOut: second.refused.SOLD_OUT }).toEqual({ accepted: 10, soldOut: 5 });
    await ctx.store.sale(saleId).waitForDrain(60_000);
    for (const reservationId of second.accepted.keys()) expect((await api.pay(reservationId)).body).toEqual({ status: 'paid' });

    // The last twenty do not pay in time; ten payments arrive right at their payBy, racing the expiry.
    const racing = a.slice(20, 30);
    const outcomes = await Promise.all(
      racing.map(async ({ reservationId, userId }) => {
        const { payBy } = await api.lookup(reservationId, userId);
        await sleep(Math.max(0, new Date(payBy).getTime() - Date.now() + (Math.random() * 600 - 300)));
        return { reservationId, userId, outcome: (await api.pay(reservationId)).body as { status: string } };
      }),
    );
    await until(
      () => api.stats(saleId),
      (s) => s.ordersByStatus.created.orders === 0 && s.unitsAwaitingReturn === 0,
      60_000,
    );

    // Exactly one of payment and expiry won each race: paid, or expired with the payment owed back.
    let expired = 10;
    for (const { reservationId, userId, outcome } of outcomes) {
      const { status } = await api.lookup(reservationId, userId);
      expect({ status, outcome }).toEqual(
        status === 'paid' ? { status: 'paid', outcome: { status: 'paid' } } : { status: 'expired', outcome: { status: 'refund_due' } },
      );
      if (status === 'expired') expired++;
    }
    const afterExpiry = await api.stats(saleId);
    expect({ remaining: afterExpiry.remaining, refundsDue: afterExpiry.refundsDue.count }).toEqual({
      remaining: expired,
      refundsDue: expired - 10,
    });

    // The expired units sell again, and are paid: the sale has sold exactly its stock.
    const third = await purchaseBurst(system.gateways[0]!.url, saleId, buyers('c', expired + 5));
    expect(third.accepted.size).toBe(expired);
    await ctx.store.sale(saleId).waitForDrain(60_000);
    for (const reservationId of third.accepted.keys()) expect((await api.pay(reservationId)).body).toEqual({ status: 'paid' });

    const final = await until(
      () => api.stats(saleId),
      (s) => s.audit !== null && s.ordersByStatus.paid.orders === 40,
      60_000,
    );
    expect(final).toMatchObject({
      remaining: 0,
      unitsInDb: 40,
      consistent: true,
      ordersByStatus: {
        created: { orders: 0, units: 0 },
        paid: { orders: 40, units: 40 },
        cancelled: { orders: 10, units: 10 },
        expired: { orders: expired, units: expired },
      },
      unitsReturned: 10 + expired,
      unitsAwaitingReturn: 0,
    });
    const ledger = await ledgerOf(ctx.store, ctx.prisma, saleId, mergeBursts(first, second, third).accepted);
    expect({
      lost: ledger.lost,
      duplicated: ledger.duplicated,
      unexpected: ledger.unexpected,
      unitsInDb: ledger.unitsInDb,
      remaining: ledger.remaining,
    }).toEqual({
      lost: [],
      duplicated: [],
      unexpected: [],
      unitsInDb: 40,
      remaining: 0,
    });
    // The reconciler's audit of the sale across both stores, once everything settled.
    await until(
      () => api.stats(saleId),
      (s) => s.audit?.drift === 0,
      60_000,
    );
    console.log(
      `lifecycle: 10 paid at once, 10 cancelled, ${20 - expired} paid at payBy against ${expired - 10} expired in the race, ${expired} expired in all and re-sold`,
    );
    api.http.close();
  });
});
