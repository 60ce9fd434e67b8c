import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newReservationId, signPaymentEvent } from '@flashsale/domain';
import { buyerToken } from '@flashsale/harness';
import { createLiveSale, type TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, type TestGateway } from '../../../../test/support/gateway.ts';
import { bearer, expectProblem } from '../../../../test/support/http.ts';
import { writeOrdersOf } from '../../../../test/support/orders.ts';

let ctx: TestContext;
let gateway: TestGateway;
gatewayPerFile((started, server) => {
  ctx = started;
  gateway = server;
});

const newBuyer = () => `buyer-${randomUUID()}`;

async function reserve(saleId: number, buyer: string): Promise<string> {
  const res = await fetch(`${gateway.url}/api/sales/${saleId}/purchase`, { method: 'POST', headers: bearer(buyerToken(buyer)) });
  expect(res.status).toBe(202);
  return ((await res.json()) as { reservationId: string }).reservationId;
}

/** A sale with one order of `buyer`, written as a worker writes it. */
async function orderOf(buyer = newBuyer(), stock = 5) {
  const sale = await createLiveSale(ctx, { stock, paymentWindowSeconds: 120 });
  const reservationId = await reserve(sale.id, buyer);
  expect(await writeOrdersOf(ctx, sale.id)).toBe(1);
  return { sale, buyer, reservationId };
}

const cancel = (reservationId: string, buyer: string) =>
  fetch(`${gateway.url}/api/reservations/${encodeURIComponent(reservationId)}/cancel`, {
    method: 'POST',
    headers: bearer(buyerToken(buyer)),
  });
const lookup = async (reservationId: string, buyer: string) =>
  (await (
    await fetch(`${gateway.url}/api/reservations/${encodeURIComponent(reservationId)}`, { headers: bearer(buyerToken(buyer)) })
  ).json()) as Record<string, unknown>;
const remainingOf = async (saleId: number) => (await ctx.store.sale(saleId).state())!.remaining;

/** Posts a payment event, signed as the provider signs it unless `signature` says otherwise. */
function deliver(event: Record<string, unknown> | string, signature?: string, at = Math.floor(Date.now() / 1000)) {
  const raw = typeof event === 'string' ? event : JSON.stringify(event);
  return fetch(`${gateway.url}/api/payments/events`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'payment-signature': signature ?? signPaymentEvent(ctx.config.PAYMENT_WEBHOOK_SECRET, at, raw),
    },
    body: raw,
  });
}
const paymentOf = (reservationId: string, id = `evt_${randomUUID()}`) => ({
  id,
  type: 'payment.succeeded',
  reservationId,
  amountCents: 1999,
});

describe('an order awaiting payment', () => {
  it('shows its payBy: reservedAt plus the sale window, on the reserve script clock', async () => {
    const { reservationId, buyer } = await orderOf();
    const order = await ctx.prisma.order.findUniqueOrThrow({ where: { reservationId } });

    expect(await lookup(reservationId, buyer)).toMatchObject({
      status: 'created',
      orderId: reservationId,
      payBy: new Date(order.reservedAt.getTime() + 120_000).toISOString(),
    });
  });

  it('shows a pending reservation with no payBy yet', async () => {
    const sale = await createLiveSale(ctx);
    const buyer = newBuyer();
    const reservationId = await reserve(sale.id, buyer);

    expect(await lookup(reservationId, buyer)).toEqual({
      reservationId,
      saleId: sale.id,
      quantity: 1,
      status: 'pending',
      orderId: null,
      payBy: null,
    });
  });
});

describe('POST /api/reservations/:id/cancel', () => {
  it('cancels, gives the unit back before answering, and repeats the answer without giving it twice', async () => {
    const { sale, reservationId, buyer } = await orderOf();
    expect(await remainingOf(sale.id)).toBe(4);

    const first = await cancel(reservationId, buyer);
    const again = await cancel(reservationId, buyer);

    expect({ status: first.status, body: await first.json() }).toEqual({ status: 200, body: { reservationId, status: 'cancelled' } });
    expect({ status: again.status, body: await again.json() }).toEqual({ status: 200, body: { reservationId, status: 'cancelled' } });
    expect(await remainingOf(sale.id)).toBe(5);
    expect(await lookup(reservationId, buyer)).toMatchObject({ status: 'cancelled' });
    // The buyer may buy again at once.
    await reserve(sale.id, buyer);
  });

  it("answers someone else's cancel with 404 and changes nothing", async () => {
    const { sale, reservationId } = await orderOf();

    await expectProblem(await cancel(reservationId, newBuyer()), 404, 'RESERVATION_NOT_FOUND', 'no such reservation for this buyer');
    await expectProblem(await cancel('garbage', newBuyer()), 404, 'RESERVATION_NOT_FOUND', 'no such reservation for this buyer');
    expect(await remainingOf(sale.id)).toBe(4);
  });

  it('refuses a paid order (409 ORDER_NOT_CANCELLABLE) and a pending one (409 ORDER_NOT_READY, Retry-After)', async () => {
    const { sale, reservationId, buyer } = await orderOf();
    expect((await deliver(paymentOf(reservationId))).status).toBe(200);
    await expectProblem(await cancel(reservationId, buyer), 409, 'ORDER_NOT_CANCELLABLE', 'the order is paid', { orderStatus: 'paid' });

    const pendingBuyer = newBuyer();
    const pending = await reserve(sale.id, pendingBuyer);
    const res = await cancel(pending, pendingBuyer);
    expect(res.headers.get('retry-after')).toBe(String(ctx.config.PAUSED_RETRY_AFTER_SECONDS));
    await expectProblem(res, 409, 'ORDER_NOT_READY', 'the reservation is not an order yet; retry shortly');
    expect(await remainingOf(sale.id)).toBe(3);
  });

  it('needs the buyer token', async () => {
    const { reservationId } = await orderOf();
    const res = await fetch(`${gateway.url}/api/reservations/${reservationId}/cancel`, { method: 'POST' });
    expect(res.status).toBe(401);
  });
});

describe('POST /api/payments/events', () => {
  it('pays an order awaiting payment, once per event id: a replay answers the same', async () => {
    const { reservationId, buyer } = await orderOf();
    const event = paymentOf(reservationId);

    const first = await deliver(event);
    const replay = await deliver(event);

    expect({ status: first.status, body: await first.json() }).toEqual({ status: 200, body: { status: 'paid' } });
    expect({ status: replay.status, body: await replay.json() }).toEqual({ status: 200, body: { status: 'paid' } });
    expect(await lookup(reservationId, buyer)).toMatchObject({ status: 'paid' });
    expect(await ctx.prisma.paymentEvent.count({ where: { reservationId } })).toBe(1);
  });

  it('records a payment for a cancelled order as a refund due, and a replay after the fact answers it again', async () => {
    const { sale, reservationId, buyer } = await orderOf();
    expect((await cancel(reservationId, buyer)).status).toBe(200);
    const event = paymentOf(reservationId);

    expect(await (await deliver(event)).json()).toEqual({ status: 'refund_due' });
    expect(await (await deliver(event)).json()).toEqual({ status: 'refund_due' });
    expect(await lookup(reservationId, buyer)).toMatchObject({ status: 'cancelled' });
    const stats = (await (
      await fetch(`${gateway.url}/api/admin/sales/${sale.id}/stats`, { headers: bearer(ctx.config.ADMIN_TOKEN) })
    ).json()) as Record<string, unknown>;
    expect(stats).toMatchObject({
      ordersInDb: 0,
      unitsInDb: 0,
      ordersByStatus: {
        created: { orders: 0, units: 0 },
        paid: { orders: 0, units: 0 },
        cancelled: { orders: 1, units: 1 },
        expired: { orders: 0, units: 0 },
      },
      unitsReturned: 1,
      unitsAwaitingReturn: 0,
      refundsDue: { count: 1, amountCents: 1999 },
      consistent: true,
    });
  });

  it('answers 409 ORDER_NOT_READY with Retry-After while the reservation is on its way, then pays it', async () => {
    const sale = await createLiveSale(ctx);
    const buyer = newBuyer();
    const reservationId = await reserve(sale.id, buyer);
    const event = paymentOf(reservationId);

    const early = await deliver(event);
    expect(early.headers.get('retry-after')).toBe('2');
    await expectProblem(early, 409, 'ORDER_NOT_READY', 'the reservation is not an order yet; deliver the event again shortly');
    await writeOrdersOf(ctx, sale.id);
    expect(await (await deliver(event)).json()).toEqual({ status: 'paid' });
  });

  it('answers 404 RESERVATION_NOT_FOUND for a reservation that is not and will not be an order', async () => {
    const sale = await createLiveSale(ctx);
    await expectProblem(await deliver(paymentOf(newReservationId(sale.id))), 404, 'RESERVATION_NOT_FOUND', 'no such reservation');
    await expectProblem(await deliver(paymentOf('not-a-reservation')), 404, 'RESERVATION_NOT_FOUND', 'no such reservation');
    expect(await ctx.prisma.paymentEvent.count({ where: { saleId: sale.id } })).toBe(0);
  });

  it('refuses a wrong, missing or malformed signature, a stale or future timestamp, and a body changed after signing (401), changing nothing', async () => {
    const { reservationId, buyer } = await orderOf();
    const event = paymentOf(reservationId);
    const raw = JSON.stringify(event);
    const now = Math.floor(Date.now() / 1000);
    const cases = [
      signPaymentEvent('another-secret-another-secret-0123456789', now, raw),
      '',
      't=abc,v1=00',
      `t=${now}`,
      // Well past the 300 s tolerance: the gateway reads its clock later than `now`, and a second passing
      // meanwhile made `now + 301` exactly 300 s ahead in a CI run (the boundary itself is
      // payment-signature.test.ts's).
      signPaymentEvent(ctx.config.PAYMENT_WEBHOOK_SECRET, now - 330, raw),
      signPaymentEvent(ctx.config.PAYMENT_WEBHOOK_SECRET, now + 330, raw),
      signPaymentEvent(ctx.config.PAYMENT_WEBHOOK_SECRET, now, JSON.stringify({ ...event, amountCents: 1 })),
    ];
    for (const signature of cases) {
      const res = await deliver(raw, signature);
      expect({ signature, status: res.status, code: ((await res.json()) as { code: string }).code }).toEqual({
        signature,
        status: 401,
        code: 'UNAUTHORIZED',
      });
    }
    expect(await lookup(reservationId, buyer)).toMatchObject({ status: 'created' });
    expect(await ctx.prisma.paymentEvent.count({ where: { reservationId } })).toBe(0);
  });

  it('refuses a malformed body with 400 INVALID_REQUEST once the signature holds, and a non-JSON type with 415', async () => {
    const { reservationId, buyer } = await orderOf();
    const bodies = [
      'not json',
      JSON.stringify({ id: 'evt', type: 'payment.failed', reservationId, amountCents: 100 }),
      JSON.stringify({ id: 'evt', type: 'payment.succeeded', reservationId, amountCents: -5 }),
      JSON.stringify({ id: '', type: 'payment.succeeded', reservationId, amountCents: 5 }),
      JSON.stringify({ type: 'payment.succeeded', reservationId, amountCents: 5 }),
      JSON.stringify([1, 2]),
    ];
    for (const body of bodies) {
      const res = await deliver(body);
      expect({ body, status: res.status, code: ((await res.json()) as { code: string }).code }).toEqual({
        body,
        status: 400,
        code: 'INVALID_REQUEST',
      });
    }
    const text = await fetch(`${gateway.url}/api/payments/events`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'x',
    });
    expect(text.status).toBe(415);
    expect(await lookup(reservationId, buyer)).toMatchObject({ status: 'created' });
  });

  it('ties an event id to its contents: the same id for another reservation or amount is 422 PAYMENT_EVENT_REUSED, changing nothing', async () => {
    const [a, b] = [await orderOf(), await orderOf()];
    const event = paymentOf(a.reservationId);
    expect(await (await deliver(event)).json()).toEqual({ status: 'paid' });

    await expectProblem(
      await deliver({ ...event, reservationId: b.reservationId }),
      422,
      'PAYMENT_EVENT_REUSED',
      'this event id was received before with another reservation or amount',
    );
    await expectProblem(
      await deliver({ ...event, amountCents: 1 }),
      422,
      'PAYMENT_EVENT_REUSED',
      'this event id was received before with another reservation or amount',
    );

    expect(await lookup(b.reservationId, b.buyer)).toMatchObject({ status: 'created' });
    expect(await (await deliver(event)).json()).toEqual({ status: 'paid' });
    expect(await ctx.prisma.paymentEvent.count({ where: { eventId: event.id } })).toBe(1);
  });

  it('refuses ids that are not well-formed Unicode (400): two ids differing only in a lone surrogate never become one', async () => {
    const [a, b] = [await orderOf(), await orderOf()];
    const tail = randomUUID();
    const refusal = async (res: Response) => ({ status: res.status, code: ((await res.json()) as { code: string }).code });
    for (const [order, id] of [
      [a, `evt_\ud800${tail}`],
      [b, `evt_\udc00${tail}`],
    ] as const) {
      expect(await refusal(await deliver(paymentOf(order.reservationId, id)))).toEqual({ status: 400, code: 'INVALID_REQUEST' });
      expect(await lookup(order.reservationId, order.buyer)).toMatchObject({ status: 'created' });
    }
    expect(await refusal(await deliver(paymentOf(`${a.reservationId.slice(0, -1)}\ud800`)))).toEqual({
      status: 400,
      code: 'INVALID_REQUEST',
    });
    expect(await ctx.prisma.paymentEvent.count({ where: { reservationId: { in: [a.reservationId, b.reservationId] } } })).toBe(0);
  });

  it('takes events in any order: a second payment of a paid order is owed back, the first stays paid', async () => {
    const { reservationId, buyer } = await orderOf();
    const [a, b] = [paymentOf(reservationId, 'evt_a'), paymentOf(reservationId, 'evt_b')].map((e) => ({
      ...e,
      id: `${e.id}-${randomUUID()}`,
    }));

    expect(await (await deliver(b!)).json()).toEqual({ status: 'paid' });
    expect(await (await deliver(a!)).json()).toEqual({ status: 'refund_due' });
    expect(await (await deliver(b!)).json()).toEqual({ status: 'paid' });
    expect(await lookup(reservationId, buyer)).toMatchObject({ status: 'paid' });
  });
});
