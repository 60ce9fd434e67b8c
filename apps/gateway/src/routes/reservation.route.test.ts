import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newReservationId } from '@flashsale/domain';
import { ORDER_WRITERS_GROUP, saleKeys } from '@flashsale/redis-store';
import { createLiveSale, type TestContext } from '../../../../test/support/context.ts';
import { gatewayPerFile, type TestGateway } from '../../../../test/support/gateway.ts';
import { buyerToken } from '../../../../test/support/tokens.ts';
import { bearer, expectProblem } from '../../../../test/support/http.ts';

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
    headers: { ...bearer(await buyerToken(buyer)), 'content-type': 'application/json' },
    body: JSON.stringify({ quantity }),
  });
  expect(res.status).toBe(202);
  return ((await res.json()) as { reservationId: string }).reservationId;
}

async function lookup(reservationId: string, buyer: string): Promise<Response> {
  return fetch(`${gateway.url}/api/reservations/${encodeURIComponent(reservationId)}`, { headers: bearer(await buyerToken(buyer)) });
}

describe('GET /api/reservations/:reservationId', () => {
  it('shows its owner a pending reservation until the order is in MySQL', async () => {
    const sale = await createLiveSale(ctx, { perUserLimit: 2 });
    const buyer = newBuyer();
    const reservationId = await reserve(sale.id, buyer, 2);

    const res = await lookup(reservationId, buyer);

    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ reservationId, saleId: sale.id, quantity: 2, status: 'pending', orderId: null });
  });

  it('shows its owner a reservation the workers set aside as rejected, with the reason, and hides it from others', async () => {
    const sale = await createLiveSale(ctx);
    const buyer = newBuyer();
    const reservationId = await reserve(sale.id, buyer);
    // What a worker does with a reservation that cannot become an order (dead-letter-2.lua).
    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    const [[, [[entryId, fields]]]] = (await ctx.redis.xreadgroup('GROUP', ORDER_WRITERS_GROUP, 'test', 'COUNT', 1, 'STREAMS', keys.stream, '>')) as unknown as [[string, [[string, string[]]]]];
    await ctx.redis.deadLetter(keys.stream, keys.deadLetter, ORDER_WRITERS_GROUP, entryId, 'OVER_STOCK', 1, ...fields);

    const res = await lookup(reservationId, buyer);

    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ reservationId, saleId: sale.id, quantity: 1, status: 'rejected', orderId: null, reason: 'OVER_STOCK' });
    await expectProblem(await lookup(reservationId, newBuyer()), 404, 'RESERVATION_NOT_FOUND', 'no such reservation for this buyer');
  });

  it("answers another buyer's lookup of a reservation with 404 RESERVATION_NOT_FOUND", async () => {
    const sale = await createLiveSale(ctx);
    const reservationId = await reserve(sale.id, newBuyer());

    await expectProblem(await lookup(reservationId, newBuyer()), 404, 'RESERVATION_NOT_FOUND', 'no such reservation for this buyer');
  });

  it.each(['garbage', '0-0b7c1d3e-9f00-4a6b-8c1d-2e3f4a5b6c7d', '1700000000000-0'])('answers the malformed id %j with 404 RESERVATION_NOT_FOUND', async (reservationId) => {
    await expectProblem(await lookup(reservationId, newBuyer()), 404, 'RESERVATION_NOT_FOUND', 'no such reservation for this buyer');
  });

  it('answers a well-formed id nobody was given with 404 RESERVATION_NOT_FOUND', async () => {
    const sale = await createLiveSale(ctx);
    const buyer = newBuyer();
    await reserve(sale.id, buyer);

    await expectProblem(await lookup(newReservationId(sale.id), buyer), 404, 'RESERVATION_NOT_FOUND', 'no such reservation for this buyer');
  });

  it("shows the order's status and id once the order is in MySQL", async () => {
    const sale = await createLiveSale(ctx, { perUserLimit: 3 });
    const buyer = newBuyer();
    const reservationId = await reserve(sale.id, buyer, 3);
    // A stand-in for the worker: the order it would write for this reservation.
    const order = await ctx.prisma.order.create({ data: { reservationId, saleId: sale.id, userId: buyer, quantity: 3, reservedAt: new Date() } });

    const res = await lookup(reservationId, buyer);

    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ reservationId, saleId: sale.id, quantity: 3, status: 'created', orderId: order.id.toString() });
  });

  it('follows the order status after it changes', async () => {
    const sale = await createLiveSale(ctx);
    const buyer = newBuyer();
    const reservationId = await reserve(sale.id, buyer);
    const order = await ctx.prisma.order.create({ data: { reservationId, saleId: sale.id, userId: buyer, quantity: 1, reservedAt: new Date() } });
    await ctx.prisma.order.update({ where: { id: order.id }, data: { status: 'paid' } });

    expect(await (await lookup(reservationId, buyer)).json()).toEqual({ reservationId, saleId: sale.id, quantity: 1, status: 'paid', orderId: order.id.toString() });
  });

  it("keeps another buyer's order hidden with 404 RESERVATION_NOT_FOUND", async () => {
    const sale = await createLiveSale(ctx);
    const buyer = newBuyer();
    const reservationId = await reserve(sale.id, buyer);
    await ctx.prisma.order.create({ data: { reservationId, saleId: sale.id, userId: buyer, quantity: 1, reservedAt: new Date() } });

    await expectProblem(await lookup(reservationId, newBuyer()), 404, 'RESERVATION_NOT_FOUND', 'no such reservation for this buyer');
  });

  it('refuses a lookup without a buyer token with 401 UNAUTHORIZED', async () => {
    const sale = await createLiveSale(ctx);
    const reservationId = await reserve(sale.id, newBuyer());

    await expectProblem(await fetch(`${gateway.url}/api/reservations/${reservationId}`), 401, 'UNAUTHORIZED', 'an Authorization: Bearer token is required');
  });
});
