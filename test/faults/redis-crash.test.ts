import { afterEach, describe, expect, it } from 'vitest';
import { faultLedgerOf, purchaseBurst } from '@flashsale/harness';
import { startSystem, type System } from '../support/system.ts';

let system: System | undefined;
afterEach(async () => {
  await system?.stop();
  system = undefined;
});

describe('redis-server SIGKILLed during a burst, with appendfsync always', () => {
  it('restarts from its AOF with every accepted reservation, and every 202 becomes an order', async () => {
    system = await startSystem({ appendfsync: 'always', workers: 2 });
    const { ctx, gateways, redisServer } = system;
    const saleId = await system.createSale({ stock: 400 });

    let killed: Promise<void> | undefined;
    const burst = await purchaseBurst(
      gateways[0]!.url,
      saleId,
      Array.from({ length: 600 }, (_, i) => `buyer-${i}`),
      {
        connections: 16,
        onAnswer: (done) => {
          // The crash point: mid-burst, with reservations being accepted and written.
          if (done === 150)
            killed = redisServer
              .kill('SIGKILL')
              .then(() => new Promise((r) => setTimeout(r, 300)))
              .then(() => redisServer.start());
        },
      },
    );
    await killed;
    // The first 150 answers were 202s, before the kill. After the restart the reconciler rebuilds the sale
    // in the server's new history of writes, pausing it (503 SALE_PAUSED): the rest of the burst may get
    // no 202 at all, and what it got is judged by the ledger below.
    expect(burst.accepted.size).toBeGreaterThanOrEqual(150);
    await ctx.store.sale(saleId).waitForDrain(60_000);

    const uncertain = new Set([...burst.unknown, ...burst.failed]);
    const ledger = await faultLedgerOf(ctx.store, ctx.prisma, saleId, burst.accepted, uncertain);
    expect({ lost: ledger.lost, duplicated: ledger.duplicated, unexpected: ledger.unexpected, oversold: ledger.oversold }).toEqual({
      lost: [],
      duplicated: [],
      unexpected: [],
      oversold: 0,
    });
    expect(ledger.unitsInDb + ledger.remaining).toBe(400);
    // Nothing was lost, and the reconciler did not mistake the restart for a loss.
    expect(await ctx.prisma.sale.findUniqueOrThrow({ where: { id: saleId } })).toMatchObject({
      lostReservations: 0,
      soldUnits: ledger.unitsInDb,
    });
    console.log(
      `redis crash: ${burst.accepted.size} accepted, ${burst.failed.size} answered 5xx, ${burst.unknown.size} unanswered; of the uncertain, ${ledger.unknownBecameOrders} became orders`,
    );
  });
});
