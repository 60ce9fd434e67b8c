import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Reservation } from '@flashsale/domain';
import { createOrderStore, type SaleRecord } from '@flashsale/order-store';
import { saleKeys } from '@flashsale/redis-store';
import { ORDER_WRITERS_GROUP } from '@flashsale/redis-store/testing';
import { createIsolatedContext, createLiveSale, type TestContext } from '../../../test/support/context.ts';
import { reconcileDeps } from '../../../test/support/reconciler.ts';
import { reconcileSale } from '@flashsale/sales/testing';

// A database of the file's own: an expiry pass looks at every sale's orders.
let ctx: TestContext;
beforeAll(async () => {
  ctx = await createIsolatedContext();
});
afterAll(() => ctx?.close());

const arrivals = (saleId: number) => ctx.store.sale(saleId).heldPayments();

/** Reserves for each buyer (quantities 1, 2, 3 in turn) and writes the orders as the worker does: `batches` batches. */
async function buy(sale: SaleRecord, buyers: string[], batches = 1): Promise<Reservation[]> {
  const reservations: Reservation[] = [];
  for (const [i, userId] of buyers.entries()) {
    const request = { saleId: sale.id, userId, quantity: (i % 3) + 1, reservationId: `${sale.id}-${randomUUID()}` };
    expect((await ctx.store.reserve(request)).kind).toBe('reserved');
    reservations.push({
      ...request,
      reservedAt: Date.now(),
      generation: (await ctx.store.sale(sale.id).state())!.generation,
    });
  }
  const size = Math.ceil(reservations.length / batches);
  for (let i = 0; i < reservations.length; i += size) {
    const batch = reservations.slice(i, i + size);
    expect((await createOrderStore(ctx.prisma).sale(sale.id).writeOrderBatch(batch)).written).toHaveLength(batch.length);
  }
  // Acknowledged, as the worker does once they are orders: the stream drains.
  const stream = saleKeys(ctx.config.REDIS_PREFIX, sale.id).stream;
  const read = (await ctx.redis.xreadgroup('GROUP', ORDER_WRITERS_GROUP, 'test', 'COUNT', 1_000, 'STREAMS', stream, '>')) as
    [string, [string, string[]][]][] | null;
  const ids = (read?.[0]?.[1] ?? []).map(([id]) => id);
  if (ids.length > 0) await ctx.redis.xack(stream, ORDER_WRITERS_GROUP, ...ids);
  return reservations;
}

/** The sale's orders grouped by MySQL: what the counters must always equal. */
async function groupedByStatus(saleId: number) {
  const byStatus = {
    created: { orders: 0, units: 0 },
    paid: { orders: 0, units: 0 },
    cancelled: { orders: 0, units: 0 },
    expired: { orders: 0, units: 0 },
  };
  const rows = await ctx.prisma.order.groupBy({ by: ['status'], where: { saleId }, _count: { _all: true }, _sum: { quantity: true } });
  for (const row of rows) byStatus[row.status] = { orders: row._count._all, units: row._sum.quantity ?? 0 };
  const returns = await ctx.prisma.stockReturn.groupBy({ by: ['state'], where: { saleId }, _sum: { quantity: true } });
  const returned = (state: string) => returns.filter((row) => row.state === state).reduce((sum, row) => sum + (row._sum.quantity ?? 0), 0);
  return {
    live: { orders: byStatus.created.orders + byStatus.paid.orders, units: byStatus.created.units + byStatus.paid.units },
    byStatus,
    unitsReturned: returned('returned') + returned('rebuilt'),
    unitsAwaitingReturn: returned('pending'),
  };
}

async function expectCountersToMatch(saleId: number) {
  const { refundsDue: _refunds, ...counted } = await createOrderStore(ctx.prisma).sale(saleId).orderLedger();
  expect(counted).toEqual(await groupedByStatus(saleId));
}

describe("a sale's order counters", () => {
  it('equal a GROUP BY over its orders after creates, payments, cancels, expiries (one paid by a payment that arrived in time) and a reconcile', async () => {
    const sale = await createLiveSale(ctx, { stock: 1_000, perUserLimit: 3, paymentWindowSeconds: 600 });
    const first = await buy(
      sale,
      Array.from({ length: 12 }, (_, i) => `first-${i}`),
      3,
    );
    // A redelivered entry beside new ones: the writer's careful pass.
    const careful = await buy(sale, ['careful-0'], 1);
    expect((await createOrderStore(ctx.prisma).sale(sale.id).writeOrderBatch([careful[0]!])).replayed).toHaveLength(1);
    await expectCountersToMatch(sale.id);

    const pay = (r: Reservation, id: string) =>
      createOrderStore(ctx.prisma).recordPayment({
        eventId: `${id}-${sale.id}`,
        reservationId: r.reservationId,
        saleId: sale.id,
        amountCents: 100,
      });
    expect(await pay(first[0]!, 'p0')).toBe('paid');
    expect(await pay(first[1]!, 'p1')).toBe('paid');
    expect(await pay(first[1]!, 'p1-again')).toBe('refund_due');
    expect((await createOrderStore(ctx.prisma).cancelOrder(first[2]!.reservationId, first[2]!.userId))?.kind).toBe('cancelled');
    expect((await createOrderStore(ctx.prisma).cancelOrder(first[3]!.reservationId, first[3]!.userId))?.kind).toBe('cancelled');
    expect((await createOrderStore(ctx.prisma).cancelOrder(first[0]!.reservationId, first[0]!.userId))?.kind).toBe('not-cancellable');
    await expectCountersToMatch(sale.id);

    // Four orders come due: one paid on arrival before its payBy (the expiry pays it), three expire.
    const due = first.slice(4, 8).map((r) => r.reservationId);
    await ctx.prisma
      .$executeRaw`UPDATE orders SET pay_by = NOW(3) + INTERVAL 300000 MICROSECOND WHERE reservation_id IN (${due[0]}, ${due[1]}, ${due[2]}, ${due[3]})`;
    await ctx.store.recordPaymentArrival({
      eventId: `in-time-${sale.id}`,
      reservationId: due[0]!,
      saleId: sale.id,
      amountCents: 100,
    });
    await sleep(400);
    const expiry = await createOrderStore(ctx.prisma).expireDueOrders(100, arrivals);
    expect({ paid: expiry.paid, expired: expiry.owed.filter((o) => o.saleId === sale.id).length }).toEqual({ paid: 1, expired: 3 });
    await expectCountersToMatch(sale.id);

    // A reconcile (pending returns settled as rebuilt), then more orders of the new generation, a
    // payment and a cancel.
    await reconcileSale(reconcileDeps(ctx), sale.id, 'operator');
    const later = await buy(sale, ['later-0', 'later-1', 'later-2', first[2]!.userId], 2);
    expect(await pay(later[0]!, 'p-later')).toBe('paid');
    expect((await createOrderStore(ctx.prisma).cancelOrder(later[1]!.reservationId, later[1]!.userId))?.kind).toBe('cancelled');
    await expectCountersToMatch(sale.id);

    const ledger = await createOrderStore(ctx.prisma).sale(sale.id).orderLedger();
    expect(ledger.byStatus).toMatchObject({ paid: { orders: 4 }, cancelled: { orders: 3 }, expired: { orders: 3 } });
    expect(ledger.refundsDue).toEqual({ count: 1, amountCents: 100 });
  });
});
