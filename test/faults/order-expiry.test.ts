import { afterEach, describe, expect, it } from 'vitest';
import { createHttpClient, paymentEventRequest, purchaseBurst, startFaultProxy, type FaultProxy } from '@flashsale/harness';
import { startSystem, type System } from '../support/system.ts';
import { until } from '../support/until.ts';

// The expiry's crash points, with real processes: a worker killed between MySQL and Redis, Redis losing
// its data while returns are owed, MySQL away when orders fall due. After each, every unit is counted
// once: units in live orders + remaining = stock.

let system: System | undefined;
let proxy: FaultProxy | undefined;
afterEach(async () => {
  await system?.stop();
  await proxy?.close();
  system = undefined;
  proxy = undefined;
});

const buyers = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label}-${i}`);

/** A sale of `stock` whose units are all in orders awaiting payment, due `windowSeconds` after now. */
async function soldOutSale(system: System, stock: number, windowSeconds = 10): Promise<number> {
  const saleId = await system.createSale({ stock, paymentWindowSeconds: windowSeconds });
  const burst = await purchaseBurst(system.gateways[0]!.url, saleId, buyers('buyer', stock));
  expect(burst.accepted.size).toBe(stock);
  await system.ctx.store.sale(saleId).waitForDrain(60_000);
  return saleId;
}

/** Units in live orders, orders by status and the return rows by state, from MySQL; remaining from Redis. */
async function ledger(system: System, saleId: number) {
  const { ctx } = system;
  const orders = await ctx.prisma.order.groupBy({ by: ['status'], where: { saleId }, _sum: { quantity: true } });
  const returns = await ctx.prisma.stockReturn.groupBy({ by: ['state'], where: { saleId }, _count: { _all: true } });
  const units = (status: string) => orders.find((o) => o.status === status)?._sum.quantity ?? 0;
  return {
    live: units('created') + units('paid'),
    expired: units('expired'),
    remaining: (await ctx.store.sale(saleId).state())?.remaining ?? null,
    returns: Object.fromEntries(returns.map((r) => [r.state, r._count._all])),
  };
}

/** Waits until every order of the sale is past its payBy, so the next expiry pass takes them all at once. */
async function untilAllDue(system: System, saleId: number): Promise<void> {
  const last = await system.ctx.prisma.order.findFirstOrThrow({ where: { saleId }, orderBy: { payBy: 'desc' } });
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, last.payBy.getTime() - Date.now()) + 200));
}

/**
 * A worker whose Redis is reached through a proxy that kills it the moment it sends its first return
 * (the Redis half of an expiry), once every order of the sale is due: its first pass expires them all
 * in MySQL, and dies before Redis hears of it.
 */
async function workerKilledAtItsFirstReturn(system: System, saleId: number): Promise<Promise<unknown>> {
  await untilAllDue(system, saleId);
  let killed: Promise<unknown> | undefined;
  let signal: () => void = () => undefined;
  const killedAt = new Promise<void>((resolve) => (signal = resolve));
  const redisPort = Number(new URL(system.env.REDIS_URL!).port);
  proxy = await startFaultProxy(redisPort, (chunk) => {
    // The return script names the sale's `returned` hash among its keys: nothing else does.
    if (killed === undefined && chunk.includes(':returned')) {
      killed = worker.kill('SIGKILL');
      signal();
    }
    return killed === undefined ? 'forward' : 'drop';
  });
  const worker = await system.addWorker({ REDIS_URL: `redis://127.0.0.1:${proxy.port}` });
  return killedAt.then(() => killed);
}

describe('the expiry at its crash points', () => {
  it('a worker SIGKILLed between the MySQL update and the Redis return: the units come back once, not twice, not never', async () => {
    system = await startSystem({ workers: 1, env: { EXPIRY_SWEEP_MS: '200' } });
    const saleId = await soldOutSale(system, 30);
    // From here only the doomed worker runs the expiry.
    await system.workers[0]!.kill('SIGTERM');
    const killed = await workerKilledAtItsFirstReturn(system, saleId);

    expect(await killed).toBe('SIGKILL');
    // MySQL has the orders expired and the units owed; Redis has not had them back.
    expect(await ledger(system, saleId)).toEqual({ live: 0, expired: 30, remaining: 0, returns: { pending: 30 } });

    await system.addWorker();
    const settled = await until(
      () => ledger(system!, saleId),
      (l) => l.returns.pending === undefined,
      60_000,
    );
    expect(settled).toEqual({ live: 0, expired: 30, remaining: 30, returns: { returned: 30 } });
    // And it stays so: later passes, and a second worker, give nothing more.
    await system.addWorker();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(await ledger(system, saleId)).toEqual(settled);
    const again = await purchaseBurst(system.gateways[0]!.url, saleId, buyers('again', 35));
    expect({ accepted: again.accepted.size, soldOut: again.refused.SOLD_OUT }).toEqual({ accepted: 30, soldOut: 5 });
  });

  it('Redis flushed while returns are owed: the rebuild and the returns together count each unit once', async () => {
    system = await startSystem({ workers: 1, env: { EXPIRY_SWEEP_MS: '200' } });
    const { ctx } = system;
    const saleId = await soldOutSale(system, 20);
    await system.workers[0]!.kill('SIGTERM');
    const killed = await workerKilledAtItsFirstReturn(system, saleId);
    expect(await killed).toBe('SIGKILL');
    expect(await ledger(system, saleId)).toMatchObject({ live: 0, expired: 20, returns: { pending: 20 } });

    // Redis loses everything; the reconciler rebuilds the sale from MySQL, where no order is live.
    await ctx.redis.flushall();
    await until(
      () => ledger(system!, saleId),
      (l) => l.remaining === 20,
      60_000,
    );
    expect(await ledger(system, saleId)).toEqual({ live: 0, expired: 20, remaining: 20, returns: { rebuilt: 20 } });

    // A worker settling returns now finds none owed; the units are on sale once.
    await system.addWorker();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await ledger(system, saleId)).toEqual({ live: 0, expired: 20, remaining: 20, returns: { rebuilt: 20 } });
    const again = await purchaseBurst(system.gateways[0]!.url, saleId, buyers('again', 25));
    expect(again.accepted.size).toBe(20);
  });

  it('MariaDB away while orders fall due: they expire late, never wrongly (a payment made meanwhile stands)', async () => {
    system = await startSystem({ workers: 1, workerDbProxy: true, env: { EXPIRY_SWEEP_MS: '200' } });
    const { ctx } = system;
    const saleId = await soldOutSale(system, 10);
    system.dbProxy!.cut();
    // Past every payBy, with the workers' MySQL away: nothing expires, nothing goes back on sale.
    await untilAllDue(system, saleId);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await ledger(system, saleId)).toEqual({ live: 10, expired: 0, remaining: 0, returns: {} });
    // A payment that lands late (the gateway reaches MySQL) pays its order: it was never expired.
    const paid = await ctx.prisma.order.findFirstOrThrow({ where: { saleId } });
    const http = createHttpClient(system.gateways[0]!.url, 1);
    const event = paymentEventRequest(ctx.config.PAYMENT_WEBHOOK_SECRET, {
      id: 'evt_during_outage',
      reservationId: paid.reservationId,
      amountCents: 100,
    });
    expect((await http.send('POST', '/api/payments/events', event)).body).toEqual({ status: 'paid' });
    http.close();

    system.dbProxy!.restore();
    // Settled: the units back in Redis, and then their rows marked returned.
    const after = await until(
      () => ledger(system!, saleId),
      (l) => l.remaining === 9 && l.returns.pending === undefined,
      60_000,
    );
    expect(after).toEqual({ live: 1, expired: 9, remaining: 9, returns: { returned: 9 } });
    expect((await ctx.prisma.order.findUniqueOrThrow({ where: { id: paid.id } })).status).toBe('paid');
  });
});
