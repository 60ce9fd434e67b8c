import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { newReservationId, signPaymentEvent } from '@flashsale/domain';
import { buyerToken } from '@flashsale/harness';
import { saleKeys } from '@flashsale/redis-store';
import { createLiveSale, type TestContext } from '../support/context.ts';
import { gatewayPerFile, type TestGateway } from '../support/gateway.ts';
import { bearer, expectProblem } from '../support/http.ts';
import { writeOrdersOf } from '../support/orders.ts';
import { reconcileDeps } from '../support/reconciler.ts';
import { reconcileSale } from '@flashsale/sales/testing';

// A reservation answered 202 that neither store holds any more. MySQL goes back to before a
// reconciliation of the sale (a dump restored, a replica promoted behind): the order of a buyer who
// bought since is gone, and MySQL holds the generation before it. Redis still holds that buyer's record,
// but MySQL cannot take it back (STALE_GENERATION): the reconciliation names it lost, and the buyer's
// lookup, cancel and payment say so; the operator lists it. And what MySQL reopened by going back (an
// order cancelled since) is closed again from Redis's evidence, so the buyer who got its unit keeps it.

let ctx: TestContext;
let gateway: TestGateway;
gatewayPerFile((started, server) => {
  ctx = started;
  gateway = server;
});

const admin = () => bearer(ctx.config.ADMIN_TOKEN);
const get = (path: string, headers: Record<string, string>) => fetch(`${gateway.url}${path}`, { headers });
const post = (path: string, headers: Record<string, string>) =>
  fetch(`${gateway.url}${path}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: '{}' });

async function reserve(saleId: number, buyer: string): Promise<string> {
  const res = await post(`/api/sales/${saleId}/purchase`, bearer(buyerToken(buyer)));
  expect(res.status).toBe(202);
  return ((await res.json()) as { reservationId: string }).reservationId;
}

function pay(reservationId: string, id = `evt_${randomUUID()}`) {
  const raw = JSON.stringify({ id, type: 'payment.succeeded', reservationId, amountCents: 1999 });
  return fetch(`${gateway.url}/api/payments/events`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'payment-signature': signPaymentEvent(ctx.config.PAYMENT_WEBHOOK_SECRET, Math.floor(Date.now() / 1000), raw),
    },
    body: raw,
  });
}

/** a buys; a reconciliation gives the sale a new generation; c buys; then MySQL goes back to before the reconciliation. */
async function saleThatLostC() {
  const sale = await createLiveSale(ctx, { stock: 2 });
  const [a, c] = [`a-${randomUUID()}`, `c-${randomUUID()}`];
  await reserve(sale.id, a);
  await writeOrdersOf(ctx, sale.id);
  const dumped = await ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } });
  await reconcileSale(reconcileDeps(ctx), sale.id, 'operator');
  const rc = await reserve(sale.id, c);
  await writeOrdersOf(ctx, sale.id);
  // What the dump holds: no order of c, the generation before the reconciliation.
  await ctx.prisma.$executeRaw`DELETE FROM orders WHERE reservation_id = ${rc}`;
  await ctx.prisma.sale.update({
    where: { id: sale.id },
    data: { soldUnits: 1, redisGeneration: dumped.redisGeneration, generationAt: dumped.generationAt },
  });
  return { sale, c, rc };
}

describe('a reservation no store holds any more', () => {
  it('is named by the reconciliation that finds MySQL cannot take it back, counted, and listed for the operator', async () => {
    const { sale, c, rc } = await saleThatLostC();

    const result = await reconcileSale(reconcileDeps(ctx), sale.id, 'drift');

    expect(result).toMatchObject({
      remaining: 1,
      buyers: 1,
      lost: { reservations: 1, units: 1 },
      named: { reservations: 1, units: 1 },
      restored: { reservations: 0, units: 0 },
    });
    const res = await get(`/api/admin/sales/${sale.id}/losses`, admin());
    expect(res.status).toBe(200);
    const body = (await res.json()) as { reservations: { reservedAt: string; detectedAt: string }[] };
    expect(body).toEqual({
      saleId: sale.id,
      lost: { reservations: 1, units: 1 },
      named: { reservations: 1, units: 1 },
      unnamed: { reservations: 0, units: 0 },
      reservations: [
        {
          reservationId: rc,
          userId: c,
          quantity: 1,
          reason: 'STALE_GENERATION',
          reservedAt: body.reservations[0]!.reservedAt,
          detectedAt: body.reservations[0]!.detectedAt,
        },
      ],
      nextCursor: null,
      unmatchedPayments: { total: 0, first: [] },
    });
    expect(Number.isNaN(Date.parse(body.reservations[0]!.reservedAt))).toBe(false);
    // The buyer's record is gone from Redis with the rebuild: the row above is all that is left.
    expect(await ctx.redis.hget(saleKeys(ctx.config.REDIS_PREFIX, sale.id).buyers, c)).toBeNull();
    // A retry of the reconciliation (by hand, say) names nothing twice.
    await reconcileSale(reconcileDeps(ctx), sale.id, 'operator');
    expect(await ctx.prisma.lostReservation.count({ where: { saleId: sale.id } })).toBe(1);
  });

  it("answers its buyer's lookup `lost` with the reason, refuses its cancel 409, and records a payment for it as refund_due", async () => {
    const { sale, c, rc } = await saleThatLostC();
    await reconcileSale(reconcileDeps(ctx), sale.id, 'drift');

    const lookup = await get(`/api/reservations/${rc}`, bearer(buyerToken(c)));
    expect({ status: lookup.status, body: await lookup.json() }).toEqual({
      status: 200,
      body: { reservationId: rc, saleId: sale.id, quantity: 1, status: 'lost', reason: 'STALE_GENERATION', orderId: null, payBy: null },
    });
    await expectProblem(
      await get(`/api/reservations/${rc}`, bearer(buyerToken('someone-else'))),
      404,
      'RESERVATION_NOT_FOUND',
      'no such reservation for this buyer',
    );
    const cancel = await post(`/api/reservations/${rc}/cancel`, bearer(buyerToken(c)));
    expect({ status: cancel.status, body: await cancel.json() }).toMatchObject({
      status: 409,
      body: { code: 'ORDER_NOT_CANCELLABLE', orderStatus: 'lost', reason: 'STALE_GENERATION' },
    });

    const event = `evt_${randomUUID()}`;
    const first = await pay(rc, event);
    const replay = await pay(rc, event);
    expect([first.status, await first.json(), replay.status, await replay.json()]).toEqual([
      200,
      { status: 'refund_due' },
      200,
      { status: 'refund_due' },
    ]);
    expect(await ctx.prisma.paymentEvent.findMany({ where: { reservationId: rc }, select: { eventId: true, outcome: true } })).toEqual([
      { eventId: event, outcome: 'refund_due' },
    ]);
  });

  it('keeps a payment for a reservation no store knows, of a sale that lost reservations it cannot name, as unmatched; elsewhere 404', async () => {
    // Redis loses a reservation no worker wrote, after the checkpoint saw it: counted, not named.
    const sale = await createLiveSale(ctx, { stock: 5 });
    const unnamed = await reserve(sale.id, `x-${randomUUID()}`);
    const snap = await ctx.store.sale(sale.id).snapshot();
    await ctx.prisma.sale.update({
      where: { id: sale.id },
      data: {
        checkpointReservations: snap.buyers,
        checkpointUnits: 1,
        checkpointAt: new Date(snap.at),
        checkpointStreamId: snap.lastEntryId,
      },
    });
    const keys = saleKeys(ctx.config.REDIS_PREFIX, sale.id);
    await ctx.redis.del(keys.meta, keys.buyers, keys.stream);
    expect(await reconcileSale(reconcileDeps(ctx), sale.id, 'lost')).toMatchObject({ lost: { reservations: 1, units: 1 } });

    const event = `evt_${randomUUID()}`;
    const first = await pay(unnamed, event);
    expect({ status: first.status, body: await first.json() }).toEqual({ status: 200, body: { status: 'unmatched' } });
    expect(await (await pay(unnamed, event)).json()).toEqual({ status: 'unmatched' });
    const losses = (await (await get(`/api/admin/sales/${sale.id}/losses`, admin())).json()) as Record<string, unknown>;
    expect(losses).toMatchObject({
      lost: { reservations: 1, units: 1 },
      named: { reservations: 0, units: 0 },
      unnamed: { reservations: 1, units: 1 },
      reservations: [],
      unmatchedPayments: { total: 1, first: [{ eventId: event, reservationId: unnamed, amountCents: 1999 }] },
    });

    const intact = await createLiveSale(ctx, { stock: 5 });
    await expectProblem(await pay(newReservationId(intact.id)), 404, 'RESERVATION_NOT_FOUND', 'no such reservation');
  });

  it('closes again an order MySQL reopened (its cancel lost) before writing back the order of the buyer who got its unit: nothing lost', async () => {
    const sale = await createLiveSale(ctx, { stock: 2 });
    const [a, b, c] = [`a-${randomUUID()}`, `b-${randomUUID()}`, `c-${randomUUID()}`];
    const ra = await reserve(sale.id, a);
    await reserve(sale.id, b);
    await writeOrdersOf(ctx, sale.id);
    expect((await post(`/api/reservations/${ra}/cancel`, bearer(buyerToken(a)))).status).toBe(200);
    const rc = await reserve(sale.id, c);
    await writeOrdersOf(ctx, sale.id);
    // What a replica promoted behind holds: a's order as it was before the cancel, no order of c.
    await ctx.prisma.$executeRaw`UPDATE orders SET status = 'created', closed_at = NULL WHERE reservation_id = ${ra}`;
    await ctx.prisma.$executeRaw`DELETE FROM stock_returns WHERE reservation_id = ${ra}`;
    await ctx.prisma.$executeRaw`DELETE FROM orders WHERE reservation_id = ${rc}`;
    await ctx.prisma.$executeRaw`UPDATE sales SET sold_units = 2 WHERE id = ${sale.id}`;

    const result = await reconcileSale(reconcileDeps(ctx), sale.id, 'drift');

    expect(result).toMatchObject({
      remaining: 0,
      buyers: 2,
      lost: { reservations: 0, units: 0 },
      restored: { reservations: 1, units: 1 },
      reclosed: 1,
    });
    expect(result).not.toHaveProperty('named');
    const statuses = await ctx.prisma.order.findMany({
      where: { reservationId: { in: [ra, rc] } },
      select: { reservationId: true, status: true },
    });
    expect(Object.fromEntries(statuses.map((o) => [o.reservationId, o.status]))).toEqual({ [ra]: 'cancelled', [rc]: 'created' });
    expect(await ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } })).toMatchObject({ soldUnits: 2, lostReservations: 0 });
    expect(await ctx.prisma.lostReservation.count({ where: { saleId: sale.id } })).toBe(0);
  });

  it('pages the named losses and validates the page it is asked for', async () => {
    const { sale, rc } = await saleThatLostC();
    await reconcileSale(reconcileDeps(ctx), sale.id, 'drift');
    const other = newReservationId(sale.id + 1);
    const page = (query: string) => get(`/api/admin/sales/${sale.id}/losses${query}`, admin());

    expect(await (await page('?limit=1')).json()).toMatchObject({ reservations: [{ reservationId: rc }], nextCursor: null });
    expect(await (await page(`?cursor=${rc}`)).json()).toMatchObject({ reservations: [], nextCursor: null });
    for (const query of ['?limit=0', '?limit=1001', '?limit=1e2', `?cursor=${other}`, '?cursor=x', '?page=2']) {
      expect({ query, status: (await page(query)).status }).toEqual({ query, status: 400 });
    }
    const codeOf = async (res: Response) => [res.status, ((await res.json()) as { code: string }).code];
    expect(await codeOf(await get(`/api/admin/sales/${sale.id}/losses`, {}))).toEqual([401, 'UNAUTHORIZED']);
    expect(await codeOf(await get('/api/admin/sales/999999999/losses', admin()))).toEqual([404, 'SALE_NOT_FOUND']);
  });
});
