import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@flashsale/runtime';
import { createOrderStore, isMysqlUnavailable, type SaleRecord, type PaymentEventInput } from '@flashsale/order-store';
import type { Reservation } from '@flashsale/domain';
import { createIsolatedContext, createLiveSale, type TestContext } from '../../../test/support/context.ts';
import { runExpiryPass } from './order-expiry.ts';
import { settleReturns } from './order-returns.ts';
import { receivePayment } from './payment-intake.ts';
import type { SalesDeps } from './sales-deps.ts';
import { salesDeps } from './testing.ts';

// A database of the file's own: an expiry pass looks at every sale's orders.
let ctx: TestContext;
let deps: SalesDeps;
beforeAll(async () => {
  ctx = await createIsolatedContext();
  deps = salesDeps({ saleStore: ctx.store, prisma: ctx.prisma, logger: createLogger('test', 'silent') });
});
afterAll(() => ctx.close());

/** The expiry's view of Redis (its clock, the payments that arrived), as runExpiryPass reads it. */
const arrivals = (saleId: number) => ctx.store.sale(saleId).heldPayments();

/**
 * A payment event as the provider delivers it: a failure that says MySQL could not serve it now (on a
 * busy machine, forty payments waiting on four connections past the transaction's wait limit), which the
 * route answers 503, is delivered again a moment later, as the provider does.
 */
async function deliverPayment(event: PaymentEventInput) {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await createOrderStore(ctx.prisma).recordPayment(event);
    } catch (error) {
      if (!isMysqlUnavailable(error) || attempt === 5) throw error;
      await sleep(100);
    }
  }
}

interface Ordered {
  sale: SaleRecord;
  orders: Reservation[];
}

/** A sale of `stock` with `buyers` orders written (reserved in Redis, written as the worker writes them). */
async function saleWithOrders(stock: number, buyers: number, prefix = 'buyer'): Promise<Ordered> {
  const sale = await createLiveSale(ctx, { stock, paymentWindowSeconds: 10 });
  const orders = await reserve(
    sale,
    Array.from({ length: buyers }, (_, i) => `${prefix}-${i}`),
  );
  return { sale, orders };
}

async function reserve(sale: SaleRecord, buyers: string[]): Promise<Reservation[]> {
  const reservations: Reservation[] = [];
  for (const userId of buyers) {
    const request = { saleId: sale.id, userId, quantity: 1, reservationId: `${sale.id}-${randomUUID()}` };
    expect((await ctx.store.reserve(request)).kind).toBe('reserved');
    reservations.push({
      ...request,
      reservedAt: Date.now(),
      generation: (await ctx.store.sale(sale.id).state())!.generation,
    });
  }
  const outcome = await createOrderStore(ctx.prisma).sale(sale.id).writeOrderBatch(reservations);
  expect(outcome.written).toHaveLength(buyers.length);
  return reservations;
}

/** Makes the sale's unpaid orders due now (their payBy a second ago), instead of waiting the window out. */
async function makeDue(saleId: number): Promise<void> {
  await ctx.prisma.$executeRaw`UPDATE orders SET pay_by = NOW(3) - INTERVAL 1 SECOND WHERE sale_id = ${saleId} AND status = 'created'`;
}

/** The sale's ledger across both stores. */
async function ledger(sale: SaleRecord) {
  const orders = await ctx.prisma.order.findMany({ where: { saleId: sale.id } });
  const returns = await ctx.prisma.stockReturn.findMany({ where: { saleId: sale.id } });
  const row = await ctx.prisma.sale.findUniqueOrThrow({ where: { id: sale.id } });
  const live = orders.filter((o) => o.status === 'created' || o.status === 'paid').reduce((sum, o) => sum + o.quantity, 0);
  const remaining = (await ctx.store.sale(sale.id).state())?.remaining ?? null;
  const byStatus: Record<string, number> = {};
  for (const o of orders) byStatus[o.status] = (byStatus[o.status] ?? 0) + 1;
  return {
    live,
    remaining,
    soldUnits: row.soldUnits,
    byStatus,
    pendingReturns: returns.filter((r) => r.state === 'pending').length,
    returns: returns.length,
  };
}

describe('the expiry pass', () => {
  it('expires the orders past payBy, gives their units back once and frees their buyers; the rest stay', async () => {
    const { sale, orders } = await saleWithOrders(5, 4);
    await makeDue(sale.id);
    await ctx.prisma.order.updateMany({
      where: { reservationId: orders[0]!.reservationId },
      data: { payBy: new Date(Date.now() + 600_000) },
    });

    const first = await runExpiryPass(deps, 100);
    const second = await runExpiryPass(deps, 100);

    expect({ expired: first.expired, units: first.units }).toEqual({ expired: 3, units: 3 });
    expect({ expired: second.expired, units: second.units, repeated: second.repeated }).toEqual({ expired: 0, units: 0, repeated: 0 });
    expect(await ledger(sale)).toEqual({
      live: 1,
      remaining: 4,
      soldUnits: 1,
      byStatus: { created: 1, expired: 3 },
      pendingReturns: 0,
      returns: 3,
    });
    // A buyer whose order expired buys again, and the writer takes the new order beside the expired one.
    await reserve(sale, [orders[1]!.userId]);
    expect(await ledger(sale)).toMatchObject({ live: 2, remaining: 3, soldUnits: 2, byStatus: { created: 2, expired: 3 } });
  });

  it('keeps MySQL to one live order per buyer and sale, whatever is written', async () => {
    const { sale, orders } = await saleWithOrders(5, 1);
    const second = ctx.prisma.order.create({
      data: {
        reservationId: `${sale.id}-${randomUUID()}`,
        saleId: sale.id,
        userId: orders[0]!.userId,
        quantity: 1,
        reservedAt: new Date(),
        payBy: new Date(),
      },
    });
    await expect(second).rejects.toThrow(/orders_sale_id_live_user_id_key|Unique constraint/);
  });

  it('a process that died between the MySQL commit and the Redis return: the next pass gives the units back, once', async () => {
    const { sale } = await saleWithOrders(5, 3);
    await makeDue(sale.id);
    // The first half of a pass, as a worker SIGKILLed right after its commit leaves it.
    const { owed } = await createOrderStore(ctx.prisma).expireDueOrders(100, arrivals);
    expect(await ledger(sale)).toMatchObject({ live: 0, remaining: 2, soldUnits: 0, pendingReturns: 3 });

    const pass = await runExpiryPass(deps, 100);
    // And the dead process's own return, had it got as far as the script but not the MySQL mark.
    const late = await settleReturns(deps, owed);

    expect({ units: pass.units, late: late.units, repeated: late.repeated }).toEqual({ units: 3, late: 0, repeated: 3 });
    expect(await ledger(sale)).toEqual({ live: 0, remaining: 5, soldUnits: 0, byStatus: { expired: 3 }, pendingReturns: 0, returns: 3 });
  });

  it('Redis rebuilt while returns are owed: the rebuild counts them and settles them, and no return adds them again', async () => {
    const { sale } = await saleWithOrders(6, 4);
    await makeDue(sale.id);
    const { owed } = await createOrderStore(ctx.prisma).expireDueOrders(2, arrivals);
    expect(owed).toHaveLength(2);
    // The reconciler's rebuild (Redis lost, say): MySQL's live orders are 2, so remaining is 4.
    const plan = await createOrderStore(ctx.prisma)
      .sale(sale.id)
      .lockForRebuild((locked) => locked.switchGeneration({ lost: false }));
    await ctx.store.rebuild(plan!.sale, {
      ...plan!,
      buyers: createOrderStore(ctx.prisma).sale(sale.id).liveBuyerPages(),
    });
    const late = await settleReturns(deps, owed);
    const pass = await runExpiryPass(deps, 100);

    expect(late).toMatchObject({ units: 0, waiting: 2 });
    expect(pass).toMatchObject({ expired: 2, units: 2 });
    expect(await ledger(sale)).toEqual({ live: 0, remaining: 6, soldUnits: 0, byStatus: { expired: 4 }, pendingReturns: 0, returns: 4 });
    const states = await ctx.prisma.stockReturn.groupBy({ by: ['state'], where: { saleId: sale.id }, _count: { _all: true } });
    expect(Object.fromEntries(states.map((s) => [s.state, s._count._all]))).toEqual({ rebuilt: 2, returned: 2 });
  });
});

describe('races, each many times over', () => {
  it('a payment and the expiry of the same order at the same instant: exactly one wins', async () => {
    const { sale, orders } = await saleWithOrders(40, 40);
    await makeDue(sale.id);
    // Payments land over the 60 ms the expiry takes to get through the orders, five at a time, in two passes.
    const payments = orders.map(async (o, i) => {
      await sleep(Math.random() * 60);
      return deliverPayment({ eventId: `evt-race-${sale.id}-${i}`, reservationId: o.reservationId, saleId: sale.id, amountCents: 500 });
    });
    const expiring = async () => {
      for (let i = 0; i < 8; i++) await runExpiryPass(deps, 5);
    };
    const [outcomes] = await Promise.all([Promise.all(payments), expiring(), expiring()]);
    await runExpiryPass(deps, 100);

    const rows = await ctx.prisma.order.findMany({ where: { saleId: sale.id } });
    orders.forEach((o, i) => {
      const status = rows.find((r) => r.reservationId === o.reservationId)!.status;
      // Paid means the payment won; expired means the expiry won and the payment is owed back.
      expect({ status, outcome: outcomes[i] }).toEqual(
        status === 'paid' ? { status: 'paid', outcome: 'paid' } : { status: 'expired', outcome: 'refund_due' },
      );
    });
    const paid = rows.filter((r) => r.status === 'paid').length;
    expect(await ledger(sale)).toMatchObject({ live: paid, remaining: 40 - paid, soldUnits: paid, pendingReturns: 0, returns: 40 - paid });
    console.log(`payment against expiry: ${paid} paid, ${40 - paid} expired (refund due)`);
  });

  it('a cancel and a payment of the same order at the same instant: exactly one wins', async () => {
    const { sale, orders } = await saleWithOrders(30, 30);
    const results = await Promise.all(
      orders.map((o, i) =>
        Promise.all([
          createOrderStore(ctx.prisma).cancelOrder(o.reservationId, o.userId),
          deliverPayment({ eventId: `evt-cancel-${sale.id}-${i}`, reservationId: o.reservationId, saleId: sale.id, amountCents: 500 }),
        ]),
      ),
    );
    await runExpiryPass(deps, 100);

    let cancelled = 0;
    for (const [cancel, payment] of results) {
      if (cancel!.kind === 'cancelled') {
        cancelled++;
        expect(payment).toBe('refund_due');
      } else {
        expect({ cancel, payment }).toEqual({ cancel: { kind: 'not-cancellable', status: 'paid' }, payment: 'paid' });
      }
    }
    expect(await ledger(sale)).toMatchObject({ live: 30 - cancelled, remaining: cancelled, soldUnits: 30 - cancelled, pendingReturns: 0 });
  });

  it('two expiry passes at once: every order expires once and its unit comes back once', async () => {
    const { sale } = await saleWithOrders(50, 50);
    await makeDue(sale.id);
    const passes = await Promise.all([runExpiryPass(deps, 10), runExpiryPass(deps, 10), runExpiryPass(deps, 10)]);
    await runExpiryPass(deps, 100);
    await runExpiryPass(deps, 100);

    expect(await ledger(sale)).toEqual({ live: 0, remaining: 50, soldUnits: 0, byStatus: { expired: 50 }, pendingReturns: 0, returns: 50 });
    expect(passes.reduce((sum, p) => sum + p.expired, 0)).toBeLessThanOrEqual(50);
  });

  it('the same event delivered ten times at once: one outcome, one payment', async () => {
    const { sale, orders } = await saleWithOrders(3, 1);
    const event = { eventId: `evt-dup-${sale.id}`, reservationId: orders[0]!.reservationId, saleId: sale.id, amountCents: 999 };
    const outcomes = await Promise.all(Array.from({ length: 10 }, () => createOrderStore(ctx.prisma).recordPayment(event)));

    expect(new Set(outcomes)).toEqual(new Set(['paid']));
    expect(await ctx.prisma.paymentEvent.count({ where: { reservationId: event.reservationId } })).toBe(1);
    // Another event for the paid order is a second payment: owed back, never a second "paid".
    expect(await createOrderStore(ctx.prisma).recordPayment({ ...event, eventId: `evt-dup-${sale.id}-other` })).toBe('refund_due');
    // A paid order is neither expired nor cancelled.
    await makeDue(sale.id);
    await ctx.prisma.$executeRaw`UPDATE orders SET pay_by = NOW(3) - INTERVAL 1 SECOND WHERE sale_id = ${sale.id}`;
    await runExpiryPass(deps, 100);
    expect(await createOrderStore(ctx.prisma).cancelOrder(event.reservationId, orders[0]!.userId)).toEqual({
      kind: 'not-cancellable',
      status: 'paid',
    });
    expect(await ledger(sale)).toMatchObject({ live: 1, remaining: 2, byStatus: { paid: 1 } });
  });
});

describe('a payment that arrived in time stands, whenever MySQL takes it', () => {
  // The gateway records a payment's arrival in Redis (Redis's TIME) before it asks MySQL; here MySQL
  // "could not take it" is the intake stopping right after that record, as a locked orders table does.
  const event = (sale: SaleRecord, reservationId: string, id: string, amountCents = 500) => ({
    eventId: `${id}-${sale.id}`,
    reservationId,
    saleId: sale.id,
    amountCents,
  });

  it('arrived before payBy, MySQL not reached: the expiry pays the order instead of expiring it, and the retry answers paid', async () => {
    const { sale, orders } = await saleWithOrders(4, 3);
    await ctx.prisma.$executeRaw`UPDATE orders SET pay_by = NOW(3) + INTERVAL 300000 MICROSECOND WHERE sale_id = ${sale.id}`;
    const arrived = event(sale, orders[0]!.reservationId, 'evt-in-time');
    await ctx.store.recordPaymentArrival(arrived);
    await sleep(400);

    const pass = await runExpiryPass(deps, 100);

    expect({ expired: pass.expired, paid: pass.paidFromArrivals }).toEqual({ expired: 2, paid: 1 });
    expect(await ledger(sale)).toMatchObject({ live: 1, remaining: 3, soldUnits: 1, byStatus: { paid: 1, expired: 2 } });
    expect(await ctx.prisma.paymentEvent.findUnique({ where: { eventId: arrived.eventId } })).toMatchObject({
      outcome: 'paid',
      reservationId: arrived.reservationId,
    });
    expect((await arrivals(sale.id)).payments).toEqual([]);
    // The provider's retry, whenever it comes: the one outcome of the event.
    expect(await receivePayment(deps, arrived)).toBe('paid');
  });

  it('arrived after payBy, before the expiry: the expiry closes the order and the payment is owed back', async () => {
    const { sale, orders } = await saleWithOrders(4, 1);
    await makeDue(sale.id);
    const late = event(sale, orders[0]!.reservationId, 'evt-late');
    await ctx.store.recordPaymentArrival(late);

    const pass = await runExpiryPass(deps, 100);

    expect({ expired: pass.expired, paid: pass.paidFromArrivals }).toEqual({ expired: 1, paid: 0 });
    expect(await receivePayment(deps, late)).toBe('refund_due');
    expect((await arrivals(sale.id)).payments).toEqual([]);
  });

  it("an order whose payBy is not past on Redis's clock is not expired, whatever MySQL's clock says", async () => {
    const { sale } = await saleWithOrders(2, 1);
    // Due on MySQL's clock; on Redis's (the clock payBy is computed on) still a minute to go.
    await ctx.prisma.$executeRaw`UPDATE orders SET pay_by = NOW(3) - INTERVAL 1 SECOND WHERE sale_id = ${sale.id}`;
    const { owed } = await createOrderStore(ctx.prisma).expireDueOrders(100, async (saleId) => ({
      ...(await arrivals(saleId)),
      nowMs: Date.now() - 60_000,
    }));
    expect(owed).toEqual([]);
    expect(await ledger(sale)).toMatchObject({ byStatus: { created: 1 } });
  });
});

describe('a payment event id is tied to its contents', () => {
  it('the same id for another reservation or amount is refused (PAYMENT_EVENT_REUSED), and changes nothing', async () => {
    const { sale, orders } = await saleWithOrders(4, 2);
    const first = { eventId: `evt-same-${sale.id}`, reservationId: orders[0]!.reservationId, saleId: sale.id, amountCents: 500 };
    expect(await receivePayment(deps, first)).toBe('paid');

    await expect(receivePayment(deps, { ...first, reservationId: orders[1]!.reservationId })).rejects.toMatchObject({
      code: 'PAYMENT_EVENT_REUSED',
      status: 422,
    });
    await expect(receivePayment(deps, { ...first, amountCents: 1 })).rejects.toMatchObject({ code: 'PAYMENT_EVENT_REUSED' });
    expect(await receivePayment(deps, first)).toBe('paid');
    expect(await ledger(sale)).toMatchObject({ byStatus: { paid: 1, created: 1 } });
    expect(await ctx.prisma.paymentEvent.count({ where: { saleId: sale.id } })).toBe(1);
  });

  it('refused while the first is still only recorded in Redis (MySQL not reached yet)', async () => {
    const { sale, orders } = await saleWithOrders(4, 2);
    const first = { eventId: `evt-held-${sale.id}`, reservationId: orders[0]!.reservationId, saleId: sale.id, amountCents: 500 };
    await ctx.store.recordPaymentArrival(first);

    await expect(receivePayment(deps, { ...first, reservationId: orders[1]!.reservationId })).rejects.toMatchObject({
      code: 'PAYMENT_EVENT_REUSED',
    });
    expect(await ledger(sale)).toMatchObject({ byStatus: { created: 2 } });
    expect(await receivePayment(deps, first)).toBe('paid');
  });
});
