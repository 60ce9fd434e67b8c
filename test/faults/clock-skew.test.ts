import { afterEach, describe, expect, it } from 'vitest';
import { faultLedgerOf, purchaseBurst, skewedClockEnv } from '@flashsale/harness';
import { startSystem, type System } from '../support/system.ts';
import { until } from '../support/until.ts';

// Processes whose wall clocks are set wrong (libfaketime), against a MySQL and a Redis whose clocks are
// right. Every comparison of times made by different processes must use MySQL's or Redis's clock; a
// process's own clock may only measure its own intervals.

let system: System | undefined;
afterEach(async () => {
  await system?.stop();
  system = undefined;
});

const buyers = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label}-${i}`);
const HOUR = 3600;

/** Buys `n` units that stay in Redis only (the workers cannot reach MySQL), waits for the checkpoint to see them, then Redis loses everything. */
async function loseReservationsAfterCheckpoint(running: System, saleId: number, n: number) {
  const { ctx, gateways, dbProxy } = running;
  const before = await ctx.prisma.order.count({ where: { saleId } });
  dbProxy!.cut();
  const burst = await purchaseBurst(gateways[0]!.url, saleId, buyers('skew', n));
  expect(burst.accepted.size).toBe(n);
  // Watched despite the skew: the reconciler records what Redis accepted.
  await until(
    () => ctx.prisma.sale.findUniqueOrThrow({ where: { id: saleId } }),
    (s) => s.checkpointReservations === before + n,
    60_000,
  );
  await ctx.redis.flushall();
  return burst;
}

describe('clocks of the processes set wrong', () => {
  it('a gateway a minute ahead and a reconciler a minute behind: the sale is watched after the publish grace, and a loss is counted in full', async () => {
    system = await startSystem({
      workerDbProxy: true,
      env: { RECONCILER_PUBLISH_GRACE_MS: '2000' },
      gatewayEnv: skewedClockEnv(60),
      reconcilerEnv: skewedClockEnv(-60),
    });
    const { ctx } = system;
    const saleId = await system.createSale({ stock: 1000 });

    const burst = await loseReservationsAfterCheckpoint(system, saleId, 400);

    await until(
      () => ctx.prisma.sale.findUniqueOrThrow({ where: { id: saleId } }),
      (s) => s.lostReservations > 0,
      60_000,
    );
    system.dbProxy!.restore();
    await ctx.store.sale(saleId).waitForDrain(60_000);
    const ledger = await faultLedgerOf(ctx.store, ctx.prisma, saleId, burst.accepted, new Set());
    expect(ledger.lost.length).toBe(400);
    expect(await ctx.prisma.sale.findUniqueOrThrow({ where: { id: saleId } })).toMatchObject({
      lostReservations: 400,
      lostUnits: 400,
      soldUnits: 0,
    });
    expect({ duplicated: ledger.duplicated, unexpected: ledger.unexpected, oversold: ledger.oversold }).toEqual({
      duplicated: [],
      unexpected: [],
      oversold: 0,
    });
  });

  it('a reconciler two hours ahead keeps watching, auditing and rebuilding a sale that ends in half an hour', async () => {
    system = await startSystem({ workerDbProxy: true, reconcilerEnv: skewedClockEnv(2 * HOUR) });
    const { ctx } = system;
    const saleId = await system.createSale({ stock: 500, endsInMs: 30 * 60_000 });
    const audited = await purchaseBurst(system.gateways[0]!.url, saleId, buyers('audited', 10));
    expect(audited.accepted.size).toBe(10);
    await ctx.store.sale(saleId).waitForDrain();
    // The audit runs for it: its report lands in Redis with a balanced ledger.
    const audit = await until(
      () => ctx.redis.hgetall(`${ctx.config.REDIS_PREFIX}:{s${saleId}}:audit`),
      (a) => a.unitsInDb === '10',
      60_000,
    );
    expect(audit.drift).toBe('0');

    const lost = await loseReservationsAfterCheckpoint(system, saleId, 200);

    // Rebuilt (buyers get 202 again rather than 503 for good), and the loss counted.
    const meta = await until(
      () => ctx.redis.hgetall(`${ctx.config.REDIS_PREFIX}:{s${saleId}}:meta`),
      (m) => m.paused === '0',
      60_000,
    );
    expect(meta.remaining).toBe('490');
    expect(await ctx.prisma.sale.findUniqueOrThrow({ where: { id: saleId } })).toMatchObject({ lostReservations: 200, lostUnits: 200 });
    system.dbProxy!.restore();
    const after = await purchaseBurst(system.gateways[0]!.url, saleId, buyers('after', 5));
    expect(after.accepted.size).toBe(5);
    await ctx.store.sale(saleId).waitForDrain(60_000);
    const ledger = await faultLedgerOf(
      ctx.store,
      ctx.prisma,
      saleId,
      new Map([...audited.accepted, ...lost.accepted, ...after.accepted]),
      new Set(),
    );
    expect(ledger.lost.sort()).toEqual([...lost.accepted.keys()].sort());
    expect({
      duplicated: ledger.duplicated,
      unexpected: ledger.unexpected,
      oversold: ledger.oversold,
      unitsInDb: ledger.unitsInDb,
    }).toEqual({ duplicated: [], unexpected: [], oversold: 0, unitsInDb: 15 });
  });

  it('a gateway two hours ahead answers 503 SALE_PAUSED, not 404, for a live sale whose Redis state is being rebuilt', async () => {
    system = await startSystem({ reconciler: false, gatewayEnv: skewedClockEnv(2 * HOUR) });
    const { ctx } = system;
    const saleId = await system.createSale({ stock: 10, endsInMs: 30 * 60_000 });
    await ctx.redis.del(`${ctx.config.REDIS_PREFIX}:{s${saleId}}:meta`);
    const purchase = async () => (await purchaseBurst(system!.gateways[0]!.url, saleId, ['ann'], { tokenTtlSeconds: 3 * 3600 })).refused;

    // The gateway's list of live sales is refreshed in the background (every 2 s): until it holds the
    // sale, the gateway cannot tell it from an unknown one (404, nothing written); after, it must never.
    await expect.poll(purchase, { interval: 100, timeout: 60_000 }).not.toEqual({ SALE_NOT_FOUND: 1 });

    expect(await purchase()).toEqual({ SALE_PAUSED: 1 });
  });
});
