import { afterEach, describe, expect, it } from 'vitest';
import { faultLedgerOf, mergeBursts, purchaseBurst } from '@flashsale/harness';
import { startSystem, type System } from '../support/system.ts';
import { until } from '../support/until.ts';

let system: System | undefined;
afterEach(async () => {
  await system?.stop();
  system = undefined;
});

const buyers = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label}-${i}`);

describe('Redis loses everything mid-sale (no persistence)', () => {
  it('keeps the orders written, rebuilds after the loss, counts the lost reservations, and sells exactly the stock', async () => {
    system = await startSystem({ workers: 1, workerDbProxy: true });
    const { ctx, gateways, dbProxy } = system;
    const prefix = ctx.config.REDIS_PREFIX;
    const saleId = await system.createSale({ stock: 300 });

    // 50 reservations become orders.
    const written = await purchaseBurst(gateways[0]!.url, saleId, buyers('early', 50));
    expect(written.accepted.size).toBe(50);
    await ctx.store.sale(saleId).waitForDrain();

    // 100 more are accepted while the worker cannot reach MySQL: they are in flight, in Redis only.
    dbProxy!.cut();
    const inFlight = await purchaseBurst(gateways[0]!.url, saleId, buyers('in-flight', 100));
    expect(inFlight.accepted.size).toBe(100);
    // The reconciler's checkpoint has seen all 150 (what a loss can be measured against).
    await until(
      () => ctx.prisma.sale.findUniqueOrThrow({ where: { id: saleId } }),
      (s) => s.checkpointReservations === 150,
    );

    await ctx.redis.flushall();
    // Detection, pause, drain (the stream is gone: nothing left to wait for), rebuild, resume.
    const rebuilt = await until(
      () => ctx.redis.hgetall(`${prefix}:{s${saleId}}:meta`),
      (m) => m.paused === '0',
    );
    expect(rebuilt.remaining).toBe('250');
    dbProxy!.restore();

    // Selling goes on from the rebuilt state until exactly the stock is sold.
    const after = await purchaseBurst(gateways[0]!.url, saleId, buyers('after', 400));
    expect(after.accepted.size).toBe(250);
    expect(after.refused).toEqual({ SOLD_OUT: 150 });
    await ctx.store.sale(saleId).waitForDrain(60_000);

    const all = mergeBursts(written, inFlight, after);
    const ledger = await faultLedgerOf(ctx.store, ctx.prisma, saleId, all.accepted, new Set([...all.unknown, ...all.failed]));
    // Exactly the reservations that were only in Redis are lost, and the reconciler says so.
    expect(ledger.lost.sort()).toEqual([...inFlight.accepted.keys()].sort());
    expect(await ctx.prisma.sale.findUniqueOrThrow({ where: { id: saleId } })).toMatchObject({
      lostReservations: 100,
      lostUnits: 100,
      soldUnits: 300,
    });
    expect({ duplicated: ledger.duplicated, unexpected: ledger.unexpected, oversold: ledger.oversold }).toEqual({
      duplicated: [],
      unexpected: [],
      oversold: 0,
    });
    expect({ unitsInDb: ledger.unitsInDb, remaining: ledger.remaining }).toEqual({ unitsInDb: 300, remaining: 0 });
    // The worker's batch of the lost state, retried once MySQL was back, was refused, not written.
    const dead = (await ctx.redis.xrange(`${prefix}:{s${saleId}}:dead`, '-', '+')) as [string, string[]][];
    const deadLetters = dead.map(([, fields]) => ({ reason: fields[fields.indexOf('reason') + 1], r: fields[fields.indexOf('r') + 1]! }));
    expect(deadLetters.length).toBeGreaterThan(0);
    for (const letter of deadLetters) {
      expect(letter.reason).toBe('STALE_GENERATION');
      expect(inFlight.accepted.has(letter.r)).toBe(true);
    }
    await system.reconciler!.waitForLog('reconcile: reservations answered 202 were lost with Redis data (at least this many)');
  });
});
