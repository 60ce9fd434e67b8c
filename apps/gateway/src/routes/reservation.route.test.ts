import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newReservationId } from '@flashsale/domain';
import { saleKeys } from '@flashsale/redis-store';
import { ORDER_WRITERS_GROUP } from '@flashsale/redis-store/testing';
import { createLiveSale, createTestContext, type TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, startGateway, type TestGateway } from '../../../../test/support/gateway.ts';
import { buyerToken } from '@flashsale/harness';
import { bearer, expectProblem } from '../../../../test/support/http.ts';
import { manualClock } from '../../../../test/support/clock.ts';

let ctx: TestContext;
let gateway: TestGateway;
gatewayPerFile((started, server) => {
  ctx = started;
  gateway = server;
});

const newBuyer = () => `buyer-${randomUUID()}`;

async function reserve(saleId: number, buyer: string, quantity = 1): Promise<string> {
  const res = await fetch(`${gateway.url}/api/sales/${saleId}/purchase`, {
    method: 'POST',
    headers: { ...bearer(buyerToken(buyer)), 'content-type': 'application/json' },
    body: JSON.stringify({ quantity }),
  });
  expect(res.status).toBe(202);
  return ((await res.json()) as { reservationId: string }).reservationId;
}

async function lookup(reservationId: string, buyer: string, url = gateway.url): Promise<Response> {
  return fetch(`${url}/api/reservations/${encodeURIComponent(reservationId)}`, { headers: bearer(buyerToken(buyer)) });
}

describe('GET /api/reservations/:reservationId', () => {
  it('shows its owner a pending reservation until the order is in MySQL', async () => {
    const sale = await createLiveSale(ctx, { perUserLimit: 2 });
    const buyer = newBuyer();
    const reservationId = await reserve(sale.id, buyer, 2);

    const res = await lookup(reservationId, buyer);

    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ reservationId, saleId: sale.id, quantity: 2, status: 'pending', orderId: null, payBy: null });
  });

  it('shows its owner a reservation the workers set aside as rejected, with the reason, and hides it from others', async () => {
    const sale = await createLiveSale(ctx);
    const buyer = newBuyer();
    const reservationId = await reserve(sale.id, buyer);
    // What a worker does with a reservation that cannot become an order (dead-letter-4.lua).
    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    const [[, [[entryId, fields]]]] = (await ctx.redis.xreadgroup(
      'GROUP',
      ORDER_WRITERS_GROUP,
      'test',
      'COUNT',
      1,
      'STREAMS',
      keys.stream,
      '>',
    )) as unknown as [[string, [[string, string[]]]]];
    await ctx.store.sale(sale.id).deadLetter({ id: entryId, fields }, 'OVER_STOCK', 1);

    const res = await lookup(reservationId, buyer);

    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      reservationId,
      saleId: sale.id,
      quantity: 1,
      status: 'rejected',
      orderId: null,
      payBy: null,
      reason: 'OVER_STOCK',
    });
    await expectProblem(await lookup(reservationId, newBuyer()), 404, 'RESERVATION_NOT_FOUND', 'no such reservation for this buyer');
  });

  it("answers another buyer's lookup of a reservation with 404 RESERVATION_NOT_FOUND", async () => {
    const sale = await createLiveSale(ctx);
    const reservationId = await reserve(sale.id, newBuyer());

    await expectProblem(await lookup(reservationId, newBuyer()), 404, 'RESERVATION_NOT_FOUND', 'no such reservation for this buyer');
  });

  it.each(['garbage', '0-0b7c1d3e-9f00-4a6b-8c1d-2e3f4a5b6c7d', '1700000000000-0'])(
    'answers the malformed id %j with 404 RESERVATION_NOT_FOUND',
    async (reservationId) => {
      await expectProblem(await lookup(reservationId, newBuyer()), 404, 'RESERVATION_NOT_FOUND', 'no such reservation for this buyer');
    },
  );

  it('answers a well-formed id nobody was given with 404 RESERVATION_NOT_FOUND', async () => {
    const sale = await createLiveSale(ctx);
    const buyer = newBuyer();
    await reserve(sale.id, buyer);

    await expectProblem(await lookup(newReservationId(sale.id), buyer), 404, 'RESERVATION_NOT_FOUND', 'no such reservation for this buyer');
  });

  it("shows the order's status once the order is in MySQL, with the reservation id as the order's id", async () => {
    const sale = await createLiveSale(ctx, { perUserLimit: 3 });
    const buyer = newBuyer();
    const reservationId = await reserve(sale.id, buyer, 3);
    // A stand-in for the worker: the order it would write for this reservation.
    const order = await ctx.prisma.order.create({
      data: { reservationId, saleId: sale.id, userId: buyer, quantity: 3, reservedAt: new Date(), payBy: new Date(Date.now() + 900_000) },
    });

    const res = await lookup(reservationId, buyer);

    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      reservationId,
      saleId: sale.id,
      quantity: 3,
      status: 'created',
      orderId: reservationId,
      payBy: order.payBy.toISOString(),
    });
    expect(order.id).toBeGreaterThan(0n);
  });

  it('never shows the MySQL row id, whose sequence would tell the order volume between two lookups', async () => {
    const sale = await createLiveSale(ctx);
    const orders = [];
    for (const buyer of [newBuyer(), newBuyer()]) {
      const reservationId = await reserve(sale.id, buyer);
      const order = await ctx.prisma.order.create({
        data: { reservationId, saleId: sale.id, userId: buyer, quantity: 1, reservedAt: new Date(), payBy: new Date(Date.now() + 900_000) },
      });
      orders.push({
        reservationId,
        rowId: order.id.toString(),
        body: (await (await lookup(reservationId, buyer)).json()) as Record<string, unknown>,
      });
    }

    for (const { reservationId, rowId, body } of orders) {
      expect(body.orderId).toBe(reservationId);
      expect(Object.values(body)).not.toContain(rowId);
    }
  });

  it('follows the order status after it changes', async () => {
    const sale = await createLiveSale(ctx);
    const buyer = newBuyer();
    const reservationId = await reserve(sale.id, buyer);
    const order = await ctx.prisma.order.create({
      data: { reservationId, saleId: sale.id, userId: buyer, quantity: 1, reservedAt: new Date(), payBy: new Date(Date.now() + 900_000) },
    });
    await ctx.prisma.order.update({ where: { id: order.id }, data: { status: 'paid' } });

    expect(await (await lookup(reservationId, buyer)).json()).toEqual({
      reservationId,
      saleId: sale.id,
      quantity: 1,
      status: 'paid',
      orderId: reservationId,
      payBy: order.payBy.toISOString(),
    });
  });

  it("keeps another buyer's order hidden with 404 RESERVATION_NOT_FOUND", async () => {
    const sale = await createLiveSale(ctx);
    const buyer = newBuyer();
    const reservationId = await reserve(sale.id, buyer);
    await ctx.prisma.order.create({
      data: { reservationId, saleId: sale.id, userId: buyer, quantity: 1, reservedAt: new Date(), payBy: new Date(Date.now() + 900_000) },
    });

    await expectProblem(await lookup(reservationId, newBuyer()), 404, 'RESERVATION_NOT_FOUND', 'no such reservation for this buyer');
  });

  it('refuses a lookup without a buyer token with 401 UNAUTHORIZED', async () => {
    const sale = await createLiveSale(ctx);
    const reservationId = await reserve(sale.id, newBuyer());

    await expectProblem(
      await fetch(`${gateway.url}/api/reservations/${reservationId}`),
      401,
      'UNAUTHORIZED',
      'an Authorization: Bearer token is required',
    );
  });
});

describe('reservation lookup rate limit', () => {
  it("refuses a buyer's third lookup within one second with 429 RATE_LIMITED and Retry-After, while another buyer is served", async () => {
    const limited = createTestContext({ RATE_LIMIT_PER_SECOND: '2' });
    const clock = manualClock();
    const limitedGateway = await startGateway(limited, { now: clock.now });
    try {
      const sale = await createLiveSale(limited);
      const [buyer, other] = [newBuyer(), newBuyer()];
      const reservations = [];
      for (const owner of [buyer, other]) {
        const res = await fetch(`${limitedGateway.url}/api/sales/${sale.id}/purchase`, {
          method: 'POST',
          headers: bearer(buyerToken(owner)),
        });
        reservations.push(((await res.json()) as { reservationId: string }).reservationId);
      }
      const [tokenOfBuyer, tokenOfOther] = [buyerToken(buyer), buyerToken(other)];
      const look = (reservationId: string, token: string) =>
        fetch(`${limitedGateway.url}/api/reservations/${reservationId}`, { headers: bearer(token) });
      // A fresh second of the gateway's clock, which then stands still: the lookups below share it.
      clock.nextSecond();

      const statuses = [(await look(reservations[0]!, tokenOfBuyer)).status, (await look(reservations[0]!, tokenOfBuyer)).status];
      const third = await look(reservations[0]!, tokenOfBuyer);
      const otherBuyer = await look(reservations[1]!, tokenOfOther);

      expect(statuses).toEqual([200, 200]);
      expect(third.headers.get('retry-after')).toBe('1');
      await expectProblem(third, 429, 'RATE_LIMITED', 'Too many requests');
      expect(otherBuyer.status).toBe(200);
    } finally {
      await limitedGateway.close();
      await limited.close();
    }
  });
});
