import { createConnection, type Connection } from 'mariadb';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpClient, paymentEventRequest, purchaseBurst } from '@flashsale/harness';
import { poolConfigFromUrl } from '@flashsale/order-store';
import { startSystem, type System } from '../support/system.ts';
import { until } from '../support/until.ts';

// A payment that reached the gateway before payBy stands, even when MySQL could not take it then: with
// `LOCK TABLES orders WRITE` held for 15 s across payBy, events sent 6 s before it are answered 503
// (MySQL's statement limit); the orders must end paid whenever the provider delivers again, at the
// unlock, after the expiry has run, or never. Before the arrival was recorded in Redis, the expiry,
// running once the lock went, expired every one of them and each retry became a refund due.

let system: System | undefined;
let locker: Connection | undefined;
afterEach(async () => {
  await locker?.end().catch(() => undefined);
  await system?.stop();
  locker = undefined;
  system = undefined;
});

const LOCK_MS = 15_000;

describe('a payment sent before payBy while the orders table is locked', () => {
  it("ends paid whatever the provider's retry timing; orders nobody paid expire", async () => {
    system = await startSystem({ workers: 1, reconciler: false, env: { EXPIRY_SWEEP_MS: '200', DB_STATEMENT_TIMEOUT_MS: '2000' } });
    const { ctx } = system;
    // A window long enough for the burst and the drain on a busy machine to end well before payBy.
    const saleId = await system.createSale({ stock: 30, paymentWindowSeconds: 30 });
    const burst = await purchaseBurst(
      system.gateways[0]!.url,
      saleId,
      Array.from({ length: 30 }, (_, i) => `payer-${i}`),
    );
    expect(burst.accepted.size).toBe(30);
    await ctx.store.sale(saleId).waitForDrain(30_000);
    const orders = await ctx.prisma.order.findMany({ where: { saleId }, orderBy: { payBy: 'asc' } });
    const firstPayBy = orders[0]!.payBy.getTime();
    // Three providers' habits, 7 + 7 + 6 orders; the last 10 orders nobody pays.
    const [atUnlock, afterExpiry, never, unpaid] = [orders.slice(0, 7), orders.slice(7, 14), orders.slice(14, 20), orders.slice(20)];
    const events = new Map(
      orders.slice(0, 20).map((o) => [
        o.reservationId,
        paymentEventRequest(ctx.config.PAYMENT_WEBHOOK_SECRET, {
          id: `evt_lock_${o.reservationId}`,
          reservationId: o.reservationId,
          amountCents: 1999,
        }),
      ]),
    );
    const http = createHttpClient(system.gateways[0]!.url, 32);
    const deliver = (reservationId: string) => http.send('POST', '/api/payments/events', events.get(reservationId));

    // 12 s before payBy (or at once, should the burst and the drain have taken longer): time for the 20
    // deliveries to be answered 503 before payBy, on a busy machine too.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, firstPayBy - 12_000 - Date.now())));
    const { database, ...server } = poolConfigFromUrl(ctx.config.DATABASE_URL);
    locker = await createConnection({ ...server, database });
    await locker.query('LOCK TABLES orders WRITE');
    const lockedAt = Date.now();
    const during = await Promise.all(orders.slice(0, 20).map((o) => deliver(o.reservationId)));
    expect(Date.now()).toBeLessThan(firstPayBy);
    expect(during.map((r) => r.status)).toEqual(Array(20).fill(503));
    // Each arrival is on record in Redis, stamped before payBy on Redis's clock.
    const held = await ctx.store.sale(saleId).heldPayments();
    expect(held.payments).toHaveLength(20);
    expect(held.payments.every((p) => p.receivedAtMs < firstPayBy)).toBe(true);

    // Held 15 s, and past the last order's payBy whatever the burst's length: every order falls due locked.
    const lastPayBy = orders.at(-1)!.payBy.getTime();
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, lockedAt + LOCK_MS - Date.now(), lastPayBy + 1000 - Date.now())));
    expect(Date.now()).toBeGreaterThan(orders.at(-1)!.payBy.getTime());
    await locker.query('UNLOCK TABLES');
    const retriedAtUnlock = await Promise.all(atUnlock.map((o) => deliver(o.reservationId)));
    // The expiry has been through every due order once none is left awaiting payment.
    await until(
      () => ctx.prisma.order.count({ where: { saleId, status: 'created' } }),
      (n) => n === 0,
      60_000,
    );
    const retriedAfterExpiry = await Promise.all(afterExpiry.map((o) => deliver(o.reservationId)));
    http.close();

    expect([...retriedAtUnlock, ...retriedAfterExpiry].map((r) => [r.status, r.body])).toEqual(Array(14).fill([200, { status: 'paid' }]));
    const statuses = await ctx.prisma.order.findMany({ where: { saleId }, select: { reservationId: true, status: true } });
    const statusOf = (group: typeof orders) => group.map((o) => statuses.find((s) => s.reservationId === o.reservationId)!.status);
    expect({ atUnlock: statusOf(atUnlock), afterExpiry: statusOf(afterExpiry), never: statusOf(never), unpaid: statusOf(unpaid) }).toEqual({
      atUnlock: Array(7).fill('paid'),
      afterExpiry: Array(7).fill('paid'),
      never: Array(6).fill('paid'),
      unpaid: Array(10).fill('expired'),
    });
    const outcomes = await ctx.prisma.paymentEvent.groupBy({ by: ['outcome'], where: { saleId }, _count: { _all: true } });
    expect(Object.fromEntries(outcomes.map((o) => [o.outcome, o._count._all]))).toEqual({ paid: 20 });
    // The ledger: the 10 expired units back on sale, once; nothing held in Redis any more.
    expect(
      await until(
        async () => (await ctx.store.sale(saleId).state())?.remaining,
        (r) => r === 10,
        60_000,
      ),
    ).toBe(10);
    expect((await ctx.store.sale(saleId).heldPayments()).payments).toEqual([]);
  });
});
