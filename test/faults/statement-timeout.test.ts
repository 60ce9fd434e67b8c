import { afterEach, describe, expect, it } from 'vitest';
import { createConnection, type Connection } from 'mariadb';
import { buyerToken, createHttpClient, ledgerOf, type HttpResult } from '@flashsale/harness';
import { poolConfigFromUrl } from '@flashsale/order-store';
import { startSystem, type System } from '../support/system.ts';
import { until } from '../support/until.ts';

// A table lock held elsewhere (an operator's LOCK TABLES, a long ALTER) must not hold a request: the
// gateway's statements carry MariaDB's max_statement_time (DB_STATEMENT_TIMEOUT_MS), lock waits
// included. The request deadline is set far above it here, so only the statement limit can answer fast:
// an answer before half the request deadline is the statement limit's, however busy the machine.

const STATEMENT_TIMEOUT_MS = 500;
const REQUEST_DEADLINE_MS = 60_000;

let system: System | undefined;
let locker: Connection | undefined;
afterEach(async () => {
  await locker?.end().catch(() => locker?.destroy());
  locker = undefined;
  await system?.stop();
  system = undefined;
});

function expectFastUnavailable(res: HttpResult): void {
  expect({ status: res.status, code: res.body.code, retryAfter: res.headers['retry-after'] }).toEqual({
    status: 503,
    code: 'SERVICE_UNAVAILABLE',
    retryAfter: '1',
  });
  expect(res.latencyMs).toBeLessThan(REQUEST_DEADLINE_MS / 2);
}

/** A sale with one order written, a connection of the test's own to lock tables with, and the requests to make. */
async function saleWithAnOrder() {
  system = await startSystem({
    workers: 1,
    reconciler: false,
    env: { DB_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS), REQUEST_DEADLINE_MS: String(REQUEST_DEADLINE_MS) },
  });
  const { ctx, gateways } = system;
  const saleId = await system.createSale({ stock: 10 });
  const client = createHttpClient(gateways[0]!.url, 16);
  const token = buyerToken('buyer-1');
  const bought = await client.send('POST', `/api/sales/${saleId}/purchase`, { headers: { authorization: `Bearer ${token}` } });
  expect(bought.status).toBe(202);
  const reservationId = bought.body.reservationId as string;
  await ctx.store.sale(saleId).waitForDrain();
  const ledger = await ledgerOf(ctx.store, ctx.prisma, saleId, new Map([[reservationId, { userId: 'buyer-1', quantity: 1 }]]));
  expect({ lost: ledger.lost, duplicated: ledger.duplicated, unexpected: ledger.unexpected, unitsInDb: ledger.unitsInDb }).toEqual({
    lost: [],
    duplicated: [],
    unexpected: [],
    unitsInDb: 1,
  });
  // The order is written: the worker goes, so that the only statements waiting for a lock below are
  // the gateway's (the worker's own, such as its expiry sweep, wait for a lock as long as it lasts).
  expect(await system.workers[0]!.kill('SIGTERM')).toBe(0);

  const { database, ...server } = poolConfigFromUrl(ctx.config.DATABASE_URL);
  locker = await createConnection({ ...server, database });
  const admin = { authorization: `Bearer ${ctx.config.ADMIN_TOKEN}` };
  const requests = {
    stats: () => client.send('GET', `/api/admin/sales/${saleId}/stats`, { headers: admin }),
    reservation: () => client.send('GET', `/api/reservations/${reservationId}`, { headers: { authorization: `Bearer ${token}` } }),
    sale: () => client.send('GET', `/api/sales/${saleId}`),
    create: (name: string) =>
      client.send('POST', '/api/admin/sales', {
        headers: admin,
        body: {
          name,
          stock: 5,
          startsAt: new Date(Date.now() + 60_000).toISOString(),
          endsAt: new Date(Date.now() + 3_600_000).toISOString(),
        },
      }),
  };
  /** Statements of the gateway (or anyone) on this database still waiting for a table lock. */
  const waitingForLock = async () => {
    const [row] = await ctx.prisma.$queryRawUnsafe<{ n: number | bigint }[]>(
      "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE DB = ? AND STATE LIKE 'Waiting for table%'",
      database,
    );
    return Number(row!.n);
  };
  return { ctx: system.ctx, saleId, reservationId, client, requests, waitingForLock, locker };
}

describe('a table locked by another connection (LOCK TABLES ... WRITE), DB_STATEMENT_TIMEOUT_MS 500', () => {
  it('orders locked: a written reservation answers 503 with Retry-After within the statement limit, and 200 once unlocked; the stats, which read counters and not the orders, answer 200 throughout', async () => {
    const { saleId, reservationId, client, requests, waitingForLock, locker } = await saleWithAnOrder();
    await locker.query('LOCK TABLES orders WRITE');
    const [stats, reservation] = await Promise.all([requests.stats(), requests.reservation()]);
    expect({ status: stats.status, ordersInDb: stats.body.ordersInDb, unitsInDb: stats.body.unitsInDb }).toEqual({
      status: 200,
      ordersInDb: 1,
      unitsInDb: 1,
    });
    expectFastUnavailable(reservation);
    // The statements were ended by the server, not merely abandoned by the request: no connection of
    // the gateway's pool is left waiting for the lock.
    await until(waitingForLock, (n) => n === 0, 60_000);

    await locker.query('UNLOCK TABLES');
    const [statsAfter, reservationAfter] = await Promise.all([requests.stats(), requests.reservation()]);
    client.close();
    expect({
      status: statsAfter.status,
      ordersInDb: statsAfter.body.ordersInDb,
      unitsInDb: statsAfter.body.unitsInDb,
      remaining: statsAfter.body.remaining,
      consistent: statsAfter.body.consistent,
    }).toEqual({
      status: 200,
      ordersInDb: 1,
      unitsInDb: 1,
      remaining: 9,
      consistent: true,
    });
    expect({ status: reservationAfter.status, body: reservationAfter.body }).toEqual({
      status: 200,
      body: { reservationId, saleId, quantity: 1, status: 'created', orderId: reservationId, payBy: expect.any(String) },
    });
    console.log(`orders locked: stats 200 in ${stats.latencyMs.toFixed(0)} ms, reservation 503 in ${reservation.latencyMs.toFixed(0)} ms`);
  });

  it('sales locked: the stats and a sale create answer 503 within the statement limit and create nothing; reads that do not touch sales answer 200', async () => {
    const { ctx, client, requests, waitingForLock, locker } = await saleWithAnOrder();
    await locker.query('LOCK TABLES sales WRITE');
    const [stats, created, reservation, sale] = await Promise.all([
      requests.stats(),
      requests.create('during the lock'),
      requests.reservation(),
      requests.sale(),
    ]);
    expectFastUnavailable(stats);
    expectFastUnavailable(created);
    // The order is read from orders alone, the sale from Redis: neither waits for the lock.
    expect([reservation.status, reservation.body.status, sale.status, sale.body.remaining]).toEqual([200, 'created', 200, 9]);
    await until(waitingForLock, (n) => n === 0, 60_000);

    await locker.query('UNLOCK TABLES');
    const statsAfter = await requests.stats();
    client.close();
    expect({ status: statsAfter.status, ordersInDb: statsAfter.body.ordersInDb, consistent: statsAfter.body.consistent }).toEqual({
      status: 200,
      ordersInDb: 1,
      consistent: true,
    });
    // The create that timed out left no sale that will ever go live.
    expect(await ctx.prisma.sale.count({ where: { name: 'during the lock', publishState: { not: 'abandoned' } } })).toBe(0);
    console.log(`sales locked: stats 503 in ${stats.latencyMs.toFixed(0)} ms, create 503 in ${created.latencyMs.toFixed(0)} ms`);
  });
});
